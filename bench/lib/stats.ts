/** Timing helpers for benchmarks: medians of repeated runs, so a noisy shared machine still gives ratios. */

export async function median(
  fn: () => unknown | Promise<unknown>,
  runs: number,
  warmup = Math.min(5, runs),
): Promise<number> {
  for (let i = 0; i < warmup; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/** Interleave two measurements round by round so drift on the machine hits both alike; returns both medians. */
export async function pairedMedians(
  a: () => unknown,
  b: () => unknown,
  rounds: number,
): Promise<[number, number]> {
  const ta: number[] = [];
  const tb: number[] = [];
  for (let i = 0; i < 3; i++) {
    await a();
    await b();
  }
  for (let i = 0; i < rounds; i++) {
    let t0 = performance.now();
    await a();
    ta.push(performance.now() - t0);
    t0 = performance.now();
    await b();
    tb.push(performance.now() - t0);
  }
  const med = (xs: number[]) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  return [med(ta), med(tb)];
}

export function fmt(ms: number): string {
  return ms < 10 ? ms.toFixed(2) : ms.toFixed(1);
}

/**
 * Like pairedMedians, plus the median of the per-round ratios a/b: each round's `a` is judged against the
 * `b` measured right next to it, which holds better than two medians when the machine's load drifts.
 */
export async function pairedRatio(
  a: () => unknown,
  b: () => unknown,
  rounds: number,
): Promise<[number, number, number]> {
  const ta: number[] = [];
  const tb: number[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < 3; i++) {
    await a();
    await b();
  }
  for (let i = 0; i < rounds; i++) {
    let t0 = performance.now();
    await b();
    const tbi = performance.now() - t0;
    t0 = performance.now();
    await a();
    const tai = performance.now() - t0;
    ta.push(tai);
    tb.push(tbi);
    ratios.push(tai / tbi);
  }
  const med = (xs: number[]) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  return [med(ta), med(tb), med(ratios)];
}
