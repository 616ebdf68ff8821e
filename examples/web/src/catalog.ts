import type { QuizSummary } from "../../../gen/practice/v1/quiz_service_pb.js";
import type { Clients } from "./client.js";
import { element, h } from "./dom.js";
import type { Reporter } from "./report.js";

const PAGE_SIZE = 50;

/**
 * `/practice/` without a quiz: the live quizzes (ListQuizzes), each a link
 * that opens it on this page, with its question count, the user's questions
 * due for review and session in progress on it, a page at a time.
 */
export class Catalog {
  private readonly ui = {
    section: element("catalog"),
    list: element<HTMLUListElement>("quiz-list"),
    status: element("catalog-status"),
    error: element("catalog-error"),
    more: element<HTMLButtonElement>("catalog-more"),
  };
  private cursor = "";
  private shown = 0;

  constructor(
    private readonly clients: Clients,
    private readonly report: Reporter,
  ) {
    this.ui.more.addEventListener("click", () => void this.load());
  }

  async open() {
    this.ui.section.hidden = false;
    await this.load();
  }

  private async load() {
    this.ui.more.disabled = true;
    this.ui.status.textContent = "Loading the quizzes…";
    this.report.clear(this.ui.error);
    try {
      const page = await this.clients.quizzes.listQuizzes({
        limit: PAGE_SIZE,
        cursor: this.cursor,
      });
      this.ui.list.append(...page.quizzes.map((q) => item(q)));
      this.shown += page.quizzes.length;
      this.cursor = page.nextCursor;
      this.ui.more.hidden = !page.hasMore;
      this.ui.status.textContent =
        this.shown === 0
          ? "There are no quizzes to practise yet."
          : this.shown === 1
            ? "1 quiz."
            : `${this.shown} quizzes${page.hasMore ? " so far" : ""}.`;
    } catch (err) {
      this.ui.status.textContent = "";
      this.report.show(this.ui.error, err);
    } finally {
      this.ui.more.disabled = false;
    }
  }
}

/** The page's own URL for a quiz: the same query and fragment (the token), `quiz` set. */
export function quizHref(quizId: string, location: Location = window.location): string {
  const url = new URL(location.href);
  url.searchParams.set("quiz", quizId);
  return `${url.pathname}${url.search}${url.hash}`;
}

function item(quiz: QuizSummary): HTMLLIElement {
  const count = quiz.questionCount;
  const meta = [
    h("span", { className: "muted small" }, `${count} ${count === 1 ? "question" : "questions"}`),
  ];
  if (quiz.dueCount > 0) {
    const n = quiz.dueCount;
    meta.push(
      h(
        "span",
        { className: "pill due" },
        n === 1 ? "1 question due for review" : `${n} questions due for review`,
      ),
    );
  }
  if (quiz.inProgressSessions > 0) {
    const n = quiz.inProgressSessions;
    meta.push(
      h(
        "span",
        { className: "pill in-progress" },
        n === 1 ? "1 session in progress" : `${n} sessions in progress`,
      ),
    );
  }
  const title =
    count === 0
      ? h("span", { className: "quiz-title" }, `${quiz.title} (no questions yet)`)
      : h("a", { className: "quiz-title", href: quizHref(quiz.id) }, quiz.title);
  return h(
    "li",
    { className: "quiz-item", dataset: { quizId: quiz.id } },
    title,
    h("span", { className: "quiz-meta" }, ...meta),
  );
}
