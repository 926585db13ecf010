/**
 * The eval's statistics (docs/measure.md): a Wilson score interval for each agreement rate, and
 * Newcombe's hybrid score interval for the difference of two of them (A/B minus A/A). Both are
 * the textbook choices for small samples: they stay inside [0, 1], and unlike the normal
 * approximation they do not collapse to a point at 0% or 100% agreement.
 */
import type { Proportion } from "./types.ts";

/** The normal quantile of a two-sided 95% interval. */
export const Z95 = 1.959963984540054;

/** Wilson's score interval for `agree` successes in `n` trials (Wilson 1927). */
export function wilson(agree: number, n: number, z = Z95): Proportion {
  if (n <= 0) return { agree: 0, n: 0, rate: null, low: null, high: null };
  const p = agree / n;
  const z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  return {
    agree,
    n,
    rate: p,
    low: Math.max(0, centre - half),
    high: Math.min(1, centre + half),
  };
}

export interface Difference {
  /** p1 − p2. */
  estimate: number;
  low: number;
  high: number;
}

/**
 * Newcombe's hybrid score interval for p1 − p2 of two independent proportions (Newcombe 1998,
 * method 10), built from their Wilson intervals. Null when either has no trials.
 */
export function newcombe(p1: Proportion, p2: Proportion): Difference | null {
  if (p1.rate === null || p2.rate === null) return null;
  const [l1, u1, l2, u2] = [p1.low!, p1.high!, p2.low!, p2.high!];
  const d = p1.rate - p2.rate;
  return {
    estimate: d,
    low: d - Math.sqrt((p1.rate - l1) ** 2 + (u2 - p2.rate) ** 2),
    high: d + Math.sqrt((u1 - p1.rate) ** 2 + (p2.rate - l2) ** 2),
  };
}

/** What the difference A/B − A/A says (verdictOf). */
export type Verdict = "regression" | "no_regression_detected" | "no_noise_floor";

/**
 * A regression when the difference's whole interval lies below 0 (B agrees with A less than A
 * agrees with itself, beyond the noise), else none detected; no noise floor without A/A pairs.
 */
export function verdictOf(diff: Difference | null): Verdict {
  if (diff === null) return "no_noise_floor";
  return diff.high < 0 ? "regression" : "no_regression_detected";
}
