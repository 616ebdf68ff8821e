/**
 * What the page keeps on the device until the service has it: the draft of
 * each question, each submitted answer waiting to be sent (or refused, with
 * why), and a completion waiting to be sent. localStorage, so that a reload,
 * a closed tab or a browser restart loses nothing; one key per question of a
 * session of a user, one per session for its completion:
 *
 *   practice:v1:<user>:<session>:q:<question>   a QuestionRecord
 *   practice:v1:<user>:<session>:session        a SessionRecord
 */

/** Where an answer is on its way to the service. */
export type AnswerState = "saved" | "sending" | "sent" | "refused";

export interface QuestionRecord {
  quizId: string;
  /** What the field holds and was not submitted yet. */
  draft?: string;
  /** The submitted answer, until the service has it. */
  answer?: string;
  state?: AnswerState;
  /** Why the service refused it (state "refused"). */
  reason?: string;
  /** The answer the service holds for the question, when it refused a different one. */
  storedAnswer?: string;
  /** Send order: answers go out in the order they were given. */
  seq?: number;
  updatedAt: number;
}

export interface SessionRecord {
  quizId: string;
  /** Completion asked for; sent once every answer before it is settled. */
  complete?: { seq: number; state: "saved" | "sending" | "refused"; reason?: string };
  updatedAt: number;
}

/** One thing to send: an answer or a completion, in `seq` order. */
export type Pending =
  | {
      kind: "answer";
      sessionId: string;
      questionId: string;
      quizId: string;
      answer: string;
      seq: number;
    }
  | { kind: "complete"; sessionId: string; quizId: string; seq: number };

const PREFIX = "practice:v1:";
/** Records untouched this long are dropped: a session expires after 7 days. */
const KEEP_MS = 8 * 86_400_000;

export class DeviceStore {
  private readonly prefix: string;

  constructor(
    user: string,
    private readonly storage: Storage = window.localStorage,
  ) {
    this.prefix = `${PREFIX}${encodeURIComponent(user)}:`;
  }

  private questionKey(sessionId: string, questionId: string) {
    return `${this.prefix}${sessionId}:q:${questionId}`;
  }

  private sessionKey(sessionId: string) {
    return `${this.prefix}${sessionId}:session`;
  }

  private read<T>(key: string): T | undefined {
    try {
      const text = this.storage.getItem(key);
      return text === null ? undefined : (JSON.parse(text) as T);
    } catch {
      return undefined;
    }
  }

  private write(key: string, value: object) {
    this.storage.setItem(key, JSON.stringify(value));
  }

  question(sessionId: string, questionId: string): QuestionRecord | undefined {
    return this.read(this.questionKey(sessionId, questionId));
  }

  session(sessionId: string): SessionRecord | undefined {
    return this.read(this.sessionKey(sessionId));
  }

  /** Changes a question's record (made if missing); `undefined` fields are removed. */
  updateQuestion(
    sessionId: string,
    questionId: string,
    quizId: string,
    change: Partial<QuestionRecord>,
  ): QuestionRecord {
    const next: QuestionRecord = {
      ...(this.question(sessionId, questionId) ?? { quizId }),
      ...change,
      updatedAt: Date.now(),
    };
    for (const [k, v] of Object.entries(next)) {
      if (v === undefined) delete (next as unknown as Record<string, unknown>)[k];
    }
    this.write(this.questionKey(sessionId, questionId), next);
    return next;
  }

  updateSession(sessionId: string, quizId: string, change: Partial<SessionRecord>): SessionRecord {
    const next: SessionRecord = {
      ...(this.session(sessionId) ?? { quizId }),
      ...change,
      updatedAt: Date.now(),
    };
    if (next.complete === undefined) delete next.complete;
    this.write(this.sessionKey(sessionId), next);
    return next;
  }

  removeQuestion(sessionId: string, questionId: string) {
    this.storage.removeItem(this.questionKey(sessionId, questionId));
  }

  /** Forgets a session: the service has all of it (it is completed and shown). */
  forgetSession(sessionId: string) {
    for (const key of this.keys()) {
      if (key.startsWith(`${this.prefix}${sessionId}:`)) this.storage.removeItem(key);
    }
  }

  /** A number above every `seq` given so far, for the next thing to send. */
  nextSeq(): number {
    let max = 0;
    for (const p of this.pending()) max = Math.max(max, p.seq);
    return Math.max(max + 1, Date.now());
  }

  /**
   * Everything waiting to be sent, oldest first (what was being sent when the
   * tab closed included). A completion comes after its session's answers.
   */
  pending(): Pending[] {
    const out: Pending[] = [];
    for (const key of this.keys()) {
      const rest = key.slice(this.prefix.length);
      const [sessionId = "", kind, questionId = ""] = rest.split(":");
      if (kind === "q") {
        const r = this.read<QuestionRecord>(key);
        if (
          r?.answer !== undefined &&
          r.seq !== undefined &&
          (r.state === "saved" || r.state === "sending")
        ) {
          out.push({
            kind: "answer",
            sessionId,
            questionId,
            quizId: r.quizId,
            answer: r.answer,
            seq: r.seq,
          });
        }
      } else if (kind === "session") {
        const r = this.read<SessionRecord>(key);
        if (r?.complete && r.complete.state !== "refused") {
          out.push({ kind: "complete", sessionId, quizId: r.quizId, seq: r.complete.seq });
        }
      }
    }
    return out.sort(
      (a, b) => a.seq - b.seq || (a.kind === "complete" ? 1 : 0) - (b.kind === "complete" ? 1 : 0),
    );
  }

  /** Sessions of `quizId` with something on this device still to send. */
  pendingSessions(quizId: string): string[] {
    return [
      ...new Set(
        this.pending()
          .filter((p) => p.quizId === quizId)
          .map((p) => p.sessionId),
      ),
    ];
  }

  /** Drops records untouched for longer than a session can live. */
  sweep(now = Date.now()) {
    for (const key of this.keys()) {
      const r = this.read<{ updatedAt?: number }>(key);
      if (!r || typeof r.updatedAt !== "number" || now - r.updatedAt > KEEP_MS) {
        this.storage.removeItem(key);
      }
    }
  }

  private keys(): string[] {
    const keys: string[] = [];
    for (let i = 0; i < this.storage.length; i++) {
      const key = this.storage.key(i);
      if (key?.startsWith(this.prefix)) keys.push(key);
    }
    return keys;
  }
}
