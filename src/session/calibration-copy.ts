/**
 * The tenant's calibration (core/calibration.ts) as a session holds it: a copy of the tenant's
 * state per model, which the session's turns read, and the samples its measured turns learned, not
 * yet sent. A sample refines the copy at once (so the turn's own line is priced at the calibration
 * it refined) and waits for the tenant statistics' exchange (tenant-copy.ts), which carries the
 * samples out and the tenant's states back, in the background. Nothing here is on a turn's path
 * but one SQL read.
 */
import { type Calibration, type CalibrationSample, calibrate } from "../core/calibration.ts";
import type { SessionTables } from "./session-tables.ts";
import { STATS_REFRESH_MS } from "./stats-timing.ts";

/** Samples kept unsent at most (the oldest go first): a tenant that cannot be reached for long. */
export const PENDING_SAMPLES_LIMIT = 256;
/** Models a copy holds at most (a session talks to a few). */
export const COPY_MODELS_LIMIT = 32;

export class CalibrationCopy {
  readonly #t: SessionTables;

  constructor(tables: SessionTables) {
    this.#t = tables;
  }

  /** The copy, per model ({} before the session has storage or a first exchange). */
  read(): Record<string, Calibration> {
    const sql = this.#t.open(false);
    if (sql === null) return {};
    return Object.fromEntries(
      sql
        .exec<{ model: string; state: string }>(
          "SELECT model, state FROM tenant_calibration ORDER BY model LIMIT ?",
          COPY_MODELS_LIMIT,
        )
        .toArray()
        .map((r) => [r.model, JSON.parse(r.state) as Calibration]),
    );
  }

  /**
   * One measured turn: the copy refined (and returned) and the sample kept for the tenant. Runs in
   * the caller's transaction (the session's tables exist).
   */
  learn(sample: CalibrationSample, now: number): Calibration {
    const sql = this.#t.sql;
    const next = refine(sql, sample);
    sql.exec("INSERT INTO calibration_pending (sample) VALUES (?)", JSON.stringify(sample));
    sql.exec(
      "DELETE FROM calibration_pending WHERE seq <= (SELECT max(seq) FROM calibration_pending) - ?",
      PENDING_SAMPLES_LIMIT,
    );
    if (this.#t.meta<number>("calibration_pending_since") === undefined)
      this.#t.setMeta("calibration_pending_since", now);
    return next;
  }

  /** The samples to send, and the last one's sequence number (to settle them after). */
  pending(): { samples: CalibrationSample[]; upTo: number } {
    const sql = this.#t.open(false);
    if (sql === null) return { samples: [], upTo: 0 };
    const rows = sql
      .exec<{ seq: number; sample: string }>(
        "SELECT seq, sample FROM calibration_pending ORDER BY seq",
      )
      .toArray();
    return {
      samples: rows.map((r) => JSON.parse(r.sample) as CalibrationSample),
      upTo: rows.at(-1)?.seq ?? 0,
    };
  }

  /**
   * An exchange answered: the samples up to `upTo` are the tenant's now, and the copy is the
   * tenant's states (which include them). Samples learned meanwhile stay pending, and their
   * refinement is applied again on top of the tenant's state.
   */
  settle(upTo: number, tenant: Record<string, Calibration>, now: number): void {
    const sql = this.#t.open(false);
    if (sql === null) return;
    sql.exec("DELETE FROM calibration_pending WHERE seq <= ?", upTo);
    sql.exec("DELETE FROM tenant_calibration");
    for (const [model, state] of Object.entries(tenant).slice(0, COPY_MODELS_LIMIT))
      sql.exec(
        "INSERT INTO tenant_calibration (model, state) VALUES (?, ?)",
        model,
        JSON.stringify(state),
      );
    const left = this.pending().samples;
    for (const sample of left) refine(sql, sample);
    this.#t.setMeta("calibration_pending_since", left.length > 0 ? now : undefined);
    this.#t.setMeta("calibration_at", now);
  }

  /** When samples are waiting to be sent, since when (null: none). */
  pendingSince(): number | null {
    return this.#t.meta<number>("calibration_pending_since") ?? null;
  }

  /** Whether the copy is older than STATS_REFRESH_MS (or was never filled). */
  stale(now: number): boolean {
    const at = this.#t.meta<number>("calibration_at");
    return at === undefined || now - at > STATS_REFRESH_MS;
  }
}

/** The copy's state for the sample's model refined by it, written back and returned. */
function refine(sql: SqlStorage, sample: CalibrationSample): Calibration {
  const row = sql
    .exec<{ state: string }>("SELECT state FROM tenant_calibration WHERE model = ?", sample.model)
    .toArray()[0];
  const next = calibrate(
    row === undefined ? null : (JSON.parse(row.state) as Calibration),
    sample.estimate,
    sample.measured,
  );
  sql.exec(
    "INSERT INTO tenant_calibration (model, state) VALUES (?, ?) ON CONFLICT (model) DO UPDATE SET state = excluded.state",
    sample.model,
    JSON.stringify(next),
  );
  return next;
}
