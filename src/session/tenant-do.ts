/**
 * TenantDO: the learning statistics across a tenant's sessions (offloads and recalls per tool name)
 * that the adaptive gate reads. Counts only, never content. One class, two roles by name:
 *
 * - the tenant's object (`idFromName(tenant)`): the totals (`stats`, `add`, and `merge`, which does
 *   both in one call);
 * - a shard (`<tenant>/shard/<k>`, tenant-shards.ts): sessions call `exchange` on it (their deltas
 *   in, the counts they ask for out); it keeps the deltas pending and a copy of the totals, and its
 *   alarm merges both with the tenant's object at most once per SHARD_SYNC_MS.
 */
import { DurableObject } from "cloudflare:workers";
import type { ToolStats } from "../core/ports.ts";
import type { Env } from "../env.ts";
import { addCounts, type Counts, nonZero, readCounts, setCounts, settleCounts } from "./counts.ts";
import { SHARD_SYNC_MS } from "./tenant-shards.ts";

export class TenantDO extends DurableObject<Env> {
  #ready = false;

  get #sql(): SqlStorage {
    const sql = this.ctx.storage.sql;
    if (!this.#ready) {
      for (const table of ["tool_stats", "shard_copy", "shard_pending"])
        sql.exec(
          `CREATE TABLE IF NOT EXISTS ${table} (tool TEXT PRIMARY KEY, offloaded INTEGER NOT NULL DEFAULT 0, recalls INTEGER NOT NULL DEFAULT 0)`,
        );
      sql.exec("CREATE TABLE IF NOT EXISTS shard_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
      this.#ready = true;
    }
    return sql;
  }

  /** The tenant's totals for `toolNames`. */
  stats(toolNames: readonly string[]): Counts {
    if (toolNames.length === 0) return {};
    return readCounts(this.#sql, "tool_stats", toolNames);
  }

  add(deltas: Record<string, Partial<ToolStats>>): void {
    this.ctx.storage.transactionSync(() => addCounts(this.#sql, "tool_stats", deltas));
  }

  /** The tenant's object: adds a shard's deltas and answers the totals of `names`, in one call. */
  merge(deltas: Record<string, Partial<ToolStats>>, names: readonly string[]): Counts {
    this.add(deltas);
    return this.stats(names);
  }

  /**
   * A shard: takes a session's deltas and answers the counts of `names` as the shard knows them
   * (its copy of the tenant's totals plus what is pending here). A copy older than SHARD_SYNC_MS,
   * or lacking a name, is refreshed first, together with sending the pending deltas; otherwise the
   * deltas wait for the alarm. Either way the tenant's object hears from a shard at most about
   * once per SHARD_SYNC_MS.
   */
  async exchange(
    tenant: string,
    deltas: Record<string, Partial<ToolStats>>,
    names: readonly string[],
  ): Promise<Record<string, ToolStats>> {
    this.#setMeta("tenant", tenant);
    const sql = this.#sql;
    const added = this.ctx.storage.transactionSync(() => addCounts(sql, "shard_pending", deltas));
    const known = readCounts(sql, "shard_copy", names);
    const stale = Date.now() - Number(this.#meta("copy_at") ?? 0) > SHARD_SYNC_MS;
    if (names.length > 0 && (stale || names.some((n) => known[n] === undefined)))
      await this.#sync(tenant, names);
    else if (added && (await this.ctx.storage.getAlarm()) === null)
      await this.ctx.storage.setAlarm(Date.now() + SHARD_SYNC_MS);
    const out = readCounts(sql, "shard_copy", names);
    for (const [tool, p] of Object.entries(readCounts(sql, "shard_pending", names))) {
      const o = (out[tool] ??= { offloaded: 0, recalls: 0 });
      o.offloaded += p.offloaded;
      o.recalls += p.recalls;
    }
    // A name never offloaded reads as unknown (the copy keeps it only to know it asked).
    return nonZero(out);
  }

  #meta(key: string): string | undefined {
    return this.#sql
      .exec<{ value: string }>("SELECT value FROM shard_meta WHERE key = ?", key)
      .toArray()[0]?.value;
  }

  #setMeta(key: string, value: string): void {
    this.#sql.exec(
      "INSERT INTO shard_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      key,
      value,
    );
  }

  #root(tenant: string): DurableObjectStub<TenantDO> {
    return this.env.TENANTS.get(this.env.TENANTS.idFromName(tenant));
  }

  /** One sync at a time: calls arriving meanwhile wait for it. */
  #syncing: Promise<void> | null = null;

  #sync(tenant: string, names: readonly string[]): Promise<void> {
    this.#syncing ??= this.#merge(tenant, names).finally(() => {
      this.#syncing = null;
    });
    return this.#syncing;
  }

  /**
   * The pending deltas to the tenant's object and the copy refreshed, in one call. Deltas that
   * arrive while it is out stay pending (the alarm sends them).
   */
  async #merge(tenant: string, extra: readonly string[]): Promise<void> {
    const sql = this.#sql;
    const sent = readCounts(sql, "shard_pending");
    const names = [...new Set([...Object.keys(readCounts(sql, "shard_copy")), ...extra])];
    const totals = await this.#root(tenant).merge(sent, names);
    const left = this.ctx.storage.transactionSync(() => {
      const zero = { offloaded: 0, recalls: 0 };
      setCounts(sql, "shard_copy", {
        ...Object.fromEntries(names.map((n) => [n, zero])),
        ...totals,
      });
      this.#setMeta("copy_at", String(Date.now()));
      return settleCounts(sql, "shard_pending", sent);
    });
    if (left) await this.ctx.storage.setAlarm(Date.now() + SHARD_SYNC_MS);
  }

  /** A shard's deltas leave within SHARD_SYNC_MS even when no session asks it anything. */
  override async alarm(): Promise<void> {
    const tenant = this.#meta("tenant");
    if (tenant !== undefined) await this.#sync(tenant, []);
  }
}
