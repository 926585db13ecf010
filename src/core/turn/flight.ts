/**
 * Ledger writes of one turn, overlapped: each first decision that stores a body (hash it, write it)
 * runs while the turn decides the next results, at most MAX_WRITES at once and at most MAX_CHARS of
 * bodies alive in them, so a first sight of several large results waits for about one write, not
 * one per result, and a 128 MB isolate still holds a bounded amount of body text at once.
 */

const MAX_WRITES = 4;
/** Chars of body text in flight (UTF-16: twice as many bytes), one body whatever its size. */
const MAX_CHARS = 8 * 1024 * 1024;

export class Flight {
  #count = 0;
  #chars = 0;
  readonly #waiting: (() => void)[] = [];

  /**
   * Waits for room for a body of `chars`, then starts `work`; returns once it has started (the
   * caller goes on deciding) with the work's outcome to await later.
   */
  async start<T>(chars: number, work: () => Promise<T>): Promise<{ done: Promise<T> }> {
    while (this.#count > 0 && (this.#count >= MAX_WRITES || this.#chars + chars > MAX_CHARS))
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#count++;
    this.#chars += chars;
    const done = work().finally(() => {
      this.#count--;
      this.#chars -= chars;
      this.#waiting.shift()?.();
    });
    // Awaited by the caller later; a rejection must not go unhandled meanwhile.
    done.catch(() => {});
    return { done };
  }
}
