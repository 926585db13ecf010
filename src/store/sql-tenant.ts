/**
 * The tenant's learning in SQL (the TenantDO's SQLite, a Cloudflare Agent's, node:sqlite,
 * Postgres): offloads and recalls per tool name, the estimates' calibration per model, summed over
 * the tenant's sessions, and the ended sessions' lengths (session-lengths.ts: a decayed histogram,
 * one row per length bucket, and the tenant's count of ended sessions that scales it). One
 * transaction per addition; a calibration sample is learned in order, the model's state read and
 * written in that transaction.
 */
import { type Calibration, calibrate } from "../core/calibration.ts";
import type { ToolStats } from "../core/ports.ts";
import type { TenantAggregate, TenantDelta, TenantLearning } from "./ports.ts";
import { endedBuckets, FORGOTTEN_WEIGHT, lengthsAddition, lengthsOf } from "./session-lengths.ts";
import { type Dialect, SQLITE, type SqlPort, SqlTables, type SqlTx } from "./sql.ts";

/** Tool names and models an aggregate answers at most (the most offloaded, the first by name). */
export const TENANT_TOOLS_LIMIT = 1024;
export const TENANT_MODELS_LIMIT = 64;
/** Samples one addition learns at most (the latest). */
const SAMPLES_LIMIT = 256;

/** The tenant learning's DDL (every statement `IF NOT EXISTS`). */
export function tenantSchema(prefix = "eo_", dialect: Dialect = SQLITE): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${prefix}tenant_tools (tenant TEXT NOT NULL, tool TEXT NOT NULL,
      offloaded BIGINT NOT NULL DEFAULT 0, recalls BIGINT NOT NULL DEFAULT 0,
      PRIMARY KEY (tenant, tool))${dialect.table}`,
    `CREATE TABLE IF NOT EXISTS ${prefix}tenant_calibration (tenant TEXT NOT NULL,
      model TEXT NOT NULL, state TEXT NOT NULL, PRIMARY KEY (tenant, model))${dialect.table}`,
    `CREATE TABLE IF NOT EXISTS ${prefix}tenant_lengths (tenant TEXT NOT NULL,
      calls BIGINT NOT NULL, weight DOUBLE PRECISION NOT NULL, PRIMARY KEY (tenant, calls))${dialect.table}`,
    // Last: the tables' probe, so a database an earlier build made gets the tables it lacks.
    `CREATE TABLE IF NOT EXISTS ${prefix}tenant_ended (tenant TEXT NOT NULL,
      sessions BIGINT NOT NULL, PRIMARY KEY (tenant))${dialect.table}`,
  ];
}

const whole = (n: number | undefined) => Math.max(0, Math.trunc(n ?? 0));

/** The tenant's learning in a SQL database (see above). */
export class SqlTenantLearning implements TenantLearning {
  readonly #sql: SqlPort;
  readonly #prefix: string;
  readonly #dialect: Dialect;
  readonly #tables: SqlTables;

  constructor(sql: SqlPort, options: { prefix?: string; dialect?: Dialect } = {}) {
    this.#sql = sql;
    this.#prefix = options.prefix ?? "eo_";
    this.#dialect = options.dialect ?? SQLITE;
    this.#tables = new SqlTables(
      sql,
      `${this.#prefix}tenant_ended`,
      tenantSchema(this.#prefix, this.#dialect),
    );
  }

  async read(tenant: string): Promise<TenantAggregate> {
    if (!(await this.#tables.ready(false))) return { tools: {}, calibrations: {} };
    const p = this.#prefix;
    return this.#sql.transaction(async (tx) => {
      const tools = await tx.all<{ tool: string; offloaded: unknown; recalls: unknown }>(
        `SELECT tool, offloaded, recalls FROM ${p}tenant_tools WHERE tenant = ? AND offloaded > 0 ORDER BY offloaded DESC, tool LIMIT ?`,
        tenant,
        TENANT_TOOLS_LIMIT,
      );
      const models = await tx.all<{ model: string; state: string }>(
        `SELECT model, state FROM ${p}tenant_calibration WHERE tenant = ? ORDER BY model LIMIT ?`,
        tenant,
        TENANT_MODELS_LIMIT,
      );
      const lengths = await tx.all<{ calls: unknown; weight: unknown }>(
        `SELECT calls, weight FROM ${p}tenant_lengths WHERE tenant = ?`,
        tenant,
      );
      const ended = await tx.all<{ sessions: unknown }>(
        `SELECT sessions FROM ${p}tenant_ended WHERE tenant = ?`,
        tenant,
      );
      const sessionLengths = lengthsOf(
        lengths.map((r): [number, number] => [Number(r.calls), Number(r.weight)]),
        Number(ended[0]?.sessions ?? 0),
      );
      return {
        ...(sessionLengths === undefined ? {} : { session_lengths: sessionLengths }),
        tools: Object.fromEntries(
          tools.map((r): [string, ToolStats] => [
            r.tool,
            { offloaded: Number(r.offloaded), recalls: Number(r.recalls) },
          ]),
        ),
        calibrations: Object.fromEntries(
          models.map((r): [string, Calibration] => [r.model, JSON.parse(r.state) as Calibration]),
        ),
      };
    });
  }

  async add(tenant: string, delta: TenantDelta): Promise<void> {
    const tools = Object.entries(delta.tools ?? {}).filter(
      ([, d]) => whole(d.offloaded) + whole(d.recalls) > 0,
    );
    const samples = (delta.samples ?? []).slice(-SAMPLES_LIMIT);
    const ended = endedBuckets(delta.ended);
    if (tools.length === 0 && samples.length === 0 && ended.length === 0) return;
    await this.#tables.ready(true);
    const p = this.#prefix;
    await this.#sql.transaction(async (tx) => {
      for (const [tool, d] of tools)
        await tx.all(
          `INSERT INTO ${p}tenant_tools (tenant, tool, offloaded, recalls) VALUES (?, ?, ?, ?)
           ON CONFLICT (tenant, tool) DO UPDATE SET offloaded = ${p}tenant_tools.offloaded + excluded.offloaded,
             recalls = ${p}tenant_tools.recalls + excluded.recalls`,
          tenant,
          tool,
          whole(d.offloaded),
          whole(d.recalls),
        );
      for (const s of samples) {
        // The row exists before it is read locked: two first samples of a model, from two
        // processes, are then learned one after the other rather than one over the other.
        await tx.all(
          `INSERT INTO ${p}tenant_calibration (tenant, model, state) VALUES (?, ?, '') ON CONFLICT (tenant, model) DO NOTHING`,
          tenant,
          s.model,
        );
        const row = (
          await tx.all<{ state: string }>(
            `SELECT state FROM ${p}tenant_calibration WHERE tenant = ? AND model = ?${this.#dialect.lock}`,
            tenant,
            s.model,
          )
        )[0];
        const next = calibrate(
          row === undefined || row.state === "" ? null : (JSON.parse(row.state) as Calibration),
          s.estimate,
          s.measured,
        );
        await tx.all(
          `INSERT INTO ${p}tenant_calibration (tenant, model, state) VALUES (?, ?, ?)
           ON CONFLICT (tenant, model) DO UPDATE SET state = excluded.state`,
          tenant,
          s.model,
          JSON.stringify(next),
        );
      }
      if (ended.length > 0) await this.#addEnded(tx, tenant, ended);
    });
  }

  /** Ended sessions into the histogram: a row per bucket, the tenant's count of ended sessions. */
  async #addEnded(tx: SqlTx, tenant: string, buckets: readonly number[]): Promise<void> {
    const p = this.#prefix;
    const row = (
      await tx.all<{ sessions: unknown }>(
        `SELECT sessions FROM ${p}tenant_ended WHERE tenant = ?${this.#dialect.lock}`,
        tenant,
      )
    )[0];
    const add = lengthsAddition(Number(row?.sessions ?? 0), buckets);
    if (add.rescale !== null) {
      // Back to scale (weights in sessions), the forgotten buckets dropped: once per 25,000.
      await tx.all(
        `UPDATE ${p}tenant_lengths SET weight = weight * ? WHERE tenant = ?`,
        add.rescale,
        tenant,
      );
      await tx.all(
        `DELETE FROM ${p}tenant_lengths WHERE tenant = ? AND weight < ?`,
        tenant,
        FORGOTTEN_WEIGHT,
      );
    }
    for (const [calls, weight] of add.weights)
      await tx.all(
        `INSERT INTO ${p}tenant_lengths (tenant, calls, weight) VALUES (?, ?, ?)
         ON CONFLICT (tenant, calls) DO UPDATE SET weight = ${p}tenant_lengths.weight + excluded.weight`,
        tenant,
        calls,
        weight,
      );
    await tx.all(
      `INSERT INTO ${p}tenant_ended (tenant, sessions) VALUES (?, ?)
       ON CONFLICT (tenant) DO UPDATE SET sessions = excluded.sessions`,
      tenant,
      add.ended,
    );
  }
}
