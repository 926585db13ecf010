/**
 * What a steady turn would write, held in the SessionDO's memory and written later with others in
 * one transaction: the turn's log line, and the calibration sample a measured turn teaches. A commit
 * that only logs a turn (no records, nothing newly declared, no tombstone to clear, the index not
 * due), and the proxy's usage on its line, would otherwise cost a SQLite transaction and the output
 * gate on every turn, for a line nothing reads before the next report and a sample nothing sends
 * before the next exchange; held, they cost none.
 *
 * The line's seq is assigned at once (usage posted against it finds it, in memory: every other
 * method that reads or writes the turn log writes what is held first), and what a turn's first read
 * computes from the session's row and its lines (last_active, the turn gaps) sees them as if
 * written. A sample refines the session's calibration copy at once, in memory (calibration-copy.ts):
 * the next turn is priced at the refined calibration. What is held is written by the next write of
 * the session, the report's and the views' reads, the alarm (before its tenant exchange, which so
 * sends every sample), a cap of HOLD_CAP lines or samples, and a timer (the window). A purge drops
 * the held lines with the session and writes the held samples (the tenant's: written ones outlive a
 * purge too, and the tombstone's sweep sends them).
 *
 * What this gives up: a restart of the object (a deploy, a crash) loses what is held, at most one
 * window: log lines (turn counts, estimates, the proxy's note and usage on them) and the calibration
 * samples of those turns (the tenant's calibration learns a few turns fewer; it is a damped running
 * fit, so a lost sample slows its learning and skews nothing), never a record or a body. Lost seqs
 * may be given again; no client holds one (a steady turn's summary names no seq: its commit follows
 * the answer), only the proxy's own call does meanwhile.
 */
import type { Calibration, CalibrationSample } from "../core/calibration.ts";
import type { TurnLog } from "../core/types.ts";
import { OffloadError } from "../errors.ts";
import type { LastTurn } from "../store/ports.ts";
import type { CalibrationCopy } from "./calibration-copy.ts";
import type { SessionRow, SessionTables } from "./session-tables.ts";
import { TURN_LOG_LIMIT } from "./state.ts";

/**
 * How long a held line or sample may wait for others, by default: an agent's tool loop sends its
 * calls a few seconds apart, so a busy session's turns go in batches, while a restart loses at most
 * the turns of these five seconds. A quiet session's turn is written alone, still off its path.
 */
export const DEFAULT_LINE_WINDOW_MS = 5000;
/** The longest window a deployment may set: what a restart may lose stays small. */
export const MAX_LINE_WINDOW_MS = 60_000;
/** Lines (or samples) held at most: the line that would pass it writes what is held first. */
export const HOLD_CAP = 32;

/** Parse `OFFLOAD_TURN_LOG_WINDOW_MS`: whole milliseconds up to a minute, 0 writes each line. */
export function parseLineWindow(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === "") return DEFAULT_LINE_WINDOW_MS;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > MAX_LINE_WINDOW_MS)
    throw new OffloadError(
      "internal",
      `OFFLOAD_TURN_LOG_WINDOW_MS must be a whole number of milliseconds from 0 to ${MAX_LINE_WINDOW_MS}`,
    );
  return n;
}

interface HeldLine {
  seq: number;
  at: number;
  log: string;
}

export class HeldWrites {
  readonly #t: SessionTables;
  readonly #storage: DurableObjectStorage;
  readonly #windowMs: () => number;
  /** The session's calibration copy: it holds the samples and the states they refined. */
  readonly #calibration: CalibrationCopy;
  #lines: HeldLine[] = [];
  /** The newest held line's decisions, for the report's last turn (older ones it replaces). */
  #last: LastTurn | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  /** The latest activity noted on held lines (a later note than the line's own time). */
  #activeAt = 0;

  constructor(
    t: SessionTables,
    storage: DurableObjectStorage,
    windowMs: () => number,
    calibration: CalibrationCopy,
  ) {
    this.#t = t;
    this.#storage = storage;
    this.#windowMs = windowMs;
    this.#calibration = calibration;
  }

  /** Whether anything may be held at all (a window of 0 writes each line and sample at once). */
  enabled(): boolean {
    return this.#windowMs() > 0;
  }

  /**
   * Holds a turn's line (the session's row exists) and returns its seq: the next after the
   * table's (a deleted line's seq is never given again) and the lines already held.
   */
  hold(log: TurnLog, last: LastTurn | null, now: number): number {
    // Samples come from lines (one per line at most, and one posted against a written line), so the
    // line's cap bounds them too.
    if (this.#lines.length >= HOLD_CAP || this.#calibration.held() >= HOLD_CAP) this.flush();
    const held = this.#lines[this.#lines.length - 1];
    const seq = held === undefined ? this.#lastSeq() + 1 : held.seq + 1;
    this.#lines.push({ seq, at: now, log: JSON.stringify(log) });
    if (last !== null) this.#last = last;
    this.#arm();
    return seq;
  }

  /**
   * A measured turn's calibration sample: the session's copy refined at once (and returned), the
   * sample held with the lines (written at once when nothing may be held, in the caller's
   * transaction: a caller that may hold runs in one or writes nothing).
   */
  learn(sample: CalibrationSample, now: number): Calibration {
    const next = this.#calibration.hold(sample, now);
    if (this.enabled()) this.#arm();
    else this.#calibration.write();
    return next;
  }

  #arm(): void {
    this.#timer ??= setTimeout(() => this.#onTimer(), this.#windowMs());
  }

  #lastSeq(): number {
    const sql = this.#t.sql;
    const used = sql
      .exec<{ seq: number | null }>("SELECT seq FROM sqlite_sequence WHERE name = 'turns'")
      .toArray()[0]?.seq;
    const top = sql.exec<{ seq: number | null }>("SELECT max(seq) AS seq FROM turns").one().seq;
    return Math.max(used ?? 0, top ?? 0);
  }

  /**
   * Rewrites a held line (the proxy's note and usage go on it), counting as activity at `now` when
   * given; false when no held line has this seq.
   */
  update(seq: number, change: (log: TurnLog) => TurnLog, now?: number): boolean {
    const line = this.#lines.find((l) => l.seq === seq);
    if (line === undefined) return false;
    line.log = JSON.stringify(change(JSON.parse(line.log) as TurnLog));
    if (now !== undefined) this.#activeAt = Math.max(this.#activeAt, now);
    return true;
  }

  /** The held lines with their seqs, oldest first (usage posted against one finds it here). */
  lines(): { seq: number; log: TurnLog }[] {
    return this.#lines.map((l) => ({ seq: l.seq, log: JSON.parse(l.log) as TurnLog }));
  }

  /** The session's row as if the held lines were written (null stays null). */
  row<R extends SessionRow | null>(row: R): R {
    const newest = this.#lines[this.#lines.length - 1];
    if (row === null || newest === undefined) return row;
    return {
      ...row,
      calls: row.calls + this.#lines.length,
      last_active: Math.max(row.last_active, newest.at, this.#activeAt),
    };
  }

  /** The held lines' times, oldest first. */
  times(): number[] {
    return this.#lines.map((l) => l.at);
  }

  /**
   * Writes what is held in its own transaction. If it rolls back, what was held is held again (and
   * the timer armed): a storage fault delays the lines and samples, it does not lose them.
   */
  flush(): void {
    if (this.#lines.length === 0 && this.#calibration.held() === 0) return;
    const lines = this.#lines;
    const last = this.#last;
    const activeAt = this.#activeAt;
    const samples = this.#calibration.heldState();
    try {
      this.#storage.transactionSync(() => this.write());
    } catch (cause) {
      this.#lines = lines;
      this.#last = last;
      this.#activeAt = activeAt;
      this.#calibration.restoreHeld(samples);
      this.#arm();
      throw cause;
    }
  }

  /**
   * Writes what is held in the caller's transaction: the calibration (calibration-copy.ts), then
   * each line with its seq and time, the row's calls and last activity once, the log's trim once,
   * and the newest decisions.
   */
  write(): void {
    this.#calibration.write();
    this.#writeLines();
    this.#clear();
  }

  #writeLines(): void {
    const lines = this.#lines;
    const last = this.#last;
    if (lines.length === 0) return;
    const sql = this.#t.sql;
    // The session was purged meanwhile (a purge drops held lines; this guards any other path).
    if (this.#t.row() === null) return;
    // One statement: the table's sequence is moved once, not once per line (each is a row written).
    sql.exec(
      "INSERT INTO turns (seq, log, at) SELECT value ->> 'seq', value ->> 'log', value ->> 'at' FROM json_each(?)",
      JSON.stringify(lines),
    );
    sql.exec(
      "UPDATE session SET calls = calls + ?, last_active = max(last_active, ?) WHERE id = 1",
      lines.length,
      Math.max(lines[lines.length - 1]!.at, this.#activeAt),
    );
    sql.exec("DELETE FROM turns WHERE seq <= (SELECT max(seq) FROM turns) - ?", TURN_LOG_LIMIT);
    if (last !== null)
      sql.exec(
        "INSERT INTO last_turn (id, turn) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET turn = excluded.turn",
        JSON.stringify(last),
      );
  }

  /**
   * The session is purged, in the caller's transaction: its held lines go with it, their seqs never
   * given again (usage posted against one must not land on a later session's line); its held
   * samples are written (the tenant's statistics outlive a session's purge).
   */
  drop(): void {
    this.#calibration.write();
    const newest = this.#lines[this.#lines.length - 1];
    if (newest !== undefined) {
      const sql = this.#t.sql;
      const moved = sql.exec(
        "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'turns'",
        newest.seq,
      ).rowsWritten;
      if (moved === 0)
        sql.exec("INSERT INTO sqlite_sequence (name, seq) VALUES ('turns', ?)", newest.seq);
    }
    this.#clear();
  }

  #clear(): void {
    this.#lines = [];
    this.#last = null;
    this.#activeAt = 0;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #onTimer(): void {
    this.#timer = null;
    try {
      this.flush();
    } catch (cause) {
      // What is held stays held for the next write or read, and the timer (armed again) tries again.
      console.error(
        `[edge-offload] writing held turn lines and samples failed: ${cause instanceof Error ? cause.message.slice(0, 200) : "unknown error"}`,
      );
    }
  }
}
