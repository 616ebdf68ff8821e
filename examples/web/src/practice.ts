import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type Answer,
  type PracticeSession,
  SessionStatus,
  type SnapshotQuestion,
} from "../../../gen/practice/v1/practice_session_service_pb.js";
import type { Quiz } from "../../../gen/practice/v1/quiz_service_pb.js";
import type { Clients } from "./client.js";
import { dateTimeFormat, element, h, timeElement } from "./dom.js";
import { type History, isExpired } from "./history.js";

/** How the page reports an error it cannot handle in place (the alert at the top). */
export interface ErrorReport {
  show(err: unknown): void;
  clear(): void;
}

/** One question of the session on the page. */
interface QuestionView {
  input: HTMLInputElement;
  button: HTMLButtonElement;
  feedback: HTMLParagraphElement;
  item: HTMLLIElement;
}

/**
 * Practising one quiz: its title and questions, a session started or resumed
 * (StartSession), an answer per question (SubmitAnswer, with feedback), then
 * CompleteSession and a review (GetSession, which carries the correct answers
 * once the session is completed).
 */
export class Practice {
  private readonly ui = {
    title: element("quiz-title"),
    meta: element("quiz-meta"),
    intro: element("intro"),
    introText: element("intro-text"),
    start: element<HTMLButtonElement>("start"),
    session: element("session"),
    progress: element("progress"),
    expires: element("expires"),
    meter: element("meter-fill"),
    questions: element<HTMLOListElement>("questions"),
    complete: element<HTMLButtonElement>("complete"),
    completeHint: element("complete-hint"),
    result: element("result"),
    score: element("score"),
    scoreDetail: element("score-detail"),
    review: element<HTMLTableSectionElement>("review"),
    again: element<HTMLButtonElement>("again"),
  };
  private quiz: Quiz | undefined;
  private session: PracticeSession | undefined;
  private snapshot: SnapshotQuestion[] = [];
  private readonly answers = new Map<string, Answer>();
  private readonly views = new Map<string, QuestionView>();

  constructor(
    private readonly clients: Clients,
    private readonly quizId: string,
    private readonly history: History,
    private readonly errors: ErrorReport,
  ) {
    this.ui.start.addEventListener("click", () => void this.start(true));
    this.ui.again.addEventListener("click", () => void this.start(true));
    this.ui.complete.addEventListener("click", () => void this.complete());
  }

  /**
   * Shows the quiz, and resumes the user's session if one is in progress (a
   * reload mid-way lands where the user was); otherwise offers to start.
   * Opening the page alone creates nothing.
   */
  async open() {
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
      if (current && !isExpired(current)) {
        await this.start(false);
      } else {
        this.showIntro(
          current
            ? "Your last session expired: unfinished sessions last 7 days. Start a new one."
            : "Answer each question, then complete the session to see your score and a review. " +
                "Your answers are saved as you go: you can leave and come back within 7 days.",
        );
      }
    } catch (err) {
      this.ui.title.textContent = "This quiz could not be loaded";
      this.errors.show(err);
    }
  }

  private showIntro(text: string) {
    this.ui.introText.textContent = text;
    this.ui.intro.hidden = false;
    this.ui.session.hidden = true;
  }

  /** Starts a session or resumes the one in progress; `focus`: the user asked. */
  private async start(focus: boolean) {
    this.errors.clear();
    this.ui.start.disabled = true;
    this.ui.again.disabled = true;
    try {
      const { session, created, questions } = await this.clients.sessions.startSession({
        quizId: this.quizId,
      });
      if (!session) throw new Error("the service sent no session");
      this.session = session;
      this.snapshot = [...questions].sort((a, b) => a.position - b.position);
      this.answers.clear();
      for (const answer of session.answers) {
        if (answer.questionId !== undefined) this.answers.set(answer.questionId, answer);
      }
      this.ui.result.hidden = true;
      this.ui.intro.hidden = true;
      this.ui.session.hidden = false;
      this.ui.session.dataset.sessionId = session.id;
      this.ui.session.dataset.created = String(created);
      this.renderQuestions();
      this.renderProgress(created ? "Started a new session." : "Resumed your session.");
      if (focus) this.focusNext();
      if (created) await this.history.refresh();
    } catch (err) {
      this.errors.show(err);
      if (this.ui.session.hidden) this.showIntro("Could not start a session.");
    } finally {
      this.ui.start.disabled = false;
      this.ui.again.disabled = false;
    }
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
      maxLength: 1000,
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
      void this.submit(questionId);
    });
    const item = h("li", { className: "question", dataset: { questionId } }, form);
    this.views.set(questionId, { input, button, feedback, item });
    const answer = this.answers.get(questionId);
    if (answer) this.showAnswered(questionId, answer);
    return item;
  }

  private positionOf(questionId: string): number {
    return this.snapshot.find((q) => q.questionId === questionId)?.position ?? 0;
  }

  private showAnswered(questionId: string, answer: Answer) {
    const view = this.views.get(questionId);
    if (!view) return;
    view.input.value = answer.userAnswer ?? "";
    view.input.readOnly = true;
    view.input.removeAttribute("aria-invalid");
    view.button.hidden = true;
    const correct = answer.isCorrect === true;
    view.item.classList.remove("correct", "incorrect");
    view.item.classList.add(correct ? "correct" : "incorrect");
    view.feedback.replaceChildren(
      h("span", { className: "mark", attrs: { "aria-hidden": "true" } }, correct ? "✓" : "✗"),
      correct ? " Correct" : " Not correct",
    );
  }

  private renderProgress(prefix = "") {
    const session = this.session;
    if (!session) return;
    const answered = session.answeredQuestions;
    const total = session.totalQuestions;
    this.ui.progress.textContent = `${prefix ? `${prefix} ` : ""}${answered} of ${total} answered.`;
    this.ui.meter.style.width = `${total === 0 ? 0 : (answered / total) * 100}%`;
    this.ui.expires.replaceChildren(
      ...(session.expiresAt
        ? ["Open until ", timeElement(timestampDate(session.expiresAt), dateTimeFormat)]
        : []),
    );
    const left = total - answered;
    this.ui.completeHint.textContent =
      left === 0
        ? "All questions answered."
        : `${left} unanswered ${left === 1 ? "question counts" : "questions count"} as not correct.`;
  }

  /** Focus on the first question still to answer, else on "Complete session". */
  private focusNext() {
    for (const view of this.views.values()) {
      if (!view.input.readOnly) {
        view.input.focus();
        return;
      }
    }
    this.ui.complete.focus();
  }

  private async submit(questionId: string) {
    const view = this.views.get(questionId);
    const session = this.session;
    if (!view || !session || view.input.readOnly) return;
    const userAnswer = view.input.value;
    if (userAnswer.trim() === "") {
      view.input.setAttribute("aria-invalid", "true");
      view.feedback.textContent = "Type an answer first.";
      view.input.focus();
      return;
    }
    this.errors.clear();
    view.button.disabled = true;
    try {
      const { answer, session: counts } = await this.clients.sessions.submitAnswer({
        sessionId: session.id,
        questionId,
        userAnswer,
      });
      if (!answer || !counts) throw new Error("the service sent no answer");
      this.answers.set(questionId, answer);
      this.session = { ...session, ...counts, answers: session.answers };
      this.showAnswered(questionId, answer);
      this.renderProgress();
      this.history.update(counts);
      this.focusNext();
    } catch (err) {
      const e = ConnectError.from(err);
      if (e.code === Code.InvalidArgument) {
        view.input.setAttribute("aria-invalid", "true");
        view.feedback.textContent = `${e.rawMessage}.`;
        view.input.focus();
      } else if (e.code === Code.AlreadyExists) {
        // Answered meanwhile (another tab or device): show what the service has.
        await this.start(true);
      } else {
        await this.sessionFailed(err);
      }
    } finally {
      view.button.disabled = false;
    }
  }

  /** A call on the session failed: an expired or completed session gets a new start. */
  private async sessionFailed(err: unknown) {
    this.errors.show(err);
    if (ConnectError.from(err).code === Code.FailedPrecondition) {
      this.showIntro("This session can no longer change. Start a new one to keep practising.");
      this.ui.start.focus();
      await this.history.refresh();
    }
  }

  private async complete() {
    const session = this.session;
    if (!session) return;
    this.errors.clear();
    this.ui.complete.disabled = true;
    try {
      await this.clients.sessions.completeSession({ sessionId: session.id });
      // GetSession carries the correct answers once the session is completed.
      const review = await this.clients.sessions.getSession({ sessionId: session.id });
      if (!review.session) throw new Error("the service sent no session");
      this.showResult(review.session, review.questions);
      await this.history.refresh();
    } catch (err) {
      await this.sessionFailed(err);
    } finally {
      this.ui.complete.disabled = false;
    }
  }

  private showResult(session: PracticeSession, questions: SnapshotQuestion[]) {
    this.session = undefined;
    this.ui.session.hidden = true;
    this.ui.intro.hidden = true;
    this.ui.result.hidden = false;
    this.ui.result.dataset.sessionId = session.id;
    this.ui.score.textContent = `${session.scorePercentage ?? 0}%`;
    this.ui.scoreDetail.textContent =
      `${session.correctAnswers} of ${session.totalQuestions} correct` +
      (session.completedAt
        ? ` · completed ${dateTimeFormat.format(timestampDate(session.completedAt))}`
        : "");

    const prompts = new Map(this.quiz?.questions.map((q) => [q.id, q.prompt]));
    const answers = new Map(
      session.answers.flatMap((a) => (a.questionId === undefined ? [] : [[a.questionId, a]])),
    );
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
            h("td", {}, answer?.userAnswer ?? "—"),
            h("td", {}, h("span", { className: "pill" }, verdict.text)),
            h("td", {}, question.correctAnswer ?? "—"),
          );
        }),
    );
    this.ui.result.focus();
  }
}
