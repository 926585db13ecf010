/**
 * Calibrated estimates: the ratio of provider-counted to estimated tokens, learned per tenant and
 * model from turns whose usage we measured, per class of content (each kind of tool result, and
 * "request" for everything else: messages, stubs, tools, framing). A result's ratio also moves with
 * its whitespace share (runs of spaces tokenize cheaply: indented JSON packs more chars per token
 * than compact JSON), as a slope per kind: ratio = base + slope · (ws − WS_PIVOT). One provider number, the prompt
 * tokens of the call we sent, is explained by the estimates of its parts, so the ratios are a
 * least-squares fit over the turns seen: damped (older turns fade by FORGET per turn, and a ridge
 * pulls every ratio toward 1, so a class seen once or one odd turn cannot swing it), bounded
 * (0.5–2), and not used before CALIBRATION_MIN_TURNS. Pure: the stores keep the state and apply
 * `calibrate` atomically.
 */

/** The classes a request's estimated tokens are split into: content kinds, and "request". */
export type TokenClasses = Record<string, number>;

/**
 * One measured turn to learn from: the request as sent, estimated per class, and the prompt tokens
 * the provider billed for it. Samples travel in batches from sessions to their tenant.
 */
export interface CalibrationSample {
  /** The price-table model id. */
  model: string;
  estimate: TokenClasses;
  measured: number;
}

export interface Calibration {
  /** Provider tokens per estimated token, per class (a missing class: the request's). */
  ratios: Record<string, number>;
  /**
   * The fit's sufficient statistics, faded per turn: classes in order, Σ e·eᵀ and Σ m·e (in
   * thousands of tokens).
   */
  classes: string[];
  gram: number[][];
  moments: number[];
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

/** The whitespace share a kind's base ratio is read at; its slope class is named `${kind}~ws`. */
export const WS_PIVOT = 0.2;
const SLOPE = "~ws";
const isSlope = (cls: string) => cls.endsWith(SLOPE);
export const SLOPE_BOUNDS = { min: -3, max: 3 } as const;

/**
 * A result's estimated tokens as calibration classes: its kind's, and (when its whitespace share is
 * known) the slope's term.
 */
export function resultClasses(
  kind: string,
  tokens: number,
  ws: number | undefined,
): [string, number][] {
  return ws === undefined
    ? [[kind, tokens]]
    : [
        [kind, tokens],
        [`${kind}${SLOPE}`, tokens * (ws - WS_PIVOT)],
      ];
}

/** Turns seen before the ratios are used (by the gate and the reports). */
export const CALIBRATION_MIN_TURNS = 5;
export const CALIBRATION_BOUNDS = { min: 0.5, max: 2 } as const;
/** Each turn's weight fades by this factor per later turn (about the last 50 turns count). */
const FORGET = 0.98;
/** The ridge toward a ratio of 1, as a share of the mean diagonal of the fit. */
const RIDGE = 0.001;
const UNIT = 1000;
/** Classes (content kinds, their slopes, "request") kept per model: more join "request". */
const MAX_CLASSES = 24;

export function emptyCalibration(): Calibration {
  return {
    ratios: {},
    classes: [],
    gram: [],
    moments: [],
    turns: 0,
    measured: 0,
    abs_error_raw: 0,
    abs_error_calibrated: 0,
    error_raw: 0,
    error_calibrated: 0,
  };
}

const clamp = (x: number) => Math.min(CALIBRATION_BOUNDS.max, Math.max(CALIBRATION_BOUNDS.min, x));
const clampSlope = (x: number) => Math.min(SLOPE_BOUNDS.max, Math.max(SLOPE_BOUNDS.min, x));

/** Whether the ratios may be used yet. */
export function calibrationReady(c: Calibration | null | undefined): c is Calibration {
  return c !== null && c !== undefined && c.turns >= CALIBRATION_MIN_TURNS;
}

/**
 * Provider tokens per estimated token for one class (1 before the calibration is ready; a slope
 * class, 0).
 */
export function ratioOf(c: Calibration | null | undefined, cls: string): number {
  if (isSlope(cls)) return calibrationReady(c) ? (c.ratios[cls] ?? 0) : 0;
  if (!calibrationReady(c)) return 1;
  return c.ratios[cls] ?? c.ratios.request ?? 1;
}

/** A result's ratio: its kind's at its whitespace share, within the bounds. */
export function resultRatio(
  c: Calibration | null | undefined,
  kind: string,
  ws: number | undefined,
): number {
  if (!calibrationReady(c)) return 1;
  const base = ratioOf(c, kind);
  return ws === undefined ? base : clamp(base + ratioOf(c, `${kind}${SLOPE}`) * (ws - WS_PIVOT));
}

/** The calibrated token count of estimates split by class. */
export function calibratedTokens(c: Calibration | null | undefined, est: TokenClasses): number {
  let sum = 0;
  for (const [cls, t] of Object.entries(est)) sum += t * ratioOf(c, cls);
  return Math.round(sum);
}

/**
 * Tokens a report claims were taken out, from their estimates: each class at its fitted ratio where
 * the fit has seen the class; a class it never saw keeps its own estimate, scaled by the request's
 * ratio only downwards. A result stubbed on the call it arrived is never sent, so its kind may
 * never be measured: a saving is never inflated by a ratio learned on other text.
 */
export function claimedTokens(c: Calibration | null | undefined, est: TokenClasses): number {
  let sum = 0;
  for (const [cls, t] of Object.entries(est)) {
    const r = ratioOf(c, cls);
    const seen = !calibrationReady(c) || isSlope(cls) || cls in c.ratios;
    sum += t * (seen ? r : Math.min(1, r));
  }
  return Math.round(sum);
}

/** The estimate's own count: the slope terms are corrections, not tokens. */
function total(est: TokenClasses): number {
  let s = 0;
  for (const [cls, t] of Object.entries(est)) if (!isSlope(cls)) s += t;
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
    Object.entries(estimate).filter(
      ([cls, t]) => Number.isFinite(t) && (t > 0 || (isSlope(cls) && t !== 0)),
    ),
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
  refit(c, est, measured);
  c.turns++;
  return c;
}

/** Adds one turn to the fit and solves it for the ratios. */
function refit(c: Calibration, est: TokenClasses, measured: number): void {
  // A class beyond the cap is counted as request text.
  const folded: TokenClasses = {};
  for (const [cls, t] of Object.entries(est)) {
    const known = c.classes.includes(cls) || c.classes.length < MAX_CLASSES;
    // A slope past the cap is dropped (its kind's base still counts the tokens).
    if (!known && isSlope(cls)) continue;
    const into = known ? cls : "request";
    if (!c.classes.includes(into)) {
      c.classes.push(into);
      for (const row of c.gram) row.push(0);
      c.gram.push(new Array<number>(c.classes.length).fill(0));
      c.moments.push(0);
    }
    folded[into] = (folded[into] ?? 0) + t;
  }
  const k = c.classes.length;
  const e = c.classes.map((cls) => (folded[cls] ?? 0) / UNIT);
  const m = measured / UNIT;
  for (let i = 0; i < k; i++) {
    c.moments[i] = c.moments[i]! * FORGET + m * e[i]!;
    for (let j = 0; j < k; j++) c.gram[i]![j] = c.gram[i]![j]! * FORGET + e[i]! * e[j]!;
  }
  let trace = 0;
  for (let i = 0; i < k; i++) trace += c.gram[i]![i]!;
  const ridge = (RIDGE * trace) / k;
  // The ridge pulls a base ratio toward 1 and a slope toward 0.
  const a = c.gram.map((row, i) => row.map((v, j) => v + (i === j ? ridge : 0)));
  const b = c.moments.map((v, i) => v + (isSlope(c.classes[i]!) ? 0 : ridge));
  const r = solve(a, b);
  if (r === null) return;
  c.classes.forEach((cls, i) => {
    c.ratios[cls] = Math.round((isSlope(cls) ? clampSlope(r[i]!) : clamp(r[i]!)) * 10_000) / 10_000;
  });
}

/** Gaussian elimination with partial pivoting; null when singular. */
function solve(a: number[][], b: number[]): number[] | null {
  const n = b.length;
  const m = a.map((row, i) => [...row, b[i]!]);
  for (let col = 0; col < n; col++) {
    let pivot = col;
    for (let r = col + 1; r < n; r++)
      if (Math.abs(m[r]![col]!) > Math.abs(m[pivot]![col]!)) pivot = r;
    if (Math.abs(m[pivot]![col]!) < 1e-12) return null;
    [m[col], m[pivot]] = [m[pivot]!, m[col]!];
    for (let r = 0; r < n; r++) {
      if (r === col) continue;
      const f = m[r]![col]! / m[col]![col]!;
      for (let c = col; c <= n; c++) m[r]![c]! -= f * m[col]![c]!;
    }
  }
  return m.map((row, i) => row[n]! / row[i]!);
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
