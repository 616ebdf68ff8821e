import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Clients } from "./client.js";
import { dateTimeFormat, element, timeElement } from "./dom.js";

/**
 * What is due for review on the quiz (ListDueQuestions): a "Review N due
 * questions" button beside each way to practise the whole quiz (the intro
 * and a finished session's result), and when the next review falls due.
 */
export class DueReview {
  private readonly ui = {
    introButton: element<HTMLButtonElement>("review-start"),
    introNote: element("review-note"),
    resultButton: element<HTMLButtonElement>("review-again"),
    resultNote: element("next-review"),
  };
  /** Bumped on every refresh: an answer that arrives for an older one is dropped. */
  private generation = 0;

  constructor(
    private readonly clients: Clients,
    private readonly quizId: string,
    startReview: () => void,
  ) {
    for (const button of [this.ui.introButton, this.ui.resultButton]) {
      button.addEventListener("click", startReview);
    }
  }

  /** Reads what is due now and shows it; a failure only hides the offer. */
  async refresh() {
    const generation = ++this.generation;
    try {
      const due = await this.clients.sessions.listDueQuestions({ quizId: this.quizId });
      if (generation !== this.generation) return;
      this.show(due.dueCount, due.nextDueAt ? timestampDate(due.nextDueAt) : undefined);
    } catch {
      if (generation === this.generation) this.show(0, undefined);
    }
  }

  private show(count: number, next: Date | undefined) {
    const label = count === 1 ? "Review 1 due question" : `Review ${count} due questions`;
    for (const button of [this.ui.introButton, this.ui.resultButton]) {
      button.hidden = count === 0;
      button.textContent = label;
      button.dataset.dueCount = String(count);
    }
    for (const note of [this.ui.introNote, this.ui.resultNote]) {
      note.replaceChildren(
        ...(count > 0
          ? [
              count === 1
                ? "1 question you missed or may forget is due for review now."
                : `${count} questions you missed or may forget are due for review now.`,
            ]
          : next
            ? ["Next review due ", timeElement(next, dateTimeFormat), "."]
            : []),
      );
    }
  }

  /** Disables the offer while a start is on its way. */
  set busy(busy: boolean) {
    this.ui.introButton.disabled = busy;
    this.ui.resultButton.disabled = busy;
  }
}
