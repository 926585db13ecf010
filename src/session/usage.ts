/**
 * The rules for keeping a turn's measured usage on its log line, shared by the SessionDO and its
 * in-memory twin: the first usage a turn gets stands (a retried report of the same numbers is a
 * no-op, different numbers are a conflict), and a turn is named by its log sequence number or, for
 * a client of the compact route, by the summary's turn number (the latest line of that turn).
 */
import type { TurnUsage } from "../core/billing.ts";
import type { TurnEstimate, TurnLog } from "../core/types.ts";

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
