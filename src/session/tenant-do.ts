/**
 * TenantDO: one per tenant (`idFromName(tenant)`), SQLite storage: the learning statistics across
 * the tenant's sessions (offloads and recalls per tool name) that the adaptive gate reads. Counts
 * only, never content.
 */
import { DurableObject } from "cloudflare:workers";
import { type Calibration, calibrate } from "../core/calibration.ts";
import type { ToolStats } from "../core/ports.ts";
import type { Env } from "../env.ts";

export class TenantDO extends DurableObject<Env> {
  #ready = false;

  get #sql(): SqlStorage {
    const sql = this.ctx.storage.sql;
    if (!this.#ready) {
      sql.exec(
        "CREATE TABLE IF NOT EXISTS tool_stats (tool TEXT PRIMARY KEY, offloaded INTEGER NOT NULL DEFAULT 0, recalls INTEGER NOT NULL DEFAULT 0)",
      );
      // The estimates' calibration per model (calibration.ts): one small JSON state per model.
      sql.exec(
        "CREATE TABLE IF NOT EXISTS calibration (model TEXT PRIMARY KEY, state TEXT NOT NULL)",
      );
      this.#ready = true;
    }
    return sql;
  }

  stats(toolNames: readonly string[]): Record<string, ToolStats> {
    if (toolNames.length === 0) return {};
    const rows = this.#sql
      .exec<{ tool: string; offloaded: number; recalls: number }>(
        "SELECT tool, offloaded, recalls FROM tool_stats WHERE tool IN (SELECT value FROM json_each(?))",
        JSON.stringify(toolNames),
      )
      .toArray();
    return Object.fromEntries(
      rows.map((r) => [r.tool, { offloaded: r.offloaded, recalls: r.recalls }]),
    );
  }

  calibration(model: string): Calibration | null {
    const row = this.#sql
      .exec<{ state: string }>("SELECT state FROM calibration WHERE model = ?", model)
      .toArray()[0];
    return row === undefined ? null : (JSON.parse(row.state) as Calibration);
  }

  calibrations(): Record<string, Calibration> {
    return Object.fromEntries(
      this.#sql
        .exec<{ model: string; state: string }>(
          "SELECT model, state FROM calibration ORDER BY model",
        )
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
    this.ctx.storage.transactionSync(() => {
      for (const [tool, d] of Object.entries(deltas)) {
        const offloaded = Math.max(0, Math.trunc(d.offloaded ?? 0));
        const recalls = Math.max(0, Math.trunc(d.recalls ?? 0));
        if (offloaded === 0 && recalls === 0) continue;
        this.#sql.exec(
          "INSERT INTO tool_stats (tool, offloaded, recalls) VALUES (?, ?, ?) ON CONFLICT (tool) DO UPDATE SET offloaded = offloaded + excluded.offloaded, recalls = recalls + excluded.recalls",
          tool,
          offloaded,
          recalls,
        );
      }
    });
  }
}
