import { timestampDate } from "@bufbuild/protobuf/wkt";
import {
  type Answer,
  type GetSessionResponse,
  type PracticeSession,
  SessionMode,
  SessionStatus,
  type SnapshotQuestion,
} from "../../../gen/practice/v1/practice_session_service_pb.js";
import type { Quiz } from "../../../gen/practice/v1/quiz_service_pb.js";
import type { Clients } from "./client.js";
import { confirmComplete } from "./confirm-dialog.js";
import type { DeviceStore, Pending } from "./device-store.js";
import { dateTimeFormat, element, h, timeElement } from "./dom.js";
import { DueReview } from "./due-review.js";
import { type History, isExpired } from "./history.js";
import { MissedOffer } from "./missed-offer.js";
import type { Reporter } from "./report.js";
import { ResultView } from "./result-view.js";
import type { Sender, SenderListener } from "./sender.js";

/** The longest answer the service takes (code points). */
const MAX_ANSWER_LENGTH = 1000;

/** Refusals (sender.ts) after which the session takes nothing more. */
const SESSION_OVER = /expired|was completed|no longer exists/;

/** One question of the session on the page. */
interface QuestionView {
  input: HTMLInputElement;
  button: HTMLButtonElement;
  feedback: HTMLParagraphElement;
  item: HTMLLIElement;
}

/**
 * Practising one quiz: start or resume, an answer per question, completion and a
 * review. Answers and the completion stay on this device until the service has them.
 */
export class Practice implements SenderListener {
  private readonly ui = {
    section: element("practice"),
    title: element("quiz-title"),
    meta: element("quiz-meta"),
    quizError: element("quiz-error"),
    intro: element("intro"),
    introText: element("intro-text"),
    start: element<HTMLButtonElement>("start"),
    startError: element("start-error"),
    session: element("session"),
    progress: element("progress"),
    expires: element("expires"),
    meter: element("meter-fill"),
    sync: element("sync"),
    questions: element<HTMLOListElement>("questions"),
    complete: element<HTMLButtonElement>("complete"),
    completeHint: element("complete-hint"),
    completeStatus: element("complete-status"),
    again: element<HTMLButtonElement>("again"),
  };
  private quiz: Quiz | undefined;
  private session: PracticeSession | undefined;
  private snapshot: SnapshotQuestion[] = [];
  /** The answers the service has, by question. */
  private readonly stored = new Map<string, Answer>();
  private readonly views = new Map<string, QuestionView>();
  private readonly result: ResultView;
  private readonly due: DueReview;
  private readonly missed: MissedOffer;
  private sender: Sender | undefined;

  constructor(
    private readonly clients: Clients,
    private readonly quizId: string,
    private readonly history: History,
    private readonly store: DeviceStore,
    private readonly report: Reporter,
  ) {
    this.ui.start.addEventListener("click", () => void this.start(true));
    this.ui.again.addEventListener("click", () => void this.start(true));
    this.ui.complete.addEventListener("click", () => void this.complete());
    this.due = new DueReview(clients, quizId, () => void this.start(true, SessionMode.REVIEW));
    this.missed = new MissedOffer(clients, quizId, () => void this.start(true, SessionMode.MISSED));
    this.result = new ResultView(
      () => this.reviewClosed(),
      () => void this.start(true, SessionMode.MISSED),
    );
  }

  /** The sender that delivers what this page queues (set once, before open). */
  useSender(sender: Sender) {
    this.sender = sender;
  }

  /**
   * Shows the quiz, and resumes the user's session if one is in progress (a
   * reload mid-way lands where the user was), or the session this device
   * still has answers for; otherwise offers to start. Opening creates nothing.
   */
  async open() {
    this.ui.section.hidden = false;
    try {
      const [{ quiz }, active] = await Promise.all([
        this.clients.quizzes.getQuiz({ quizId: this.quizId }),
        this.clients.sessions.listSessions({
          quizId: this.quizId,
          status: SessionStatus.ACTIVE,
          limit: 1,
        }),
      ]);
      if (!quiz) throw new Error("the service sent no quiz");
      this.quiz = quiz;
      document.title = `${quiz.title} · Practice`;
      this.ui.title.textContent = quiz.title;
      const count = quiz.questions.length;
      this.ui.meta.textContent = `${count} ${count === 1 ? "question" : "questions"}`;
      const current = active.sessions[0];
      void this.due.refresh();
      if (current && !isExpired(current)) {
        await this.start(false);
        return;
      }
      // A session this device still has answers or a completion for (its
      // completion may have reached the service while the reply did not).
      const kept = this.store.pendingSessions(this.quizId).find((id) => id !== current?.id);
      if (kept && (await this.showKept(kept))) return;
      this.showIntro(
        current
          ? "Your last session expired: unfinished sessions last 7 days. Start a new one."
          : "Answer each question, then complete the session to see your score and a review. " +
              "Your answers are kept on this device until the service has them, and the service " +
              "keeps a session for 7 days: you can leave and come back.",
      );
      // No round open: what the latest completed one missed may be practised at once.
      void this.missed.refresh(this.prompts());
    } catch (err) {
      this.ui.title.textContent = "This quiz could not be loaded";
      this.report.show(this.ui.quizError, err);
    }
  }

  private async showKept(sessionId: string): Promise<boolean> {
    try {
      const { session, questions } = await this.clients.sessions.getSession({ sessionId });
      if (!session) return false;
      if (session.completedAt) {
        this.showResult(session, questions);
        return true;
      }
      if (isExpired(session)) return false;
      this.showSession(session, questions, "Resumed your session.");
      this.focusFirstUnanswered();
      return true;
    } catch {
      return false;
    }
  }

  private showIntro(text: string) {
    this.ui.introText.textContent = text;
    this.ui.intro.hidden = false;
    this.ui.session.hidden = true;
  }

  /**
   * Starts a session (of the whole quiz, or a review of the questions due) or
   * resumes the one in progress, of either mode; `asked`: the user pressed a button.
   */
  private async start(asked: boolean, mode: SessionMode = SessionMode.FULL) {
    this.report.clear(this.ui.startError);
    this.ui.start.disabled = true;
    this.ui.again.disabled = true;
    this.due.busy = true;
    this.missed.busy = true;
    this.result.busy = true;
    try {
      const { session, created, questions } = await this.clients.sessions.startSession({
        quizId: this.quizId,
        mode,
      });
      if (!session) throw new Error("the service sent no session");
      this.showSession(session, questions, startedText(session.mode, created));
      this.ui.session.dataset.created = String(created);
      // The next step, on a new start and on resume alike: the first question left.
      this.focusFirstUnanswered();
      if (created) await this.history.refresh();
    } catch (err) {
      // The error shows beside the start button: the intro holds it.
      if (this.ui.session.hidden || (asked && !this.result.hidden)) {
        this.result.hide();
        this.showIntro("Could not start a session.");
      }
      this.report.show(this.ui.startError, err);
      // Nothing due (any more): say when, beside the buttons; and what is still missed.
      void this.due.refresh();
      void this.missed.refresh(this.prompts());
    } finally {
      this.ui.start.disabled = false;
      this.ui.again.disabled = false;
      this.due.busy = false;
      this.missed.busy = false;
      this.result.busy = false;
    }
  }

  private showSession(session: PracticeSession, questions: SnapshotQuestion[], prefix: string) {
    this.session = session;
    this.snapshot = [...questions].sort((a, b) => a.position - b.position);
    this.stored.clear();
    for (const answer of session.answers) {
      if (answer.questionId !== undefined) this.stored.set(answer.questionId, answer);
    }
    this.result.hide();
    this.ui.intro.hidden = true;
    this.ui.session.hidden = false;
    this.ui.session.dataset.sessionId = session.id;
    this.ui.session.dataset.mode = modeName(session.mode);
    this.report.clear(this.ui.completeStatus);
    this.renderQuestions();
    this.renderProgress(prefix);
    this.renderCompletion();
  }

  private renderQuestions() {
    this.views.clear();
    const prompts = new Map(this.quiz?.questions.map((q) => [q.id, q.prompt]));
    this.ui.questions.replaceChildren(
      ...this.snapshot.map((question) => {
        const prompt =
          question.questionId === undefined ? undefined : prompts.get(question.questionId);
        if (question.questionId === undefined || prompt === undefined) {
          // Deleted from the quiz after this session started: nothing to answer.
          return h(
            "li",
            { className: "question removed" },
            h("p", { className: "muted" }, "This question was removed from the quiz."),
          );
        }
        return this.questionItem(question.questionId, prompt);
      }),
    );
  }

  private questionItem(questionId: string, prompt: string): HTMLLIElement {
    const id = `answer-${questionId}`;
    const input = h("input", {
      id,
      type: "text",
      name: "answer",
      autocomplete: "off",
      spellcheck: false,
    });
    input.setAttribute("aria-describedby", `feedback-${questionId}`);
    const button = h(
      "button",
      { type: "submit", className: "secondary" },
      "Submit answer",
      // The accessible name says which question: "Submit answer to question 2".
      h("span", { className: "visually-hidden" }, ` to question ${this.positionOf(questionId)}`),
    );
    const feedback = h("p", {
      id: `feedback-${questionId}`,
      className: "feedback",
      attrs: { role: "status" },
    });
    const form = h(
      "form",
      { className: "answer-form", noValidate: true },
      h("label", { htmlFor: id, className: "prompt" }, prompt),
      h("div", { className: "answer-row" }, input, button),
      feedback,
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.submit(questionId);
    });
    const item = h("li", { className: "question", dataset: { questionId } }, form);
    // Every keystroke is kept on the device: a reload or a closed tab keeps the draft.
    input.addEventListener("input", () => {
      const session = this.session;
      if (!session || input.readOnly) return;
      this.store.updateQuestion(session.id, questionId, this.quizId, { draft: input.value });
      item.dataset.state = input.value ? "draft" : "empty";
      if (input.getAttribute("aria-invalid")) {
        input.removeAttribute("aria-invalid");
        feedback.textContent = "";
      }
    });
    this.views.set(questionId, { input, button, feedback, item });
    this.renderQuestion(questionId);
    return item;
  }

  private positionOf(questionId: string): number {
    return this.snapshot.find((q) => q.questionId === questionId)?.position ?? 0;
  }

  /** Shows a question as the service and this device know it. */
  private renderQuestion(questionId: string) {
    const view = this.views.get(questionId);
    const session = this.session;
    if (!view || !session) return;
    const stored = this.stored.get(questionId);
    const local = this.store.question(session.id, questionId);
    const completing = this.store.session(session.id)?.complete !== undefined;
    view.item.classList.remove("correct", "incorrect");
    view.input.removeAttribute("aria-invalid");
    if (stored) {
      setValue(view.input, (stored.userAnswer ?? "").trim());
      view.input.readOnly = true;
      view.button.hidden = true;
      const correct = stored.isCorrect === true;
      view.item.classList.add(correct ? "correct" : "incorrect");
      view.item.dataset.state = local?.state === "refused" ? "refused" : "sent";
      const verdict = [
        h("span", { className: "mark", attrs: { "aria-hidden": "true" } }, correct ? "✓" : "✗"),
        correct ? " Correct" : " Not correct",
      ];
      view.feedback.replaceChildren(
        ...verdict,
        ...(local?.state === "refused" && local.answer !== undefined
          ? [
              h(
                "span",
                { className: "refusal" },
                ` · Your answer “${local.answer}” was not stored. ${local.reason ?? ""}`,
              ),
            ]
          : []),
      );
      return;
    }
    if (local?.answer !== undefined && (local.state === "saved" || local.state === "sending")) {
      setValue(view.input, local.answer);
      view.input.readOnly = true;
      view.button.hidden = true;
      view.item.dataset.state = local.state;
      view.feedback.textContent =
        local.state === "sending" ? "Sending…" : "Saved on this device · not sent yet";
      return;
    }
    if (local?.answer !== undefined && local.state === "refused") {
      // Refused for a reason the learner may fix (say, too long): they can send another.
      setValue(view.input, local.answer);
      view.input.readOnly = completing;
      view.button.hidden = completing;
      view.item.dataset.state = "refused";
      view.input.setAttribute("aria-invalid", "true");
      view.feedback.textContent = `Not stored: ${local.reason ?? "the service refused it."}`;
      return;
    }
    setValue(view.input, local?.draft ?? "");
    view.input.readOnly = completing;
    view.button.hidden = completing;
    view.item.dataset.state = local?.draft ? "draft" : "empty";
    view.feedback.textContent = "";
  }

  /** Questions answered: stored by the service, or given and waiting on this device. */
  private counts() {
    const session = this.session;
    let answered = 0;
    let waiting = 0;
    for (const questionId of this.views.keys()) {
      if (this.stored.has(questionId)) {
        answered++;
        continue;
      }
      const local = session ? this.store.question(session.id, questionId) : undefined;
      if (local?.state === "saved" || local?.state === "sending") {
        answered++;
        waiting++;
      }
    }
    const total = session?.totalQuestions ?? 0;
    return { answered, waiting, total, left: Math.max(0, total - answered) };
  }

  private renderProgress(prefix = "") {
    const session = this.session;
    if (!session) return;
    const { answered, waiting, total, left } = this.counts();
    const kept = waiting === 0 ? "" : ` ${waiting} saved on this device, not sent yet.`;
    this.ui.progress.textContent = `${prefix ? `${prefix} ` : ""}${answered} of ${total} answered.${kept}`;
    this.ui.meter.style.width = `${total === 0 ? 0 : (answered / total) * 100}%`;
    this.ui.expires.replaceChildren(
      ...(session.expiresAt
        ? ["Open until ", timeElement(timestampDate(session.expiresAt), dateTimeFormat)]
        : []),
    );
    this.ui.completeHint.textContent =
      left === 0
        ? "All questions answered."
        : `${left} unanswered ${left === 1 ? "question counts" : "questions count"} as not correct.`;
  }

  /** The completion's state next to its button. */
  private renderCompletion() {
    const session = this.session;
    if (!session) return;
    const complete = this.store.session(session.id)?.complete;
    this.ui.complete.disabled = complete !== undefined && complete.state !== "refused";
    if (!complete) return;
    if (complete.state === "refused") {
      this.report.text(this.ui.completeStatus, `Not completed: ${complete.reason ?? ""}`);
      return;
    }
    const { waiting } = this.counts();
    this.report.text(
      this.ui.completeStatus,
      waiting > 0
        ? "Completion saved on this device: the session is completed as soon as your answers are sent."
        : complete.state === "sending"
          ? "Completing…"
          : "Completion saved on this device: it is sent as soon as the service can be reached.",
    );
  }

  /** The first question with no answer yet, in order; else "Complete session". */
  private focusFirstUnanswered() {
    this.focusUnansweredAfter(0);
  }

  /** The next question after `position` with no answer yet (wrapping round), else "Complete session". */
  private focusUnansweredAfter(position: number) {
    const open = [...this.views.entries()]
      .filter(([, view]) => !view.input.readOnly)
      .map(([id, view]) => ({ position: this.positionOf(id), view }));
    const next = open.find((q) => q.position > position) ?? open[0];
    if (next) next.view.input.focus();
    else if (!this.ui.complete.disabled) this.ui.complete.focus();
  }

  /** Keeps the answer on the device and hands it to the sender: it goes when it can. */
  private submit(questionId: string) {
    const view = this.views.get(questionId);
    const session = this.session;
    if (!view || !session || view.input.readOnly) return;
    // Surrounding spaces never count (the service compares trimmed): sent, kept and shown without them.
    const userAnswer = view.input.value.trim();
    const problem =
      userAnswer.trim() === ""
        ? "Type an answer first."
        : [...userAnswer].length > MAX_ANSWER_LENGTH
          ? `An answer can be at most ${MAX_ANSWER_LENGTH} characters long.`
          : undefined;
    if (problem) {
      view.input.setAttribute("aria-invalid", "true");
      view.feedback.textContent = problem;
      view.input.focus();
      return;
    }
    this.store.updateQuestion(session.id, questionId, this.quizId, {
      answer: userAnswer,
      state: "saved",
      seq: this.store.nextSeq(),
      draft: undefined,
      reason: undefined,
      storedAnswer: undefined,
    });
    this.renderQuestion(questionId);
    this.renderProgress();
    this.focusUnansweredAfter(this.positionOf(questionId));
    this.sender?.kick();
  }

  /** Queues the completion behind the answers still on this device. */
  private async complete() {
    const session = this.session;
    if (!session) return;
    const { left } = this.counts();
    if (left > 0 && !(await confirmComplete(left))) {
      this.focusFirstUnanswered();
      return;
    }
    this.report.clear(this.ui.completeStatus);
    this.store.updateSession(session.id, this.quizId, {
      complete: { seq: this.store.nextSeq(), state: "saved" },
    });
    for (const id of this.views.keys()) this.renderQuestion(id);
    this.renderCompletion();
    this.sender?.kick();
  }

  // ---- what the sender reports ----

  sending(item: Pending) {
    if (item.sessionId !== this.session?.id) return;
    if (item.kind === "answer") this.renderQuestion(item.questionId);
    else this.renderCompletion();
  }

  answerSent(item: Pending & { kind: "answer" }, answer: Answer, counts: PracticeSession) {
    this.history.update(counts);
    if (item.sessionId !== this.session?.id) return;
    this.stored.set(item.questionId, answer);
    this.session = { ...this.session, ...counts, answers: this.session.answers };
    this.renderQuestion(item.questionId);
    this.renderProgress();
    this.renderCompletion();
  }

  answerRefused(item: Pending & { kind: "answer" }, reason: string, stored?: Answer) {
    if (item.sessionId !== this.session?.id) return;
    if (stored) this.stored.set(item.questionId, stored);
    this.renderQuestion(item.questionId);
    this.renderProgress();
    this.renderCompletion();
    if (SESSION_OVER.test(reason)) {
      this.sessionOver(reason);
      return;
    }
    this.showRefusal(item.questionId);
  }

  /**
   * Brings a refused answer's question into view, its field focused so that
   * its feedback (the field's description) is read out: after the last
   * question the focus had moved on, maybe to a question far above. Not
   * while the learner is typing another answer: its feedback (a status) is
   * announced all the same, and the page stays where they type.
   */
  private showRefusal(questionId: string) {
    const view = this.views.get(questionId);
    if (!view) return;
    const active = document.activeElement;
    const typing =
      active instanceof HTMLInputElement && active !== view.input && active.value !== "";
    if (typing) return;
    view.input.focus({ preventScroll: true });
    const keep = () => view.item.scrollIntoView({ block: "nearest" });
    keep();
    // Renders in the same turn (the progress, the sync notice) may move it.
    requestAnimationFrame(keep);
  }

  /** The session can take nothing more (expired, completed elsewhere, gone): offer a new one. */
  private sessionOver(reason: string) {
    this.showIntro("Start a new session to keep practising.");
    void this.due.refresh();
    void this.missed.refresh(this.prompts());
    this.report.text(this.ui.startError, reason);
    this.ui.start.focus();
    void this.history.refresh();
  }

  completed(item: Pending & { kind: "complete" }, review: GetSessionResponse) {
    if (item.quizId === this.quizId) void this.history.refresh();
    const shown = this.session?.id === item.sessionId || this.ui.session.hidden;
    if (shown && review.session) this.showResult(review.session, review.questions);
  }

  completeRefused(item: Pending & { kind: "complete" }, reason: string) {
    // Refused for good: the button works again for a new try, the reason stays beside it.
    this.store.updateSession(item.sessionId, item.quizId, { complete: undefined });
    if (item.sessionId !== this.session?.id) return;
    for (const id of this.views.keys()) this.renderQuestion(id);
    this.ui.complete.disabled = false;
    this.report.text(this.ui.completeStatus, `Not completed: ${reason}`);
    if (SESSION_OVER.test(reason)) this.sessionOver(reason);
  }

  waiting(delayMs: number) {
    const { waiting } = this.counts();
    const completing =
      this.session !== undefined && this.store.session(this.session.id)?.complete !== undefined;
    if (waiting === 0 && !completing) return;
    const seconds = Math.max(1, Math.round(delayMs / 1000));
    this.ui.sync.textContent =
      `The service cannot be reached right now. What you gave is kept on this device and ` +
      `sent when it can be (next try in ${seconds} s).`;
    for (const id of this.views.keys()) this.renderQuestion(id);
    this.renderCompletion();
  }

  signedOut() {
    this.report.signOut();
    for (const id of this.views.keys()) this.renderQuestion(id);
    this.renderCompletion();
  }

  idle() {
    this.ui.sync.textContent = "";
  }

  // ---- results and reviews ----

  /**
   * A past session's review, from the history. With no round open, the
   * latest completed session's review offers to practise what it missed
   * (in place of the intro's offer, so that the page has one).
   */
  async review(sessionId: string, opener: HTMLElement) {
    try {
      const [{ session, questions }, latest] = await Promise.all([
        this.clients.sessions.getSession({ sessionId }),
        this.missed.refresh(this.prompts()),
      ]);
      if (!session) throw new Error("the service sent no session");
      const offer = this.ui.session.hidden && session.id === latest;
      this.result.show(session, questions, this.prompts(), opener, offer);
      this.missed.show(!offer);
    } catch (err) {
      this.report.show(element("history-error"), err);
    }
  }

  /** The session just completed: the store forgets it, the page shows its score and review. */
  private showResult(session: PracticeSession, questions: SnapshotQuestion[]) {
    this.store.forgetSession(session.id);
    this.session = undefined;
    this.ui.session.hidden = true;
    this.ui.intro.hidden = true;
    this.missed.completed(session.id, this.result.show(session, questions, this.prompts()));
    // Its answers moved what is due: when the next review is.
    void this.due.refresh();
  }

  /**
   * A past session's review was closed. With no session on the page (the
   * one just completed was replaced by that review), the quiz offers a new
   * start again, and what the latest round missed.
   */
  private reviewClosed() {
    if (!this.ui.session.hidden) return;
    if (this.ui.intro.hidden) {
      this.showIntro("Start a new session, or review what is due, to keep practising.");
      void this.due.refresh();
    }
    this.missed.show(true);
  }

  private prompts(): Map<string, string> {
    return new Map(this.quiz?.questions.map((q) => [q.id, q.prompt]));
  }
}

/** Sets a field's text only if it changes: assigning moves the caret of the one being typed in. */
function setValue(input: HTMLInputElement, value: string) {
  if (input.value !== value) input.value = value;
}

/** The mode as the page's data attributes and tests name it. */
function modeName(mode: SessionMode): "full" | "review" | "missed" {
  return mode === SessionMode.REVIEW ? "review" : mode === SessionMode.MISSED ? "missed" : "full";
}

/** What the page says on a start, by the session's mode and whether it was created. */
function startedText(mode: SessionMode, created: boolean): string {
  switch (modeName(mode)) {
    case "review":
      return created ? "Started a review of the questions due." : "Resumed your review.";
    case "missed":
      return created
        ? "Started practising the questions you missed."
        : "Resumed practising the questions you missed.";
    default:
      return created ? "Started a new session." : "Resumed your session.";
  }
}
