import { timestampDate } from "@bufbuild/protobuf/wkt";
import {
  type PracticeSession,
  SessionMode,
  type SnapshotQuestion,
} from "../../../gen/practice/v1/practice_session_service_pb.js";
import { scoreBand } from "./bands.js";
import { dateTimeFormat, element, h } from "./dom.js";
import { missedCount, missedLabel } from "./missed-offer.js";

/**
 * A completed session's score and review: each question, the user's answer and
 * the correct one. Just completed it offers to practise again; a past one, to
 * close. Either offers to practise what it missed when asked to (missed-offer.ts).
 */
export class ResultView {
  private readonly ui = {
    result: element("result"),
    heading: element("result-heading"),
    score: element("score"),
    band: element("score-band"),
    detail: element("score-detail"),
    review: element<HTMLTableSectionElement>("review"),
    again: element<HTMLButtonElement>("again"),
    missed: element<HTMLButtonElement>("missed-again"),
    close: element<HTMLButtonElement>("close-review"),
  };
  /** Where the focus goes back to when a past session's review closes. */
  private opener: HTMLElement | undefined;

  /** `onClose`: a past session's review was closed; `onMissed`: "Practise the N you missed". */
  constructor(
    private readonly onClose: () => void = () => {},
    onMissed: () => void = () => {},
  ) {
    this.ui.close.addEventListener("click", () => this.close());
    this.ui.missed.addEventListener("click", onMissed);
  }

  /** Disables the offers while a start is on its way. */
  set busy(busy: boolean) {
    this.ui.missed.disabled = busy;
  }

  get hidden(): boolean {
    return this.ui.result.hidden === true;
  }

  hide() {
    this.ui.result.hidden = true;
  }

  /**
   * Shows `session`; `opener`: a past session's, opened from that element.
   * `offerMissed`: whether "Practise the N you missed" may be offered (a
   * session just completed, or the latest completed one with no round open).
   * Returns how many questions it missed.
   */
  show(
    session: PracticeSession,
    questions: SnapshotQuestion[],
    prompts: Map<string, string>,
    opener?: HTMLElement,
    offerMissed = opener === undefined,
  ): number {
    const past = opener !== undefined;
    this.opener = opener;
    this.ui.result.hidden = false;
    this.ui.result.dataset.sessionId = session.id;
    this.ui.again.hidden = past;
    this.ui.close.hidden = !past;
    // What is due next belongs to a session just completed, not to a past one (style.css).
    this.ui.result.dataset.past = String(past);
    this.ui.heading.textContent = past
      ? `Review of your session of ${session.startedAt ? dateTimeFormat.format(timestampDate(session.startedAt)) : ""}`
      : session.mode === SessionMode.REVIEW
        ? "Review session complete"
        : session.mode === SessionMode.MISSED
          ? "Missed questions practised"
          : "Session complete";
    const score = session.scorePercentage ?? 0;
    const band = scoreBand(score);
    this.ui.score.textContent = `${score}%`;
    this.ui.score.className = `band-${band.name}`;
    this.ui.band.textContent = band.label;
    this.ui.band.className = `band-text band-${band.name}`;
    this.ui.detail.textContent =
      `${session.correctAnswers} of ${session.totalQuestions} correct` +
      (session.completedAt
        ? ` · completed ${dateTimeFormat.format(timestampDate(session.completedAt))}`
        : "");

    const answers = new Map(
      session.answers.flatMap((a) => (a.questionId === undefined ? [] : [[a.questionId, a]])),
    );
    const missed = missedCount(session, questions, prompts);
    this.ui.missed.hidden = !offerMissed || missed === 0;
    this.ui.missed.textContent = missedLabel(missed);
    this.ui.missed.dataset.missedCount = String(missed);
    this.ui.review.replaceChildren(
      ...[...questions]
        .sort((a, b) => a.position - b.position)
        .map((question) => {
          const id = question.questionId;
          const answer = id === undefined ? undefined : answers.get(id);
          const prompt =
            id === undefined
              ? "A question since deleted"
              : (prompts.get(id) ?? "A question since removed from the quiz");
          const verdict = !answer
            ? { text: "Not answered", className: "unanswered" }
            : answer.isCorrect
              ? { text: "Correct", className: "correct" }
              : { text: "Not correct", className: "incorrect" };
          return h(
            "tr",
            { className: verdict.className },
            h("th", { scope: "row" }, prompt),
            h("td", {}, answer?.userAnswer?.trim() || "—"),
            h("td", {}, h("span", { className: "pill" }, verdict.text)),
            h("td", {}, question.correctAnswer ?? "—"),
          );
        }),
    );
    this.ui.result.focus();
    return missed;
  }

  private close() {
    this.ui.result.hidden = true;
    this.onClose();
    this.opener?.focus();
    this.opener = undefined;
  }
}
