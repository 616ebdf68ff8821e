import {
  type PracticeSession,
  SessionStatus,
  type SnapshotQuestion,
} from "../../../gen/practice/v1/practice_session_service_pb.js";
import type { Clients } from "./client.js";
import { element } from "./dom.js";

/**
 * What a missed session of `session` would hold: its questions still in the
 * quiz (`prompts`) that were not answered correctly.
 */
export function missedCount(
  session: PracticeSession,
  questions: SnapshotQuestion[],
  prompts: Map<string, string>,
): number {
  const right = new Set(
    session.answers.flatMap((a) => (a.isCorrect === true && a.questionId ? [a.questionId] : [])),
  );
  return questions.filter(
    (q) => q.questionId !== undefined && prompts.has(q.questionId) && !right.has(q.questionId),
  ).length;
}

/** "Practise the N you missed", or the 1. */
export function missedLabel(missed: number): string {
  return missed === 1 ? "Practise the 1 you missed" : `Practise the ${missed} you missed`;
}

/**
 * "Practise the N you missed" (StartSession, mode MISSED) beside "Start
 * practice" whenever no round is open and the latest completed round of the
 * quiz has misses: after a reload, or once a review is closed, not only
 * right after completing. The service practises what the latest completed
 * session missed, so that session is remembered here: the history offers it
 * on that session's review only.
 */
export class MissedOffer {
  private readonly button = element<HTMLButtonElement>("missed-start");
  /** The latest completed session, as last read, and how many of its questions it missed. */
  private latest: { id: string; missed: number } | undefined;
  /** Bumped on every read: an answer that arrives for an older one is dropped. */
  private generation = 0;

  constructor(
    private readonly clients: Clients,
    private readonly quizId: string,
    start: () => void,
  ) {
    this.button.addEventListener("click", start);
  }

  /**
   * Reads the latest completed session (and, if it has misses, which) and
   * shows the offer from it; a failure only hides the offer. Resolves with
   * that session's id.
   */
  async refresh(prompts: Map<string, string>): Promise<string | undefined> {
    const generation = ++this.generation;
    let latest: { id: string; missed: number } | undefined;
    try {
      const { sessions } = await this.clients.sessions.listSessions({
        quizId: this.quizId,
        status: SessionStatus.COMPLETED,
        limit: 1,
      });
      const last = sessions[0];
      if (last) {
        // All right: nothing to practise again, no need to read its answers.
        let missed = 0;
        if (last.correctAnswers < last.totalQuestions) {
          const { session, questions } = await this.clients.sessions.getSession({
            sessionId: last.id,
          });
          missed = session ? missedCount(session, questions, prompts) : 0;
        }
        latest = { id: last.id, missed };
      }
    } catch {
      latest = undefined;
    }
    if (generation === this.generation) {
      this.latest = latest;
      this.show(true);
    }
    return latest?.id;
  }

  /** The session just completed is the latest now. */
  completed(sessionId: string, missed: number) {
    ++this.generation;
    this.latest = { id: sessionId, missed };
  }

  /** Shows the offer (`true`) when there is one, or hides it (another one is in view). */
  show(shown: boolean) {
    const missed = this.latest?.missed ?? 0;
    this.button.hidden = !shown || missed === 0;
    this.button.textContent = missedLabel(missed);
    this.button.dataset.missedCount = String(missed);
  }

  /** Disables the offer while a start is on its way. */
  set busy(busy: boolean) {
    this.button.disabled = busy;
  }
}
