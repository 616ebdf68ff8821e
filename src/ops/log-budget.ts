/**
 * A budget of log lines that a flood of cheap requests could otherwise buy
 * one each: at most `perSecond` lines a second, with a burst of as many (a
 * token bucket). A line left out is counted, and the next line written says
 * how many were (`suppressed`), so that nothing goes uncounted.
 */
export class LogBudget {
  #allowance: number;
  #last: number;
  #suppressed = 0;

  /** `now` in milliseconds; `performance.now` unless a test fakes it. */
  constructor(
    private readonly perSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.#allowance = perSecond;
    this.#last = now();
  }

  /**
   * Asks to write one line. Undefined: leave it out (it is counted). Else
   * write it, with this count of lines left out since the last one written.
   */
  take(): number | undefined {
    const now = this.now();
    this.#allowance = Math.min(
      this.perSecond,
      this.#allowance + ((now - this.#last) / 1000) * this.perSecond,
    );
    this.#last = now;
    if (this.#allowance < 1) {
      this.#suppressed++;
      return undefined;
    }
    this.#allowance -= 1;
    const suppressed = this.#suppressed;
    this.#suppressed = 0;
    return suppressed;
  }
}
