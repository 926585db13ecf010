/**
 * A session's lifecycle, free of storage and clocks: its generation (bumped by every delete and
 * retention purge, so a turn that began before one cannot commit after it), the lease a turn holds
 * on it, the purge in progress (new turns pass through meanwhile, so no body is written while a
 * purge lists and deletes), the tombstone a purge leaves (swept once no turn that began before it
 * can still write) and bodies noted for deletion (a refused commit's). The SQL session state and
 * its in-memory twin both follow these rules.
 */

/** How long a turn may run between its begin and its commit. */
export const TURN_LEASE_MS = 5 * 60 * 1000;
/**
 * A turn starts no ledger write later than this after it began: a write started in time lands
 * before its lease ends, so the sweep a lease after a delete sees it.
 */
export const PUT_DEADLINE_MS = 4 * 60 * 1000;

/** A turn's hold on the session's generation, from its begin to its commit. */
export interface TurnLease {
  /** The session's generation: bumped by every delete and retention purge. */
  epoch: number;
  /** When the turn began, by the session state's clock (epoch ms). */
  at: number;
}

/** Why a commit was refused: the session was deleted (or purged) since, or the turn ran too long. */
export type Refusal = "deleted" | "expired";

/** Whether a commit under `lease` may still write, given the session's lifecycle now. */
export function refusalOf(lease: TurnLease | null, life: Lifecycle, now: number): Refusal | null {
  if (lease === null || life.purging_since !== null || lease.epoch !== life.epoch) return "deleted";
  return now - lease.at > TURN_LEASE_MS ? "expired" : null;
}

/**
 * How long a purge may wait for the caller that started it to confirm (`purged`) before the object
 * purges again by itself.
 */
export const PURGE_GRACE_MS = 60 * 1000;
/** A body noted for deletion is deleted this soon (the alarm batches several). */
export const ORPHAN_DELAY_MS = 1000;

export interface Lifecycle {
  /** The generation; 0 until the first purge. */
  epoch: number;
  /** A purge started (epoch ms) and not yet confirmed done. */
  purging_since: number | null;
  /** When the last purge finished, while the session has not been written again. */
  tombstone_at: number | null;
  /** The latest begin while tombstoned (a turn that may still write under the new generation). */
  last_begin: number | null;
}

export const FRESH_LIFECYCLE: Lifecycle = {
  epoch: 0,
  purging_since: null,
  tombstone_at: null,
  last_begin: null,
};

/**
 * Deleted (being purged, or tombstoned): a late write of a call that began before (a recall's
 * count, a proxied call's hops) must not bring the session back.
 */
export function isGone(life: Lifecycle): boolean {
  return life.purging_since !== null || life.tombstone_at !== null;
}

/** A turn's lease now: none while a purge runs (the turn must not write). */
export function leaseOf(life: Lifecycle, now: number): TurnLease | null {
  return life.purging_since !== null ? null : { epoch: life.epoch, at: now };
}

/** The lifecycle once a purge starts: the generation moves first, so no older turn can commit. */
export function startPurge(life: Lifecycle, now: number): Lifecycle {
  return { epoch: life.epoch + 1, purging_since: now, tombstone_at: null, last_begin: null };
}

/** The lifecycle once the purge is done: a tombstone until no turn of any generation can write. */
export function endPurge(life: Lifecycle, now: number): Lifecycle {
  return { ...life, purging_since: null, tombstone_at: now, last_begin: null };
}

/**
 * When the tombstone may be swept (its session's prefix purged once more, then the object
 * emptied): a lease after the purge and after the latest begin since, or null when there is none.
 */
export function sweepAt(life: Lifecycle): number | null {
  if (life.tombstone_at === null || life.purging_since !== null) return null;
  return Math.max(life.tombstone_at, life.last_begin ?? 0) + TURN_LEASE_MS;
}

/**
 * A body a commit names may be written only when it is not noted for deletion, or when its
 * deletion finished before the turn began (its write then landed after the delete).
 */
export function orphanBlocks(
  orphan: { deleted_at: number | null } | undefined,
  lease: TurnLease,
): boolean {
  if (orphan === undefined) return false;
  return orphan.deleted_at === null || lease.at <= orphan.deleted_at;
}

/** The earliest of the due times (null ones ignored), or null. */
export function earliest(...times: (number | null | undefined)[]): number | null {
  let out: number | null = null;
  for (const t of times) if (t !== null && t !== undefined && (out === null || t < out)) out = t;
  return out;
}

/** Bodies a refused commit wrote that no standing record names: noted for deletion. */
export function orphansOf(
  records: readonly { mem_id: string | null; action: string }[],
  named: (memId: string) => boolean,
): string[] {
  const out = new Set<string>();
  for (const r of records)
    if (r.mem_id !== null && r.action !== "kept" && !named(r.mem_id)) out.add(r.mem_id);
  return [...out];
}

/**
 * The records of a commit that may stand: a record naming a body noted for deletion is left out
 * (not saved: its result is kept full, and decided again once the deletion is done).
 */
export function admitted<R extends { mem_id: string | null }>(
  records: readonly R[],
  orphan: (memId: string) => { deleted_at: number | null } | undefined,
  lease: TurnLease,
): R[] {
  return records.filter((r) => r.mem_id === null || !orphanBlocks(orphan(r.mem_id), lease));
}
