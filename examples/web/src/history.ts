import { timestampDate } from "@bufbuild/protobuf/wkt";
import {
  type PracticeSession,
  SessionMode,
  SessionStatus,
} from "../../../gen/practice/v1/practice_session_service_pb.js";
import { scoreBand } from "./bands.js";
import { type ScorePoint, scoreChart } from "./chart.js";
import { type Clients, isNotFound } from "./client.js";
import { dateTimeFormat, element, h, timeElement } from "./dom.js";
import type { Reporter } from "./report.js";

const PAGE_SIZE = 20;
/** The chart shows the newest completed sessions, up to ListSessions' largest page. */
const CHART_SESSIONS = 100;

const STATUS: Record<string, SessionStatus> = {
  all: SessionStatus.UNSPECIFIED,
  completed: SessionStatus.COMPLETED,
  active: SessionStatus.ACTIVE,
};

/** Whether an in-progress session is past its `expires_at` (it then refuses answers). */
export function isExpired(session: PracticeSession, now: Date = new Date()): boolean {
  return (
    !session.completedAt &&
    session.expiresAt !== undefined &&
    timestampDate(session.expiresAt).getTime() <= now.getTime()
  );
}

/** What the history says when a filter has no sessions. */
const EMPTY: Record<string, string> = {
  all: "No sessions yet: start practice above, and your sessions appear here.",
  completed: "No completed sessions yet.",
  active: "No session in progress.",
};

/**
 * The history of the user's sessions on the quiz: a table, newest first, a
 * page at a time ("Load more", through `next_cursor`) with a status filter;
 * and above it a chart of the scores of completed sessions.
 */
export class History {
  private readonly ui = {
    chart: element("chart"),
    chartCaption: element("chart-caption"),
    status: element<HTMLSelectElement>("status"),
    rows: element<HTMLTableSectionElement>("history"),
    message: element<HTMLParagraphElement>("history-status"),
    error: element<HTMLParagraphElement>("history-error"),
    more: element<HTMLButtonElement>("more"),
    section: element("history-section"),
  };
  private cursor = "";
  private shown = 0;
  /** Bumped on every reset: a page that arrives for an older filter is dropped. */
  private generation = 0;
  /** The chart's points, to draw it again at a new width. */
  private points: ScorePoint[] = [];
  private drawnWidth = 0;

  constructor(
    private readonly clients: Clients,
    private readonly quizId: string,
    private readonly report: Reporter,
    /** Opens a completed session's review (a row's "Review" button). */
    private readonly onReview: (sessionId: string, opener: HTMLElement) => void,
  ) {
    this.ui.status.addEventListener("change", () => void this.load(true));
    this.ui.more.addEventListener("click", () => void this.load(false));
    window.addEventListener("resize", () => {
      if (this.points.length > 0 && this.ui.chart.clientWidth !== this.drawnWidth) this.drawChart();
    });
  }

  /** No such quiz: the quiz's card says so once; no history to show. */
  private hide() {
    this.ui.section.hidden = true;
  }

  /** Disables the controls (the page cannot call the service). */
  disable() {
    this.ui.status.disabled = true;
  }

  /** The first page and the chart again: after a start or a completion. */
  async refresh() {
    await Promise.all([this.load(true), this.loadChart()]);
  }

  /** Shows a session's new counts in its row, if the table has it (after an answer). */
  update(session: PracticeSession) {
    for (const existing of this.ui.rows.rows) {
      if (existing.dataset.sessionId === session.id) existing.replaceWith(this.row(session));
    }
  }

  /** Loads the next page, or (reset) the first page for the selected status. */
  async load(reset: boolean) {
    if (reset) {
      this.generation++;
      this.cursor = "";
      this.shown = 0;
    }
    const generation = this.generation;
    const current = () => generation === this.generation;
    this.ui.more.disabled = true;
    this.ui.message.textContent = "Loading…";
    this.report.clear(this.ui.error);
    try {
      const page = await this.clients.sessions.listSessions({
        quizId: this.quizId,
        status: STATUS[this.ui.status.value] ?? SessionStatus.UNSPECIFIED,
        limit: PAGE_SIZE,
        cursor: this.cursor,
      });
      // The filter changed while this page was on its way: a newer load owns the table.
      if (!current()) return;
      const rows = page.sessions.map((s) => this.row(s));
      if (reset) this.ui.rows.replaceChildren(...rows);
      else this.ui.rows.append(...rows);
      this.shown += page.sessions.length;
      this.cursor = page.nextCursor;
      const moveFocus = !page.hasMore && document.activeElement === this.ui.more;
      this.ui.more.hidden = !page.hasMore;
      this.ui.message.textContent =
        this.shown === 0
          ? (EMPTY[this.ui.status.value] ?? EMPTY.all ?? "")
          : page.hasMore
            ? `Showing the newest ${this.shown} sessions.`
            : this.shown === 1
              ? "1 session shown."
              : `All ${this.shown} sessions shown.`;
      // The focused button just disappeared: keep keyboard users where they were.
      if (moveFocus) this.ui.message.focus();
    } catch (err) {
      if (!current()) return;
      if (isNotFound(err)) return this.hide();
      this.ui.message.textContent = "Could not load the history.";
      this.report.show(this.ui.error, err);
    } finally {
      if (current()) this.ui.more.disabled = false;
    }
  }

  /** Draws the chart at the width it gets, so that its text stays readable on a phone. */
  private drawChart() {
    this.drawnWidth = this.ui.chart.clientWidth;
    this.ui.chart.replaceChildren(scoreChart(this.points, this.drawnWidth));
  }

  /** The chart of scores over time, from the newest completed sessions. */
  async loadChart() {
    try {
      const page = await this.clients.sessions.listSessions({
        quizId: this.quizId,
        status: SessionStatus.COMPLETED,
        limit: CHART_SESSIONS,
      });
      const points = page.sessions
        .flatMap((s) =>
          s.completedAt && s.scorePercentage !== undefined
            ? [
                {
                  at: timestampDate(s.completedAt),
                  score: s.scorePercentage,
                  practice: s.mode !== SessionMode.FULL,
                },
              ]
            : [],
        )
        .reverse();
      if (points.length === 0) {
        this.points = [];
        this.ui.chart.replaceChildren();
        this.ui.chartCaption.textContent = "Complete a session to see your scores over time.";
        return;
      }
      this.points = points;
      this.drawChart();
      const apart = points.some((p) => p.practice)
        ? " Reviews and practice of missed questions are hollow squares, off the line."
        : "";
      this.ui.chartCaption.textContent =
        (page.hasMore
          ? `Scores of your newest ${points.length} completed sessions, oldest on the left.`
          : points.length === 1
            ? "Score of your completed session."
            : `Scores of your ${points.length} completed sessions, oldest on the left.`) + apart;
    } catch (err) {
      if (isNotFound(err)) return this.hide();
      this.ui.chartCaption.textContent = "Could not load the scores.";
      this.report.show(this.ui.error, err);
    }
  }

  /** A session's row; a completed one has a button that opens its review. */
  private row(session: PracticeSession): HTMLTableRowElement {
    const startedAt = session.startedAt ? timestampDate(session.startedAt) : undefined;
    const completed = session.completedAt !== undefined && session.scorePercentage !== undefined;
    const expired = isExpired(session);
    const band = completed ? scoreBand(session.scorePercentage ?? 0) : undefined;
    const result = band
      ? `${session.scorePercentage}% · ${band.label}`
      : expired
        ? "expired"
        : "in progress";
    const resultClass = band ? `scored band-${band.name}` : expired ? "expired" : "in-progress";
    const counts = completed
      ? `${session.correctAnswers} of ${session.totalQuestions} correct`
      : `${session.answeredQuestions} of ${session.totalQuestions} answered`;
    // A review or a missed practice holds only some questions: say so beside its counts.
    const correct =
      session.mode === SessionMode.REVIEW
        ? `${counts} · review`
        : session.mode === SessionMode.MISSED
          ? `${counts} · missed questions`
          : counts;
    const action = h("td", { className: "row-action" });
    if (completed) {
      const review = h(
        "button",
        { type: "button", className: "link" },
        "Review",
        h(
          "span",
          { className: "visually-hidden" },
          ` the session started ${startedAt ? dateTimeFormat.format(startedAt) : ""}`,
        ),
      );
      review.addEventListener("click", () => this.onReview(session.id, review));
      action.append(review);
    }
    return h(
      "tr",
      { dataset: { sessionId: session.id } },
      h("td", {}, startedAt ? timeElement(startedAt) : ""),
      h("td", { className: resultClass }, h("span", { className: "pill" }, result)),
      h("td", {}, correct),
      action,
    );
  }
}
