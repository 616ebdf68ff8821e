import { request } from "node:http";
import { create } from "@bufbuild/protobuf";
import { SubmitAnswerRequestSchema } from "../../gen/practice/v1/practice_session_service_pb.js";
import { type HttpList, rpcCalls } from "./list-calls.js";

export const SUBMIT = "/practice.v1.PracticeSessionService/SubmitAnswer";

/** An answer the session holds: sending it again is a retry (200, nothing written). */
export interface StoredAnswer {
  sessionId: string;
  questionId: string;
  userAnswer: string;
}

/**
 * The first stored answer of the caller's session in progress on `quizId` (RESUME_USER's in
 * bench/lib/data.ts holds five), read with a REST start, which resumes it.
 */
export function storedAnswer(port: number, quizId: string, token: string): Promise<StoredAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: `/quizzes/${quizId}/sessions`,
        headers: { authorization: `Bearer ${token}` },
      },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => {
          text += c.toString("utf8");
        });
        res.on("end", () => {
          const session = JSON.parse(text) as {
            id: string;
            answers: { question_id: string; user_answer: string }[];
          };
          const [first] = session.answers;
          if (res.statusCode !== 200 || first === undefined) {
            reject(new Error(`no session with answers to resume: ${res.statusCode} ${text}`));
            return;
          }
          resolve({
            sessionId: session.id,
            questionId: first.question_id,
            userAnswer: first.user_answer,
          });
        });
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/** SubmitAnswer of `answer` again over REST, Connect JSON and gRPC (its encoded message). */
export function answerCalls(answer: StoredAnswer) {
  const rest: HttpList = {
    method: "POST",
    path: `/sessions/${answer.sessionId}/answers`,
    expect: 200,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ question_id: answer.questionId, user_answer: answer.userAnswer }),
  };
  const message = create(SubmitAnswerRequestSchema, answer);
  return { rest, ...rpcCalls(SUBMIT, SubmitAnswerRequestSchema, message) };
}
