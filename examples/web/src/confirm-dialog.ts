import { element } from "./dom.js";

/**
 * Asks before completing a session with questions left, in the page's
 * native `<dialog>` (modal: the focus stays in it; Escape says no). The
 * focus starts on "Keep answering", the choice that loses nothing.
 */
export function confirmComplete(left: number): Promise<boolean> {
  const dialog = element<HTMLDialogElement>("confirm");
  const yes = element<HTMLButtonElement>("confirm-yes");
  const no = element<HTMLButtonElement>("confirm-no");
  element("confirm-text").textContent =
    left === 1
      ? "1 question is not answered yet. It will count as not correct."
      : `${left} questions are not answered yet. They will count as not correct.`;
  return new Promise((resolve) => {
    const done = (answer: boolean) => {
      yes.removeEventListener("click", onYes);
      no.removeEventListener("click", onNo);
      dialog.removeEventListener("cancel", onCancel);
      dialog.close();
      resolve(answer);
    };
    const onYes = () => done(true);
    const onNo = () => done(false);
    const onCancel = (event: Event) => {
      event.preventDefault();
      done(false);
    };
    yes.addEventListener("click", onYes);
    no.addEventListener("click", onNo);
    dialog.addEventListener("cancel", onCancel);
    dialog.showModal();
    no.focus();
  });
}
