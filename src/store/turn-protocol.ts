/**
 * The storage protocol of a turn, as the session's authority (the SessionDO, its in-memory twin)
 * offers it beyond the plain `SessionStatePort`:
 *
 * - `begin`: the session's config layer, the records a request needs, the proxy's memos anchored
 *   on it and a lease, in one round trip. A steady turn needs nothing else before its answer.
 * - a lease ties a turn to the session's generation: every delete or retention purge bumps the
 *   generation first, so a commit of a turn that began before it is refused (its bodies may be
 *   gone, and the session must not come back after a 204). A turn that runs longer than
 *   `TURN_LEASE_MS` is refused too, which bounds how long after a delete a late body can land.
 * - `addRecords`: a large first sight commits its records in batches, each under the RPC budget.
 * - `purged`: the deleting caller says its purge of bodies and index entries is done; until then
 *   the session refuses new turns (they pass through), so no new body can be written while the
 *   purge lists and deletes.
 *
 * Every method is optional on the port: a store without them (an older adapter) composes as before,
 * with a config read, a load and a commit per turn and no leases.
 */
import type { OffloadConfigPatch } from "../config.ts";
import type { Calibration } from "../core/calibration.ts";
import type { ToolStats } from "../core/ports.ts";
import type { ResultRecord, SessionRef } from "../core/types.ts";
import type { ProxyMemo, TurnStart } from "../proxy/port.ts";

export type { TurnStart };

/** How long a turn may run between its begin and its commit. */
export const TURN_LEASE_MS = 5 * 60 * 1000;
/**
 * A turn starts no ledger write later than this after it began: a write started in time lands
 * before its lease ends, so the sweep a lease after a delete sees it.
 */
export const PUT_DEADLINE_MS = 4 * 60 * 1000;
/**
 * Payload budget of one call to the session's authority, each way. Workers RPC carries at most 32
 * MiB per message; records and ids are sent in batches well under it, whatever the request.
 */
export const RPC_BUDGET_BYTES = 8 * 1024 * 1024;

/** A turn's hold on the session's generation, from its begin (or load) to its commit. */
export interface TurnLease {
  /** The session's generation: bumped by every delete and retention purge. */
  epoch: number;
  /** When the turn began, by the authority's clock (epoch ms). */
  at: number;
}

/** Why a commit was refused: the session was deleted (or purged) since, or the turn ran too long. */
export type Refusal = "deleted" | "expired";

export interface BeginAsk {
  /**
   * The ids whose records the turn needs (tool_use_ids, attachment ids), or null: the caller has
   * not read the request yet and asks for the config alone.
   */
  ids: readonly string[] | null;
  /** Tool names whose learning statistics the adaptive gate needs (empty: none). */
  names: readonly string[];
  /**
   * Proxy: the ids the request carries that a memo may be anchored on. Only memos anchored on one
   * of them come back (with the records of their recall calls).
   */
  anchors?: readonly string[];
}

export interface BeginState {
  records: ResultRecord[];
  /** How many of the asked ids were answered: the rest did not fit the budget (ask `load`). */
  answered: number;
  recall_declared: boolean;
  session_tool_stats: Record<string, ToolStats>;
  /** The tenant's statistics for the asked names, from the session's copy (refreshed apart). */
  tool_stats?: Record<string, ToolStats>;
  /** The tenant's calibration per model, from the session's copy (refreshed apart). */
  calibrations?: Record<string, Calibration>;
  gap_seconds: number | null;
  idle_seconds?: number | null;
  /** Null: the session is being deleted; the turn must not write (it passes through). */
  lease: TurnLease | null;
}

export interface SessionBegin {
  /** The session's config layer, `{}` when none. */
  config: OffloadConfigPatch;
  /** Null when no ids were asked. */
  state: BeginState | null;
  /** The proxy's memos anchored on the asked anchors, oldest first. */
  memos: ProxyMemo[];
}

export interface RecordsBatch {
  records: readonly ResultRecord[];
  lease?: TurnLease | null | undefined;
  /** A shadow turn's offloads stay out of the tenant's learning statistics. */
  shadow: boolean;
}

export interface RecordsResult {
  /** The standing record of each id that stands (first writer wins); a refused one is absent. */
  records: ResultRecord[];
  /** Offloaded records inserted, per tool name. */
  offloads: Record<string, number>;
  refused?: Refusal;
}

/** What the session's authority offers beyond `SessionStatePort` (see above). */
export interface TurnProtocol {
  begin(ref: SessionRef, ask: BeginAsk): Promise<SessionBegin>;
  addRecords(ref: SessionRef, batch: RecordsBatch): Promise<RecordsResult>;
  purged(ref: SessionRef): Promise<void>;
}

/** Whether a commit under `lease` may still write, given the session's lifecycle now. */
export function refusalOf(
  lease: TurnLease | null | undefined,
  life: { epoch: number; purging: boolean },
  now: number,
): Refusal | null {
  // A commit without a lease comes from a caller that never asked for one (older adapters, tests).
  if (lease === undefined) return null;
  if (lease === null || life.purging || lease.epoch !== life.epoch) return "deleted";
  return now - lease.at > TURN_LEASE_MS ? "expired" : null;
}

/** The JSON size of a value, for batching under `RPC_BUDGET_BYTES`. */
export function sizeOf(value: unknown): number {
  return JSON.stringify(value)?.length ?? 0;
}

/** Split `items` into runs whose JSON sizes stay under `budget` (one oversized item stands alone). */
export function batches<T>(items: readonly T[], budget: number, size = sizeOf): T[][] {
  const out: T[][] = [];
  let run: T[] = [];
  let used = 0;
  for (const item of items) {
    const n = size(item) + 1;
    if (run.length > 0 && used + n > budget) {
      out.push(run);
      run = [];
      used = 0;
    }
    run.push(item);
    used += n;
  }
  if (run.length > 0) out.push(run);
  return out;
}
