/**
 * The tenant's calibration (core/calibration.ts) as a session holds it: a copy of the tenant's
 * state per model, which the session's turns read, and the samples its measured turns learned, not
 * yet sent. A sample refines the copy at once, in memory (so the turn's own line, and every later
 * turn, is priced at the calibration it refined), and is held with the session's other held writes
 * (held-writes.ts), which write the refined states and the samples together, off the turn's path.
 * The tenant statistics' exchange (tenant-copy.ts) carries the written samples out and the tenant's
 * states back, in the background. Nothing here is on a turn's path but one SQL read.
 */
import { type Calibration, type CalibrationSample, calibrate } from "../core/calibration.ts";
import type { SessionTables } from "./session-tables.ts";
import { STATS_REFRESH_MS } from "./stats-timing.ts";

/** Samples kept unsent at most (the oldest go first): a tenant that cannot be reached for long. */
export const PENDING_SAMPLES_LIMIT = 256;
/** Models a copy holds at most (a session talks to a few). */
export const COPY_MODELS_LIMIT = 32;

/** Samples a pending row holds: a batch (an array) or, as written by earlier versions, one. */
const SAMPLES_OF_ROW =
  "CASE json_type(sample) WHEN 'array' THEN json_array_length(sample) ELSE 1 END";

export class CalibrationCopy {
  readonly #t: SessionTables;
  /** Each model's state refined by held samples, not yet written. */
  #refined = new Map<string, Calibration>();
  /** Samples learned and not yet written, oldest first, and when the first of them was. */
  #held: CalibrationSample[] = [];
  #heldSince: number | null = null;

  constructor(tables: SessionTables) {
    this.#t = tables;
  }

  /** The copy, per model, as refined by every sample learned ({} before anything was). */
  read(): Record<string, Calibration> {
    const sql = this.#t.open(false);
    const stored =
      sql === null
        ? []
        : sql
            .exec<{ model: string; state: string }>(
              "SELECT model, state FROM tenant_calibration ORDER BY model LIMIT ?",
              COPY_MODELS_LIMIT,
            )
            .toArray()
            .map((r): [string, Calibration] => [r.model, JSON.parse(r.state) as Calibration]);
    if (this.#refined.size === 0) return Object.fromEntries(stored);
    // As if written: the first models in the table's order, the held refinements in place.
    const all = new Map([...stored, ...this.#refined]);
    const models = [...all.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return Object.fromEntries(models.slice(0, COPY_MODELS_LIMIT).map((m) => [m, all.get(m)!]));
  }

  /**
   * One measured turn: the copy refined in memory (and returned), the sample held for the tenant
   * until `write`. Writes nothing.
   */
  hold(sample: CalibrationSample, now: number): Calibration {
    const next = calibrate(this.#state(sample.model), sample.estimate, sample.measured);
    this.#refined.set(sample.model, next);
    this.#held.push(sample);
    this.#heldSince ??= now;
    return next;
  }

  /** Samples held (not yet written). */
  held(): number {
    return this.#held.length;
  }

  /**
   * Writes what is held in the caller's transaction: the refined states (one statement), the
   * samples as one pending row (one row written whatever their number), the pending rows beyond
   * PENDING_SAMPLES_LIMIT samples trimmed, and since when samples wait.
   */
  write(): void {
    if (this.#held.length === 0) return;
    const sql = this.#t.sql;
    sql.exec(
      "INSERT INTO tenant_calibration (model, state) SELECT key, value FROM json_each(?) WHERE true ON CONFLICT (model) DO UPDATE SET state = excluded.state",
      statesJson(this.#refined),
    );
    sql.exec("INSERT INTO calibration_pending (sample) VALUES (?)", JSON.stringify(this.#held));
    // Whole rows go, oldest first, while the newer ones hold more than the limit.
    sql.exec(
      `DELETE FROM calibration_pending WHERE seq IN (SELECT seq FROM (SELECT seq, sum(${SAMPLES_OF_ROW}) OVER (ORDER BY seq DESC) AS newer FROM calibration_pending) WHERE newer > ?)`,
      PENDING_SAMPLES_LIMIT,
    );
    if (this.#t.meta<number>("calibration_pending_since") === undefined)
      this.#t.setMeta("calibration_pending_since", this.#heldSince);
    this.#refined.clear();
    this.#held = [];
    this.#heldSince = null;
  }

  /** What is held, to be put back if the transaction that wrote it rolls back. */
  heldState(): {
    refined: Map<string, Calibration>;
    held: CalibrationSample[];
    since: number | null;
  } {
    return { refined: new Map(this.#refined), held: [...this.#held], since: this.#heldSince };
  }

  /** Puts back what `heldState` took (the write that cleared it did not commit). */
  restoreHeld(state: ReturnType<CalibrationCopy["heldState"]>): void {
    this.#refined = state.refined;
    this.#held = state.held;
    this.#heldSince = state.since;
  }

  /**
   * The written samples to send, and the last row's sequence number (to settle them after). The
   * caller writes the held ones first; any held meanwhile stay held for the next exchange.
   */
  pending(): { samples: CalibrationSample[]; upTo: number } {
    const sql = this.#t.open(false);
    if (sql === null) return { samples: [], upTo: 0 };
    const rows = sql
      .exec<{ seq: number; sample: string }>(
        "SELECT seq, sample FROM calibration_pending ORDER BY seq",
      )
      .toArray();
    return {
      samples: rows.flatMap((r) => {
        const v = JSON.parse(r.sample) as CalibrationSample | CalibrationSample[];
        return Array.isArray(v) ? v : [v];
      }),
      upTo: rows.at(-1)?.seq ?? 0,
    };
  }

  /**
   * An exchange answered: the samples up to `upTo` are the tenant's now, and the copy is the
   * tenant's states (which include them). Samples learned meanwhile, written or held, stay pending,
   * and their refinement is applied again on top of the tenant's state (in order: written, held).
   */
  settle(upTo: number, tenant: Record<string, Calibration>, now: number): void {
    const sql = this.#t.open(false);
    if (sql === null) return;
    sql.exec("DELETE FROM calibration_pending WHERE seq <= ?", upTo);
    const states = new Map(Object.entries(tenant).slice(0, COPY_MODELS_LIMIT));
    const left = this.pending().samples;
    for (const s of left) states.set(s.model, learned(states.get(s.model) ?? null, s));
    sql.exec("DELETE FROM tenant_calibration");
    sql.exec(
      "INSERT INTO tenant_calibration (model, state) SELECT key, value FROM json_each(?)",
      statesJson(states),
    );
    this.#refined.clear();
    for (const s of this.#held) this.#refined.set(s.model, learned(this.#state(s.model), s));
    this.#t.setMeta("calibration_pending_since", left.length > 0 ? now : undefined);
    this.#t.setMeta("calibration_at", now);
  }

  /** When samples are waiting to be sent, written or held, since when (null: none). */
  pendingSince(): number | null {
    const written = this.#t.meta<number>("calibration_pending_since") ?? null;
    if (written === null || this.#heldSince === null) return written ?? this.#heldSince;
    return Math.min(written, this.#heldSince);
  }

  /** Whether the copy is older than STATS_REFRESH_MS (or was never filled). */
  stale(now: number): boolean {
    const at = this.#t.meta<number>("calibration_at");
    return at === undefined || now - at > STATS_REFRESH_MS;
  }

  /** A model's state as refined so far: held, else written, else none. */
  #state(model: string): Calibration | null {
    const held = this.#refined.get(model);
    if (held !== undefined) return held;
    const sql = this.#t.open(false);
    const row =
      sql === null
        ? undefined
        : sql
            .exec<{ state: string }>("SELECT state FROM tenant_calibration WHERE model = ?", model)
            .toArray()[0];
    return row === undefined ? null : (JSON.parse(row.state) as Calibration);
  }
}

/** States as one JSON object of JSON texts (each written as given: no number is re-rendered). */
function statesJson(states: Map<string, Calibration>): string {
  return JSON.stringify(Object.fromEntries([...states].map(([m, s]) => [m, JSON.stringify(s)])));
}

function learned(state: Calibration | null, s: CalibrationSample): Calibration {
  return calibrate(state, s.estimate, s.measured);
}
