/**
 * TenantDO: the learning statistics across a tenant's sessions (offloads and recalls per tool name)
 * that the adaptive gate reads. Counts only, never content. One class, two roles by name:
 *
 * - the tenant's object (`idFromName(tenant)`): the totals (`stats`, `add`, and `merge`, which does
 *   both in one call) and the estimates' calibration per model (`merge` learns samples in order);
 * - a shard (`<tenant>/shard/<k>`, tenant-shards.ts): sessions call `exchange` on it (their deltas
 *   and calibration samples in, the counts they ask for and the calibration out); it keeps what
 *   came in pending and a copy of the tenant's answers, and merges both with the tenant's object at
 *   most about once per SHARD_SYNC_MS.
 */
import { DurableObject } from "cloudflare:workers";
import { type Calibration, type CalibrationSample, calibrate } from "../core/calibration.ts";
import type { ToolStats } from "../core/ports.ts";
import type { Env } from "../env.ts";
import { addCounts, type Counts, nonZero, readCounts, setCounts, settleCounts } from "./counts.ts";
import { SHARD_SYNC_MS } from "./tenant-shards.ts";

/** Calibration samples a shard (or one merge) takes at most; the oldest beyond go. */
const SHARD_SAMPLES_LIMIT = 1024;

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
      // A shard's copy of the tenant's calibration, and the samples it has not sent yet.
      sql.exec(
        "CREATE TABLE IF NOT EXISTS shard_calibration (model TEXT PRIMARY KEY, state TEXT NOT NULL)",
      );
      sql.exec(
        "CREATE TABLE IF NOT EXISTS shard_samples (seq INTEGER PRIMARY KEY AUTOINCREMENT, sample TEXT NOT NULL)",
      );
      // The estimates' calibration per model (calibration.ts): one small JSON state per model.
      sql.exec(
        "CREATE TABLE IF NOT EXISTS calibration (model TEXT PRIMARY KEY, state TEXT NOT NULL)",
      );
      this.#ready = true;
    }
    return sql;
  }

  /** The tenant's totals for `toolNames`. */
  stats(toolNames: readonly string[]): Counts {
    if (toolNames.length === 0) return {};
    return readCounts(this.#sql, "tool_stats", toolNames);
  }

  calibration(model: string): Calibration | null {
    const row = this.#sql
      .exec<{ state: string }>("SELECT state FROM calibration WHERE model = ?", model)
      .toArray()[0];
    return row === undefined ? null : (JSON.parse(row.state) as Calibration);
  }

  calibrations(): Record<string, Calibration> {
    return this.#states("calibration");
  }

  #states(table: "calibration" | "shard_calibration"): Record<string, Calibration> {
    return Object.fromEntries(
      this.#sql
        .exec<{ model: string; state: string }>(`SELECT model, state FROM ${table} ORDER BY model`)
        .toArray()
        .map((r) => [r.model, JSON.parse(r.state) as Calibration]),
    );
  }

  /** One measured turn learned, read and written in one transaction. */
  learnCalibration(model: string, estimate: Record<string, number>, measured: number): Calibration {
    return this.ctx.storage.transactionSync(() => {
      const next = calibrate(this.calibration(model), estimate, measured);
      this.#sql.exec(
        "INSERT INTO calibration (model, state) VALUES (?, ?) ON CONFLICT (model) DO UPDATE SET state = excluded.state",
        model,
        JSON.stringify(next),
      );
      return next;
    });
  }

  add(deltas: Record<string, Partial<ToolStats>>): void {
    this.ctx.storage.transactionSync(() => addCounts(this.#sql, "tool_stats", deltas));
  }

  /**
   * The tenant's object: adds a shard's deltas, learns its calibration samples in order, and answers
   * the totals of `names` and the calibration, in one call.
   */
  merge(
    deltas: Record<string, Partial<ToolStats>>,
    names: readonly string[],
    samples: readonly CalibrationSample[] = [],
  ): { counts: Counts; calibrations: Record<string, Calibration> } {
    this.add(deltas);
    for (const s of samples.slice(-SHARD_SAMPLES_LIMIT))
      this.learnCalibration(s.model, s.estimate, s.measured);
    return { counts: this.stats(names), calibrations: this.calibrations() };
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
    samples: readonly CalibrationSample[] = [],
  ): Promise<{ counts: Record<string, ToolStats>; calibrations: Record<string, Calibration> }> {
    this.#setMeta("tenant", tenant);
    const sql = this.#sql;
    const added = this.ctx.storage.transactionSync(() => {
      const counted = addCounts(sql, "shard_pending", deltas);
      for (const s of samples.slice(-SHARD_SAMPLES_LIMIT))
        sql.exec("INSERT INTO shard_samples (sample) VALUES (?)", JSON.stringify(s));
      sql.exec(
        "DELETE FROM shard_samples WHERE seq <= (SELECT max(seq) FROM shard_samples) - ?",
        SHARD_SAMPLES_LIMIT,
      );
      return counted || samples.length > 0;
    });
    const known = readCounts(sql, "shard_copy", names);
    const stale = Date.now() - Number(this.#meta("copy_at") ?? 0) > SHARD_SYNC_MS;
    // A stale copy is refreshed at once (the session waits in the background, not a turn).
    if (stale || names.some((n) => known[n] === undefined)) await this.#sync(tenant, names);
    else if (added && (await this.ctx.storage.getAlarm()) === null)
      await this.ctx.storage.setAlarm(Date.now() + SHARD_SYNC_MS);
    const out = readCounts(sql, "shard_copy", names);
    for (const [tool, p] of Object.entries(readCounts(sql, "shard_pending", names))) {
      const o = (out[tool] ??= { offloaded: 0, recalls: 0 });
      o.offloaded += p.offloaded;
      o.recalls += p.recalls;
    }
    // A name never offloaded reads as unknown (the copy keeps it only to know it asked).
    return { counts: nonZero(out), calibrations: this.#states("shard_calibration") };
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
    const samples = sql
      .exec<{ seq: number; sample: string }>("SELECT seq, sample FROM shard_samples ORDER BY seq")
      .toArray();
    const names = [...new Set([...Object.keys(readCounts(sql, "shard_copy")), ...extra])];
    const answer = await this.#root(tenant).merge(
      sent,
      names,
      samples.map((r) => JSON.parse(r.sample) as CalibrationSample),
    );
    const left = this.ctx.storage.transactionSync(() => {
      const zero = { offloaded: 0, recalls: 0 };
      setCounts(sql, "shard_copy", {
        ...Object.fromEntries(names.map((n) => [n, zero])),
        ...answer.counts,
      });
      sql.exec("DELETE FROM shard_calibration");
      for (const [model, state] of Object.entries(answer.calibrations))
        sql.exec(
          "INSERT INTO shard_calibration (model, state) VALUES (?, ?)",
          model,
          JSON.stringify(state),
        );
      const upTo = samples.at(-1)?.seq ?? 0;
      sql.exec("DELETE FROM shard_samples WHERE seq <= ?", upTo);
      this.#setMeta("copy_at", String(Date.now()));
      const more = sql.exec<{ n: number }>("SELECT count(*) AS n FROM shard_samples").one().n;
      return settleCounts(sql, "shard_pending", sent) || more > 0;
    });
    if (left) await this.ctx.storage.setAlarm(Date.now() + SHARD_SYNC_MS);
  }

  /** A shard's deltas leave within SHARD_SYNC_MS even when no session asks it anything. */
  override async alarm(): Promise<void> {
    const tenant = this.#meta("tenant");
    if (tenant !== undefined) await this.#sync(tenant, []);
  }
}
