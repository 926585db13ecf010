/**
 * The tenant's learning in SQL (the TenantDO's SQLite, a Cloudflare Agent's, node:sqlite,
 * Postgres): offloads and recalls per tool name, and the estimates' calibration per model, summed
 * over the tenant's sessions. One transaction per addition; a calibration sample is learned in
 * order, the model's state read and written in that transaction.
 */
import { type Calibration, calibrate } from "../core/calibration.ts";
import type { ToolStats } from "../core/ports.ts";
import type { TenantAggregate, TenantDelta, TenantLearning } from "./ports.ts";
import { type Dialect, SQLITE, type SqlPort, SqlTables } from "./sql.ts";

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
      `${this.#prefix}tenant_tools`,
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
      return {
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
    if (tools.length === 0 && samples.length === 0) return;
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
    });
  }
}
