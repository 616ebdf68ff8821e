import { Code, ConnectError } from "@connectrpc/connect";
import {
  type Answer,
  AnswerConflictSchema,
  type GetSessionResponse,
  type PracticeSession,
} from "../../../gen/practice/v1/practice_session_service_pb.js";
import type { Clients } from "./client.js";
import type { DeviceStore, Pending } from "./device-store.js";

/** What the sender tells the page as things go out. */
export interface SenderListener {
  sending(item: Pending): void;
  /** The service has the answer (stored now, or already: a replay). */
  answerSent(item: Pending & { kind: "answer" }, answer: Answer, counts: PracticeSession): void;
  /** The service refused the answer; `stored`: the answer it holds instead. */
  answerRefused(item: Pending & { kind: "answer" }, reason: string, stored?: Answer): void;
  /** The session is completed; `review` carries the correct answers. */
  completed(item: Pending & { kind: "complete" }, review: GetSessionResponse): void;
  completeRefused(item: Pending & { kind: "complete" }, reason: string): void;
  /** Nothing could be sent; the next try is in `delayMs`. */
  waiting(delayMs: number, err: unknown): void;
  /** The token is no longer accepted: sending stops until the page has a new one. */
  signedOut(err: unknown): void;
  /** Everything on this device has been sent or refused. */
  idle(): void;
}

/** Backoff between tries: doubles from 1 s up to 20 s, with jitter. */
const FIRST_DELAY_MS = 1000;
const MAX_DELAY_MS = 20_000;
/** A call the service does not answer in this long is tried again later. */
const CALL_TIMEOUT_MS = 15_000;

/** Codes after which sending the same thing again can succeed. */
const TRANSIENT = new Set([
  Code.Unknown,
  Code.Unavailable,
  Code.DeadlineExceeded,
  Code.ResourceExhausted,
  Code.Aborted,
  Code.Internal,
  Code.Canceled,
]);

/**
 * Sends what the device store holds, oldest first, one call at a time, until the
 * service has or refuses each: on start, when back online or visible, after each
 * answer, and on a backoff timer. Sending again is harmless: both calls are retry-safe.
 */
export class Sender {
  private running = false;
  private again = false;
  private attempt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  constructor(
    private readonly store: DeviceStore,
    private readonly clients: Clients,
    private readonly listener: SenderListener,
  ) {}

  /** Starts sending, and listens for the moments worth trying again. */
  start() {
    window.addEventListener("online", () => {
      this.attempt = 0;
      this.kick();
    });
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.kick();
    });
    this.kick();
  }

  /** Tries now (a new answer, or the network is back). */
  kick() {
    if (this.stopped) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.running) {
      this.again = true;
      return;
    }
    void this.run();
  }

  private async run() {
    this.running = true;
    try {
      do {
        this.again = false;
        for (;;) {
          const next = this.store.pending()[0];
          if (!next) {
            this.attempt = 0;
            this.listener.idle();
            break;
          }
          const outcome = await this.send(next);
          if (outcome === "stop") return;
          if (outcome === "retry") {
            this.again = false;
            return;
          }
          this.attempt = 0;
        }
      } while (this.again);
    } finally {
      this.running = false;
    }
  }

  private schedule(err: unknown) {
    const base = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** this.attempt);
    const delay = Math.round(base * (0.75 + Math.random() * 0.25));
    this.attempt++;
    this.listener.waiting(delay, err);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.run();
    }, delay);
  }

  /** One thing: "done" (sent or refused), "retry" (later), "stop" (signed out). */
  private async send(item: Pending): Promise<"done" | "retry" | "stop"> {
    this.listener.sending(item);
    if (item.kind === "answer") {
      this.store.updateQuestion(item.sessionId, item.questionId, item.quizId, { state: "sending" });
    } else {
      this.store.updateSession(item.sessionId, item.quizId, {
        complete: { seq: item.seq, state: "sending" },
      });
    }
    try {
      if (item.kind === "answer") await this.sendAnswer(item);
      else await this.sendCompletion(item);
      return "done";
    } catch (err) {
      const e = ConnectError.from(err);
      if (e.code === Code.Unauthenticated) {
        this.markSaved(item);
        this.stopped = true;
        this.listener.signedOut(err);
        return "stop";
      }
      if (TRANSIENT.has(e.code)) {
        this.markSaved(item);
        this.schedule(err);
        return "retry";
      }
      const reason = refusal(e);
      if (item.kind === "answer") {
        this.store.updateQuestion(item.sessionId, item.questionId, item.quizId, {
          state: "refused",
          reason,
        });
        this.listener.answerRefused(item, reason);
      } else {
        this.store.updateSession(item.sessionId, item.quizId, {
          complete: { seq: item.seq, state: "refused", reason },
        });
        this.listener.completeRefused(item, reason);
      }
      return "done";
    }
  }

  private markSaved(item: Pending) {
    if (item.kind === "answer") {
      this.store.updateQuestion(item.sessionId, item.questionId, item.quizId, { state: "saved" });
    } else {
      this.store.updateSession(item.sessionId, item.quizId, {
        complete: { seq: item.seq, state: "saved" },
      });
    }
  }

  private async sendAnswer(item: Pending & { kind: "answer" }) {
    try {
      const { answer, session } = await this.clients.sessions.submitAnswer(
        { sessionId: item.sessionId, questionId: item.questionId, userAnswer: item.answer },
        { timeoutMs: CALL_TIMEOUT_MS },
      );
      if (!answer || !session) throw new ConnectError("the service sent no answer", Code.Internal);
      this.store.removeQuestion(item.sessionId, item.questionId);
      this.listener.answerSent(item, answer, session);
    } catch (err) {
      const e = ConnectError.from(err);
      if (e.code !== Code.AlreadyExists) throw err;
      // Another answer stands: the error carries it (AnswerConflict); a
      // service without that detail is asked (a transient failure retries).
      let stored = e.findDetails(AnswerConflictSchema)[0]?.storedAnswer;
      if (!stored) {
        const { session } = await this.clients.sessions.getSession(
          { sessionId: item.sessionId },
          { timeoutMs: CALL_TIMEOUT_MS },
        );
        stored = session?.answers.find((a) => a.questionId === item.questionId);
        if (session && stored?.userAnswer === item.answer) {
          // Ours, stored by an earlier try whose response was lost.
          this.store.removeQuestion(item.sessionId, item.questionId);
          this.listener.answerSent(item, stored, session);
          return;
        }
      }
      const reason =
        stored?.userAnswer === undefined
          ? "This question was answered already, elsewhere."
          : `This question was answered already, elsewhere, with “${stored.userAnswer}”: the service keeps the first answer.`;
      this.store.updateQuestion(item.sessionId, item.questionId, item.quizId, {
        state: "refused",
        reason,
        ...(stored?.userAnswer === undefined ? {} : { storedAnswer: stored.userAnswer }),
      });
      this.listener.answerRefused(item, reason, stored);
    }
  }

  private async sendCompletion(item: Pending & { kind: "complete" }) {
    // Completing a completed session again is OK: a try whose reply was lost is harmless.
    await this.clients.sessions.completeSession(
      { sessionId: item.sessionId },
      { timeoutMs: CALL_TIMEOUT_MS },
    );
    // GetSession carries the correct answers once the session is completed.
    const review = await this.clients.sessions.getSession(
      { sessionId: item.sessionId },
      { timeoutMs: CALL_TIMEOUT_MS },
    );
    this.store.forgetSession(item.sessionId);
    this.listener.completed(item, review);
  }
}

/** A refusal as a sentence for the learner. */
function refusal(e: ConnectError): string {
  const message = e.rawMessage || e.message;
  if (e.code === Code.FailedPrecondition && /expired/i.test(message)) {
    return "This session expired: unfinished sessions last 7 days.";
  }
  if (e.code === Code.FailedPrecondition && /completed/i.test(message)) {
    return "This session was completed before this reached the service.";
  }
  if (e.code === Code.NotFound) return "This session no longer exists on the service.";
  const text = `${message.charAt(0).toUpperCase()}${message.slice(1)}`;
  return /[.!?]$/.test(text) ? text : `${text}.`;
}
