/**
 * Checks before the timed runs that every transport answers what the
 * bench assumes (a full first page, a resume with its answers, a quiz of 10
 * questions), so that a broken target fails the run instead of measuring
 * errors fast.
 */

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  ListSessionsRequestSchema,
  ListSessionsResponseSchema,
  StartSessionRequestSchema,
  StartSessionResponseSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import {
  GetQuizRequestSchema,
  GetQuizResponseSchema,
} from "../../gen/practice/v1/quiz_service_pb.js";
import { type BenchData, RESUME_ANSWERS } from "../lib/data.js";
import { bearer } from "../lib/load.js";
import { LIST_PATH, log, MAIN_LEVEL, QUIZ_PATH, START_PATH } from "./settings.js";
import type { Servers } from "./targets.js";

/** Throws at the first transport whose answer is not the expected one. */
export async function sanityChecks(
  s: Servers,
  data: BenchData,
  mainToken: string,
  resumeToken: string,
): Promise<void> {
  const quizId = data.levelQuiz.get(MAIN_LEVEL) as string;
  const auth = { authorization: `Bearer ${mainToken}` };
  for (const base of [`http://127.0.0.1:${s.svc.port}`, `http://127.0.0.1:${s.bare.port}`]) {
    const res = await fetch(`${base}/quizzes/${quizId}/sessions`, { headers: auth });
    const body = (await res.json()) as { sessions: unknown[]; has_more: boolean };
    if (res.status !== 200 || body.sessions.length !== 20 || !body.has_more) {
      throw new Error(
        `sanity: list on ${base} gave ${res.status} ${JSON.stringify(body).slice(0, 200)}`,
      );
    }
    const r2 = await fetch(`${base}/quizzes/${data.startQuiz}/sessions`, {
      method: "POST",
      headers: { authorization: `Bearer ${resumeToken}` },
    });
    const b2 = (await r2.json()) as { answers: unknown[] };
    if (r2.status !== 200 || b2.answers.length !== RESUME_ANSWERS) {
      throw new Error(`sanity: resume on ${base} gave ${r2.status}`);
    }
  }
  const bytes = await s.grpc.callRaw(
    LIST_PATH,
    Buffer.from(toBinary(ListSessionsRequestSchema, create(ListSessionsRequestSchema, { quizId }))),
    bearer(mainToken),
  );
  const page = fromBinary(ListSessionsResponseSchema, bytes);
  if (page.sessions.length !== 20 || !page.hasMore) throw new Error("sanity: gRPC list");
  const started = fromBinary(
    StartSessionResponseSchema,
    await s.grpc.callRaw(
      START_PATH,
      Buffer.from(
        toBinary(
          StartSessionRequestSchema,
          create(StartSessionRequestSchema, { quizId: data.startQuiz }),
        ),
      ),
      bearer(resumeToken),
    ),
  );
  if (started.created || started.session?.answers.length !== RESUME_ANSWERS) {
    throw new Error("sanity: gRPC resume");
  }
  const quizRes = await fetch(`http://127.0.0.1:${s.svc.port}/quizzes/${data.startQuiz}`, {
    headers: auth,
  });
  const quizBody = (await quizRes.json()) as { questions: unknown[] };
  const grpcQuiz = fromBinary(
    GetQuizResponseSchema,
    await s.grpc.callRaw(
      QUIZ_PATH,
      Buffer.from(
        toBinary(GetQuizRequestSchema, create(GetQuizRequestSchema, { quizId: data.startQuiz })),
      ),
      bearer(mainToken),
    ),
  );
  if (quizRes.status !== 200 || quizBody.questions.length !== 10) {
    throw new Error(`sanity: REST quiz gave ${quizRes.status}`);
  }
  if (grpcQuiz.quiz?.questions.length !== 10) throw new Error("sanity: gRPC quiz");
  log("sanity checks passed (REST, bare, gRPC list, resume and quiz)");
}
