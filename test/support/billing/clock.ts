/** The billing fake's clock: cache lifetimes run on it, and only the test moves it. */
export class FakeClock {
  #ms = 0;

  now(): number {
    return this.#ms;
  }

  advance(seconds: number): void {
    if (!(seconds >= 0)) throw new RangeError("the clock only moves forward");
    this.#ms += seconds * 1000;
  }
}
