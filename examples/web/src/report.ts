import { describeError, isSignedOut, SIGNED_OUT } from "./client.js";

/**
 * Where the page reports what failed: next to what failed, kept in view on a
 * phone; a refused token once, at the top (sticky), whatever asked.
 */
export class Reporter {
  private signedOut = false;

  constructor(
    private readonly notice: HTMLElement,
    private readonly crossOrigin: boolean,
  ) {}

  /** Shows `err` in `place` (an alert beside what failed); a refused token goes to the notice. */
  show(place: HTMLElement, err: unknown) {
    if (isSignedOut(err)) {
      this.clear(place);
      this.signOut();
      return;
    }
    this.text(place, describeError(err, this.crossOrigin));
  }

  /**
   * Shows a sentence in `place` and scrolls it into view, again on the next
   * frame: renders in the same turn (a question's state, the sync notice) may
   * push it down.
   */
  text(place: HTMLElement, text: string) {
    place.textContent = text;
    place.hidden = false;
    place.scrollIntoView({ block: "nearest" });
    requestAnimationFrame(() => {
      if (!place.hidden) place.scrollIntoView({ block: "nearest" });
    });
  }

  clear(place: HTMLElement) {
    place.hidden = true;
    place.textContent = "";
  }

  /** The token was refused: said once, however many calls found out. */
  signOut() {
    if (this.signedOut) return;
    this.signedOut = true;
    this.notice.textContent = SIGNED_OUT;
    this.notice.hidden = false;
  }

  /** A problem of the whole page (no token, no quiz): the notice at the top. */
  page(text: string) {
    this.notice.textContent = text;
    this.notice.hidden = false;
  }
}
