/**
 * The SessionDO's lifecycle as the object holds it: the generation and purges (cached: only this
 * object writes them), the retention setting, and the one alarm armed for whatever is due first.
 * The parts the object's other pieces share are named here too.
 */
import type { SessionRef } from "../core/types.ts";
import type { Env } from "../env.ts";
import { TURN_LEASE_MS, type TurnLease } from "../store/turn-protocol.ts";
import type { HeldWrites } from "./held-writes.ts";
import {
  earliest,
  FRESH_LIFECYCLE,
  type Lifecycle,
  leaseOf,
  ORPHAN_DELAY_MS,
  PURGE_GRACE_MS,
  sweepAt,
} from "./lifecycle.ts";
import type { SessionRow, SessionTables } from "./session-tables.ts";
import { expiresAt, parseRetention } from "./state.ts";
import type { TenantCopy } from "./tenant-copy.ts";

/**
 * What the SessionDO's pieces share: its tables, the turn lines and calibration samples it holds,
 * its tenant copy, its storage and bindings.
 */
export interface SessionParts {
  t: SessionTables;
  held: HeldWrites;
  stats: TenantCopy;
  storage: DurableObjectStorage;
  env: Env;
}

export class SessionLife {
  readonly #p: SessionParts;
  /** Read once per object: only this object writes it. */
  #cache: Lifecycle | undefined;

  constructor(parts: SessionParts) {
    this.#p = parts;
  }

  retention(): number {
    return parseRetention(this.#p.env.OFFLOAD_RETENTION_SECONDS);
  }

  /** How stale last_active may get before a begin moves it: a quarter of the retention. */
  #activityResolution(): number {
    const retention = this.retention();
    return retention === 0 ? Number.POSITIVE_INFINITY : Math.max(1000, retention * 250);
  }

  get(): Lifecycle {
    this.#cache ??= this.#p.t.meta<Lifecycle>("lifecycle") ?? FRESH_LIFECYCLE;
    return this.#cache;
  }

  /** Read afresh on the next `get` (the alarm decides from what storage holds). */
  forget(): void {
    this.#cache = undefined;
  }

  ref(): SessionRef | undefined {
    return this.#p.t.meta<SessionRef>("ref");
  }

  /** The lifecycle changes: the ref is kept with it, so the alarm can purge without a row. */
  set(life: Lifecycle, ref: SessionRef): void {
    this.#cache = life;
    this.#p.t.setMeta("lifecycle", life);
    this.#p.t.setMeta("ref", { tenant: ref.tenant, session: ref.session });
  }

  /** When the alarm must fire next, for whatever is due first. */
  #due(): number | null {
    const t = this.#p.t;
    if (t.open(false) === null) return null;
    const life = this.get();
    const row = this.#p.held.row(t.row());
    const orphans = t.sql
      .exec<{ pending: number; oldest: number | null }>(
        "SELECT count(*) FILTER (WHERE deleted_at IS NULL) AS pending, min(deleted_at) AS oldest FROM orphans",
      )
      .one();
    return earliest(
      row === null ? null : expiresAt(row.last_active, this.retention()),
      life.purging_since === null ? null : life.purging_since + PURGE_GRACE_MS,
      row === null ? sweepAt(life) : null,
      orphans.pending > 0 ? Date.now() + ORPHAN_DELAY_MS : null,
      orphans.oldest === null ? null : orphans.oldest + TURN_LEASE_MS,
      this.#p.stats.due(),
    );
  }

  /** Arms the alarm for what is due, unless it already fires in time. */
  async arm(): Promise<void> {
    const due = this.#due();
    if (due === null) return;
    const current = await this.#p.storage.getAlarm();
    if (current === null || current > due) await this.#p.storage.setAlarm(due);
  }

  /** After the alarm's work: the next alarm for what is due, none when nothing is. */
  async rearm(): Promise<void> {
    const due = this.#due();
    if (due === null) await this.#p.storage.deleteAlarm();
    else await this.#p.storage.setAlarm(Math.max(due, Date.now() + 100));
  }

  /**
   * A turn starts reading: activity (the retention clock restarts, so no alarm purges mid-turn)
   * and, on a tombstone, a begin the sweep must wait for. Writes only where storage exists.
   */
  started(ref: SessionRef, row: SessionRow | null, now: number): TurnLease | null {
    const life = this.get();
    // The turn's commit moves last_active; a begin only does when a long turn could otherwise
    // outlast the retention it has left (a write spared on almost every turn).
    if (row !== null && now - row.last_active >= this.#activityResolution())
      this.#p.t.sql.exec("UPDATE session SET last_active = ? WHERE id = 1", now);
    else if (row === null && life.tombstone_at !== null)
      this.set({ ...life, last_begin: now }, ref);
    return leaseOf(life, now);
  }
}
