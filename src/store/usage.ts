/**
 * The rules for keeping a turn's measured usage on its log line, shared by the SQL session state
 * and its in-memory twin: the first usage a turn gets stands (a retried report of the same numbers
 * is a no-op, different numbers are a conflict), a turn is named by its log sequence number or, for
 * a client of the compact route, by the summary's turn number (the latest line of that turn), and
 * a measured turn calibrates the session's own estimates.
 */
import { promptOf, type TurnUsage } from "../core/billing.ts";
import {
  type Calibration,
  type CalibrationSample,
  calibrate,
  calibrationReady,
  claimedTokens,
} from "../core/calibration.ts";
import { resolveModel } from "../core/pricing.ts";
import type { ProxyTurnNote, TurnEstimate, TurnLog } from "../core/types.ts";

/** Which turn a usage report belongs to. */
export type TurnKey = { seq: number } | { turn: number };

/** What became of a usage report. */
export type UsageOutcome =
  | {
      status: "recorded" | "unchanged";
      /** The turn line's sequence number and its estimates (what calibration learns from). */
      seq: number;
      estimate: TurnEstimate | null;
    }
  | { status: "conflict"; seq: number }
  | { status: "unknown_turn" };

/** The line a key names, among lines oldest first. */
export function findTurn<T extends { seq: number; log: Pick<TurnLog, "turn"> }>(
  lines: readonly T[],
  key: TurnKey,
): T | undefined {
  if ("seq" in key) return lines.find((l) => l.seq === key.seq);
  for (let i = lines.length - 1; i >= 0; i--) if (lines[i]!.log.turn === key.turn) return lines[i];
  return undefined;
}

function sameUsage(a: TurnUsage, b: TurnUsage): boolean {
  const t = (u: TurnUsage) => JSON.stringify([u.calls, u.tokens, u.first, u.answer_output]);
  return t(a) === t(b);
}

/** The line with the usage kept, and the outcome; `null` line: nothing to write. */
export function withUsage(
  seq: number,
  log: TurnLog,
  usage: TurnUsage,
): { log: TurnLog | null; outcome: UsageOutcome } {
  if (log.usage !== undefined)
    return sameUsage(log.usage, usage)
      ? { log: null, outcome: { status: "unchanged", seq, estimate: log.estimate ?? null } }
      : { log: null, outcome: { status: "conflict", seq } };
  // Priced as the turn was, unless the report named its model.
  const model = usage.model ?? log.estimate?.model ?? null;
  return {
    log: { ...log, usage: { ...structuredClone(usage), model } },
    outcome: { status: "recorded", seq, estimate: log.estimate ?? null },
  };
}

/** Models whose calibration a session keeps at most (a session talks to a few). */
export const SESSION_MODELS_LIMIT = 32;

/**
 * The sample a measured turn teaches: the client's own call against the request as sent (the
 * hops' calls are requests we built, not estimated), for the usage's price-table model; null when
 * there is no estimate or the model is not priced.
 */
export function sampleOf(
  usage: TurnUsage,
  estimate: TurnEstimate | null,
): CalibrationSample | null {
  const model = estimate === null ? undefined : resolveModel(usage.model ?? estimate.model)?.id;
  if (estimate === null || model === undefined) return null;
  return { model, estimate: estimate.sent, measured: promptOf(usage.first) };
}

/**
 * A measured turn calibrates the session's own estimates for its model: the calibrations with that
 * model's refined (the others as they were, at most SESSION_MODELS_LIMIT models), and the usage
 * with the removed tokens at the refined calibration once it is ready.
 */
export function learnUsage(
  calibrations: Readonly<Record<string, Calibration>>,
  usage: TurnUsage,
  estimate: TurnEstimate | null,
): { calibrations: Record<string, Calibration>; usage: TurnUsage } {
  const sample = sampleOf(usage, estimate);
  if (sample === null || estimate === null) return { calibrations: { ...calibrations }, usage };
  const models = Object.keys(calibrations);
  if (!(sample.model in calibrations) && models.length >= SESSION_MODELS_LIMIT)
    return { calibrations: { ...calibrations }, usage };
  const cal = calibrate(calibrations[sample.model] ?? null, sample.estimate, sample.measured);
  return {
    calibrations: { ...calibrations, [sample.model]: cal },
    usage: calibrationReady(cal)
      ? { ...usage, removed_calibrated: claimedTokens(cal, estimate.removed) }
      : usage,
  };
}

/** What a finished turn adds to its log line. */
export interface LineFinish {
  proxy?: ProxyTurnNote | undefined;
  usage?: TurnUsage | undefined;
}

/**
 * A turn's line once it is finished: the proxy's note on it, and the provider's usage unless the
 * line has usage already (learned once into the session's calibrations, returned when they moved).
 */
export function finishedLine(
  seq: number,
  line: TurnLog,
  finish: LineFinish,
  calibrations: Readonly<Record<string, Calibration>>,
): { log: TurnLog; calibrations: Record<string, Calibration> | null } {
  const log: TurnLog =
    finish.proxy === undefined
      ? line
      : {
          ...line,
          proxy: {
            hops: finish.proxy.hops,
            recalls: finish.proxy.recalls,
            exhausted: finish.proxy.exhausted,
          },
        };
  if (finish.usage === undefined || log.usage !== undefined) return { log, calibrations: null };
  const learned = learnUsage(calibrations, finish.usage, log.estimate ?? null);
  return {
    log: withUsage(seq, log, learned.usage).log ?? log,
    calibrations: learned.calibrations,
  };
}
