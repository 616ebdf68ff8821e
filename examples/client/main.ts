/**
 * A client of the service from TypeScript: the REST half with fetch, the
 * Connect half with typed clients generated from proto/ (gen/). Prints each
 * call and its answer. It completes the session it answers, so that it
 * leaves no round open: run again, it prints the same. Nothing depends on
 * the current folder.
 *
 *   TOKEN=... npm run example:client                 # from the repository
 *   TOKEN=... npm --prefix /path/to/repo run example:client   # from any folder
 *
 * BASE_URL (default http://127.0.0.1:8080), QUIZ_ID (default 1) and
 * PROTOCOL (connect, grpc or grpc-web; default connect) choose what to call.
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import {
  type PracticeSession,
  PracticeSessionService,
  SessionMode,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import { QuizService } from "../../gen/practice/v1/quiz_service_pb.js";

const baseUrl = process.env.BASE_URL ?? "http://127.0.0.1:8080";
const quizId = process.env.QUIZ_ID ?? "1";
const token = process.env.TOKEN;
const protocol = process.env.PROTOCOL ?? "connect";

function fail(line: string): never {
  console.error(line);
  process.exit(1);
}

if (!token)
  fail("set TOKEN: `npm start` prints one for user demo, or run `npm run token -- alice`");
const authorization = `Bearer ${token}`;

/** The REST half: plain HTTP and JSON, as curl would. */
async function rest() {
  const quizRes = await fetch(`${baseUrl}/quizzes/${quizId}`, { headers: { authorization } });
  const quiz = (await quizRes.json()) as { title?: string; questions?: unknown[]; detail?: string };
  console.log(
    `REST    GET  /quizzes/${quizId} -> ${quizRes.status}`,
    quizRes.ok ? `"${quiz.title}", ${quiz.questions?.length} questions` : quiz.detail,
  );
  const startRes = await fetch(`${baseUrl}/quizzes/${quizId}/sessions`, {
    method: "POST",
    headers: { authorization },
  });
  const session = (await startRes.json()) as { id?: string; detail?: string };
  console.log(
    `REST    POST /quizzes/${quizId}/sessions -> ${startRes.status}`,
    startRes.ok
      ? `${startRes.status === 201 ? "created" : "resumed"} session ${session.id}`
      : session.detail,
  );
}

/** The Connect half: typed calls, over the protocol PROTOCOL names. */
async function connect() {
  const transport =
    protocol === "grpc"
      ? createGrpcTransport({ baseUrl })
      : protocol === "grpc-web"
        ? createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })
        : createConnectTransport({ baseUrl, httpVersion: "1.1" });
  const headers = { authorization };
  const quizzes = createClient(QuizService, transport);
  const sessions = createClient(PracticeSessionService, transport);
  const label = protocol.padEnd(7);

  const { quiz } = await quizzes.getQuiz({ quizId }, { headers });
  console.log(
    `${label} GetQuiz(${quizId}) -> "${quiz?.title}", ${quiz?.questions.length} questions`,
  );
  const { session, created, questions } = await sessions.startSession({ quizId }, { headers });
  console.log(
    `${label} StartSession(${quizId}) -> ${created ? "created" : "resumed"} session ${session?.id}`,
    session ? `(${kind(session)})` : "",
  );
  // A resumed session may hold only some of the quiz (a review, or what was
  // missed): answer its first question still open.
  const answered = new Set(session?.answers.map((a) => a.questionId));
  const openId = questions.find((q) => q.questionId && !answered.has(q.questionId))?.questionId;
  const open = quiz?.questions.find((q) => q.id === openId);
  if (session && open) {
    try {
      const { answer } = await sessions.submitAnswer(
        { sessionId: session.id, questionId: open.id, userAnswer: "Paris" },
        { headers },
      );
      console.log(
        `${label} SubmitAnswer("${open.prompt}", "Paris") -> ${answer?.isCorrect ? "right" : "wrong"}`,
      );
    } catch (err) {
      console.log(`${label} SubmitAnswer("${open.prompt}", "Paris") -> ${describe(err)}`);
    }
  }
  if (session) {
    // Done: no round is left open, and the next run starts a new one.
    const { session: done } = await sessions.completeSession(
      { sessionId: session.id },
      { headers },
    );
    console.log(
      `${label} CompleteSession(${session.id}) -> ${done?.correctAnswers} of ${done?.totalQuestions} right: ${done?.scorePercentage}%`,
    );
  }
  const page = await sessions.listSessions({ quizId, limit: 1 }, { headers });
  const newest = page.sessions[0];
  console.log(
    `${label} ListSessions(${quizId}) -> newest first:`,
    newest
      ? `${newest.id} ${newest.completedAt ? `${newest.scorePercentage}%` : "in progress"}`
      : "none",
  );
  try {
    await quizzes.getQuiz({ quizId: "999999" }, { headers });
  } catch (err) {
    console.log(`${label} GetQuiz(999999) -> ${describe(err)}`);
  }
}

/** A session's mode and size: a resumed review or missed round holds only some of the quiz. */
function kind(session: PracticeSession): string {
  const mode =
    session.mode === SessionMode.REVIEW
      ? "review"
      : session.mode === SessionMode.MISSED
        ? "missed"
        : "full";
  return `${mode}, ${session.totalQuestions} questions`;
}

function describe(err: unknown): string {
  const e = ConnectError.from(err);
  return `${Code[e.code]}: ${e.rawMessage}`;
}

try {
  await rest();
  await connect();
} catch (err) {
  // fetch says "fetch failed" with the reason as its cause; Connect says unavailable.
  const cause = err instanceof TypeError && err.cause instanceof Error ? err.cause : undefined;
  if (cause || ConnectError.from(err).code === Code.Unavailable) {
    const reason = cause ? cause.message : ConnectError.from(err).rawMessage;
    fail(`cannot reach ${baseUrl}: ${reason} (is \`npm start\` running? set BASE_URL)`);
  }
  fail(`call failed: ${describe(err)}`);
}
