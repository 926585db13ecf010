/**
 * Calibrated estimates: the ratio of provider-counted to estimated tokens, learned per tenant and
 * model from turns whose usage we measured, per class of content (each kind of tool result, and
 * "request" for everything else: messages, stubs, tools, framing). One provider number, the prompt
 * tokens of the call we sent, is explained by the estimates of its parts, so the ratios are fitted
 * with a normalised least-mean-squares step: each turn moves every class's ratio by its share of
 * the error, damped (half a step) and bounded (0.5–2), and nothing is used before enough turns.
 * Pure: the stores keep the state and apply `calibrate` atomically.
 */

/** The classes a request's estimated tokens are split into: content kinds, and "request". */
export type TokenClasses = Record<string, number>;

export interface Calibration {
  /** Provider tokens per estimated token, per class (a missing class: 1). */
  ratios: Record<string, number>;
  /** Turns learned from. */
  turns: number;
  /**
   * The estimates' error on the turns learned from, once warm (`turns` ≥ CALIBRATION_MIN_TURNS
   * before the turn): Σ measured prompt tokens, Σ |estimate − measured| before calibration, and Σ
   * |calibrated − measured| with the ratios known before that turn.
   */
  measured: number;
  abs_error_raw: number;
  abs_error_calibrated: number;
  /** The same sums signed (estimate − measured): a bias rather than a spread. */
  error_raw: number;
  error_calibrated: number;
}

/** Turns seen before the ratios are used (by the gate and the reports). */
export const CALIBRATION_MIN_TURNS = 5;
export const CALIBRATION_BOUNDS = { min: 0.5, max: 2 } as const;
/** The step size of the least-mean-squares update: below 1, so one odd turn cannot swing it. */
const STEP = 0.5;
/** Classes (content kinds plus "request") kept per model: anything else joins "request". */
const MAX_CLASSES = 12;

export function emptyCalibration(): Calibration {
  return {
    ratios: {},
    turns: 0,
    measured: 0,
    abs_error_raw: 0,
    abs_error_calibrated: 0,
    error_raw: 0,
    error_calibrated: 0,
  };
}

const clamp = (x: number) => Math.min(CALIBRATION_BOUNDS.max, Math.max(CALIBRATION_BOUNDS.min, x));

/** Whether the ratios may be used yet. */
export function calibrationReady(c: Calibration | null | undefined): c is Calibration {
  return c !== null && c !== undefined && c.turns >= CALIBRATION_MIN_TURNS;
}

/** Provider tokens per estimated token for one class (1 before the calibration is ready). */
export function ratioOf(c: Calibration | null | undefined, cls: string): number {
  if (!calibrationReady(c)) return 1;
  return c.ratios[cls] ?? c.ratios.request ?? 1;
}

/** The calibrated token count of estimates split by class. */
export function calibratedTokens(c: Calibration | null | undefined, est: TokenClasses): number {
  let sum = 0;
  for (const [cls, t] of Object.entries(est)) sum += t * ratioOf(c, cls);
  return Math.round(sum);
}

function total(est: TokenClasses): number {
  let s = 0;
  for (const t of Object.values(est)) s += t;
  return s;
}

/**
 * One turn learned: `estimate` is the request as sent, split by class; `measured` the prompt tokens
 * the provider billed for it (every rate). Returns a new state; a sample with nothing to learn from
 * (no estimate, no measure, or a factor of more than 4 apart, which is not the same request) leaves
 * it as it was.
 */
export function calibrate(
  state: Calibration | null | undefined,
  estimate: TokenClasses,
  measured: number,
): Calibration {
  const c: Calibration = structuredClone(state ?? emptyCalibration());
  const est = Object.fromEntries(
    Object.entries(estimate).filter(([, t]) => Number.isFinite(t) && t > 0),
  );
  const raw = total(est);
  if (!(measured > 0) || raw <= 0 || measured > raw * 4 || measured * 4 < raw) return c;
  if (calibrationReady(c)) {
    const predicted = calibratedTokens(c, est);
    c.measured += measured;
    c.abs_error_raw += Math.abs(raw - measured);
    c.abs_error_calibrated += Math.abs(predicted - measured);
    c.error_raw += raw - measured;
    c.error_calibrated += predicted - measured;
  }
  // The prediction with the ratios as they stand (1 for a class not seen yet).
  let predicted = 0;
  let norm = 0;
  for (const [cls, t] of Object.entries(est)) {
    predicted += t * (c.ratios[cls] ?? 1);
    norm += t * t;
  }
  const err = measured - predicted;
  for (const [cls, t] of Object.entries(est)) {
    const known = Object.hasOwn(c.ratios, cls);
    if (!known && Object.keys(c.ratios).length >= MAX_CLASSES) continue;
    c.ratios[cls] = clamp((c.ratios[cls] ?? 1) + (STEP * err * t) / norm);
  }
  c.turns++;
  return c;
}

/** The estimates' error before and after calibration, as shares of the measured tokens. */
export function calibrationErrors(c: Calibration | null | undefined): {
  turns: number;
  error_raw: number | null;
  error_calibrated: number | null;
  bias_raw: number | null;
  bias_calibrated: number | null;
} {
  const m = c?.measured ?? 0;
  const share = (x: number | undefined) => (m > 0 && x !== undefined ? x / m : null);
  return {
    turns: c?.turns ?? 0,
    error_raw: share(c?.abs_error_raw),
    error_calibrated: share(c?.abs_error_calibrated),
    bias_raw: share(c?.error_raw),
    bias_calibrated: share(c?.error_calibrated),
  };
}
