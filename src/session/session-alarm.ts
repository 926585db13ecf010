/**
 * The SessionDO's purges and its one alarm's work: `destroy` and `purged` (the generation moves
 * first, lifecycle.ts), then what the alarm serves: a purge whose caller never confirmed it,
 * retention, the tombstone's sweep, bodies noted for deletion, and the tenant statistics'
 * exchange.
 */
import type { SessionRef } from "../core/types.ts";
import { KvIndex } from "../store/kv.ts";
import { purgeBodies } from "../store/purge.ts";
import { R2Ledger } from "../store/r2.ts";
import { TURN_LEASE_MS } from "../store/turn-protocol.ts";
import { endPurge, PURGE_GRACE_MS, startPurge, sweepAt } from "./lifecycle.ts";
import type { SessionLife, SessionParts } from "./session-life.ts";
import { indexTtlSeconds, isExpired } from "./state.ts";
import { statsExchange } from "./tenant-shards.ts";

export class SessionAlarm {
  readonly #p: SessionParts;
  readonly #life: SessionLife;

  constructor(parts: SessionParts, life: SessionLife) {
    this.#p = parts;
    this.#life = life;
  }

  /**
   * Starts a purge: the generation moves (no turn that began earlier can commit), the session's
   * own tables are emptied, and new turns pass through until `purged` (or the alarm, should the
   * caller never confirm). Returns the mem_ids the records named, for the caller's purge.
   */
  async destroy(ref: SessionRef): Promise<string[]> {
    const t = this.#p.t;
    t.open(true);
    const named = this.#p.storage.transactionSync(() => {
      const row = t.row(ref);
      const names = row === null ? [] : t.memIds();
      this.#life.set(startPurge(this.#life.get(), Date.now()), ref);
      // The held turn lines belong to the session being purged (its held samples, the tenant's, are
      // written: the sweep sends them).
      this.#p.held.drop();
      t.clearSession();
      return names;
    });
    await this.#life.arm();
    return named;
  }

  /** The caller's purge is done: turns may write again; a tombstone waits for the sweep. */
  async purged(ref: SessionRef): Promise<void> {
    const life = this.#life.get();
    if (life.purging_since === null) return;
    this.#life.set(endPurge(life, Date.now()), ref);
    await this.#life.arm();
  }

  /** The alarm: whatever is due, then the next alarm. */
  async run(): Promise<void> {
    const { t, storage } = this.#p;
    // Read afresh: the alarm decides what to purge from what storage holds.
    this.#life.forget();
    if (t.open(false) === null) return;
    // Retention reads the last activity, which held lines may have moved; the exchange sends the
    // written samples, the held ones among them.
    this.#p.held.flush();
    const ref = this.#life.ref() ?? t.row() ?? undefined;
    const now = Date.now();
    const life = this.#life.get();
    const row = t.row();
    if (ref !== undefined) {
      // A purge nobody confirmed (its caller failed half way): purge again, then confirm.
      if (life.purging_since !== null && now >= life.purging_since + PURGE_GRACE_MS) {
        await this.#purgeBackends(ref, []);
        await this.purged(ref);
        return this.#life.rearm();
      }
      // Retention: the generation moves first, then the backends are purged.
      if (row !== null && isExpired(now, row.last_active, this.#life.retention())) {
        await this.destroy(ref);
        await this.#purgeBackends(ref, []);
        await this.purged(ref);
        return this.#life.rearm();
      }
      // The tombstone: a lease after the purge and the last begin since, nothing older can write.
      const sweep = sweepAt(life);
      if (row === null && sweep !== null && now >= sweep) {
        this.#life.set(startPurge(life, now), ref);
        await this.#purgeBackends(ref, []);
        await this.#syncStats(ref);
        if (t.row() === null) {
          await storage.deleteAlarm();
          await storage.deleteAll();
          t.forget();
          this.#life.forget();
          return;
        }
        await this.purged(ref);
      }
      await this.#deleteOrphans(ref);
      await this.#syncStats(ref);
    }
    await this.#life.rearm();
  }

  #purgeBackends(ref: SessionRef, named: readonly string[]): Promise<void> {
    return purgeBodies(ref, named, new R2Ledger(this.#p.env.LEDGER), this.#index());
  }

  #index(): KvIndex {
    return new KvIndex(this.#p.env.INDEX, {
      ttlSeconds: indexTtlSeconds(this.#life.retention()),
    });
  }

  /**
   * Deletes the bodies noted for deletion. A record naming one is refused meanwhile, and until a
   * lease after it is gone (a turn that began before may have written it again).
   */
  async #deleteOrphans(ref: SessionRef): Promise<void> {
    const t = this.#p.t;
    const due = t.sql
      .exec<{ mem_id: string }>("SELECT mem_id FROM orphans WHERE deleted_at IS NULL LIMIT 1000")
      .toArray()
      .map((r) => r.mem_id);
    if (due.length > 0) {
      await this.#index().deleteBodies(ref, due);
      await new R2Ledger(this.#p.env.LEDGER).delete(ref, due);
      const now = Date.now();
      for (const memId of due)
        t.sql.exec(
          "UPDATE orphans SET deleted_at = ? WHERE mem_id = ? AND deleted_at IS NULL",
          now,
          memId,
        );
    }
    t.sql.exec(
      "DELETE FROM orphans WHERE deleted_at IS NOT NULL AND deleted_at < ?",
      Date.now() - TURN_LEASE_MS,
    );
  }

  /** Best effort: a failed exchange leaves the deltas pending for the next alarm. */
  async #syncStats(ref: SessionRef): Promise<void> {
    const copy = this.#p.stats;
    if (copy.due() === null) return;
    try {
      await copy.sync(statsExchange(this.#p.env, ref), Date.now);
    } catch (cause) {
      console.error(
        `[edge-offload] the tenant statistics exchange failed: ${cause instanceof Error ? cause.message.slice(0, 200) : "unknown error"}`,
      );
    }
  }
}
