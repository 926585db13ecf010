/**
 * What a store is made of, each part a port with an in-memory twin and a contract suite in
 * src/contract, and what the routes need of a store:
 * - `SessionState`: the session's authority (sticky records, turn log with usage, config, the
 *   session's own statistics and calibration, the proxy's memos, the lifecycle). One SQL class
 *   (sql-session.ts) serves every SQL host (the SessionDO, a Cloudflare Agent's SQLite, node:sqlite,
 *   Postgres); `MemorySessionState` is its twin. It sees only small records, never a body.
 * - `BodyLedgerPort`: full bodies, one per mem_id (R2). Strongly consistent: recall reads here.
 * - `IndexPort`: lookups that may lag (KV): mem_id → location, tenant → sessions. Nothing may
 *   depend on reading a write back; a miss falls back to the session state or the ledger.
 * - `TenantLearning`: the tenant's aggregate of its sessions' statistics, calibration and lengths,
 *   read through a per-isolate cache (tenant-cache.ts) and added to in the background.
 * - the core's `ExtractionCache`: attachment extractions per tenant, keyed by content hash.
 * `ComposedStore` (composed.ts) puts them together into the core's `OffloadStore` plus
 * `ServiceStore`, what the routes need.
 */
import type { OffloadConfigPatch } from "../config.ts";
import type { TurnUsage } from "../core/billing.ts";
import type { Calibration, CalibrationSample } from "../core/calibration.ts";
import type { SessionLengths } from "../core/horizon.ts";
import type {
  CachedExtraction,
  OffloadStore,
  SessionSummary,
  ToolStats,
  TurnAsk,
} from "../core/ports.ts";
import type {
  BodyMeta,
  ProxyMemo,
  ProxyTurnNote,
  ResultRecord,
  SessionRef,
  StoredBody,
  TurnDecision,
  TurnLog,
} from "../core/types.ts";
import { OffloadError } from "../errors.ts";
import type { Refusal, TurnLease } from "./lifecycle.ts";
import type { SessionReportData } from "./report.ts";
import type { TurnKey, UsageOutcome } from "./usage.ts";

export type { Refusal, TurnLease } from "./lifecycle.ts";
export type { LastTurn, LoggedTurn, SessionReportData, TurnTotals } from "./report.ts";
export type { TurnKey, UsageOutcome } from "./usage.ts";

/** What the session state answers a turn's begin (the tenant's part is the store's to add). */
export interface SessionStart {
  /** The session's config layer, `{}` when none. */
  config: OffloadConfigPatch;
  /** The records of the asked ids (and of the memos' recall calls) that exist. */
  records: ResultRecord[];
  /**
   * How many of the asked ids (then the memos' call ids) were looked up: the rest did not fit the
   * call's budget, and are asked with `records`.
   */
  answered: number;
  recall_declared: boolean;
  /** The proxy's memos anchored on the asked anchors, oldest first. */
  memos: ProxyMemo[];
  /** Per asked tool name, this session's offloads and recalls. */
  session_tool_stats: Record<string, ToolStats>;
  /** The session's own calibration per model (ready or not). */
  calibrations: Record<string, Calibration>;
  gap_seconds: number | null;
  idle_seconds: number | null;
  /** Null: the session is being deleted; the turn must not write (it passes through). */
  lease: TurnLease | null;
}

/** What a finished turn adds: the proxy's note and usage on its line, its memos. */
export interface SessionFinish {
  proxy?: ProxyTurnNote | undefined;
  usage?: TurnUsage | undefined;
  memos?: readonly ProxyMemo[] | undefined;
}

export interface SessionCommit {
  /** First writer wins per tool_use_id, also within one commit. */
  records: readonly ResultRecord[];
  recall_declared: boolean;
  log: TurnLog;
  /** The latest turn's decisions for the report (at most LAST_DECISIONS_LIMIT, the last ones). */
  decisions?: readonly TurnDecision[] | undefined;
  /** How many results the turn decided, when `decisions` holds only the last of them. */
  decisions_total?: number | undefined;
  /** The turn's lease, from its begin. */
  lease: TurnLease | null;
  /** A steady turn's line is written at its finish: what the finish adds, in the same transaction. */
  finish?: SessionFinish | undefined;
}

export interface SessionCommitResult {
  /** The standing record per committed tool_use_id, in order (an earlier one where it existed). */
  records: ResultRecord[];
  /** The turn's log line: a number never issued before in the session. */
  seq: number;
  /** The tenant → session index entry is due (first commit, then about once a day). */
  index_due: boolean;
  /** Offloaded records this commit inserted, per tool name (for the tenant's statistics). */
  offloads: Record<string, number>;
  /** The commit was refused (nothing written): the session was deleted since, or the turn ran long. */
  refused?: Refusal;
}

/** A batch of a large commit's records, ahead of the commit itself (each call under the budget). */
export interface RecordsBatch {
  records: readonly ResultRecord[];
  lease: TurnLease | null;
}

export interface RecordsResult {
  records: ResultRecord[];
  offloads: Record<string, number>;
  refused?: Refusal;
}

export interface SessionDetail extends SessionSummary {
  /** The session's own config layer (what `PUT …/config` stored), `{}` when none. */
  config: OffloadConfigPatch;
  /** Epoch milliseconds. */
  created_at: number;
  last_active: number;
  /** Successful recalls per mem_id. */
  recalls_by_mem_id: Record<string, number>;
}

/**
 * The session's authority. Every method is one transaction; a turn begins (`begin`, a read but for
 * a lifecycle mark), commits under the lease it got (`commit`, `addRecords`) and finishes
 * (`finish`); each turn's log line, with the usage that comes with it, is written in one
 * transaction and gets a seq never issued before in the session.
 */
export interface SessionState {
  begin(ref: SessionRef, ask: TurnAsk): Promise<SessionStart>;
  /** Records of `ids` in their order, until the budget: `answered` says how many were looked up. */
  records(
    ref: SessionRef,
    ids: readonly string[],
  ): Promise<{ records: ResultRecord[]; answered: number }>;
  addRecords(ref: SessionRef, batch: RecordsBatch): Promise<RecordsResult>;
  commit(ref: SessionRef, commit: SessionCommit): Promise<SessionCommitResult>;
  /**
   * After a turn's answer, on its line `seq` (null: the turn logged none): the proxy's note, the
   * usage (learned into the session's calibration), the memos (the oldest beyond MEMO_LIMIT go).
   */
  finish(ref: SessionRef, seq: number | null, finish: SessionFinish): Promise<void>;
  /**
   * Counts a recall (also on the latest logged turn); returns the tool name of the mem_id's
   * offloaded record, null when none names it.
   */
  noteRecall(ref: SessionRef, memId: string): Promise<string | null>;
  /**
   * A turn's measured usage on its line (the first report stands; the same numbers again change
   * nothing), learned into the session's calibration. Null for an unknown session.
   */
  recordUsage(ref: SessionRef, key: TurnKey, usage: TurnUsage): Promise<UsageOutcome | null>;
  describe(ref: SessionRef): Promise<SessionDetail | null>;
  /** The report's data, null for an unknown session; `turns: false` leaves out the lines. */
  report(ref: SessionRef, options?: { turns?: boolean }): Promise<SessionReportData | null>;
  getConfig(ref: SessionRef): Promise<OffloadConfigPatch>;
  /** Replaces the session's config layer (`{}` clears it). */
  setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void>;
  /**
   * Starts a purge: the generation moves (no turn that began earlier can commit), the session's
   * state is emptied, and new turns pass through until `purged`. Returns the mem_ids its records
   * named, for the caller's purge of bodies and index entries.
   */
  destroy(ref: SessionRef): Promise<string[]>;
  /** The caller's purge is done: turns may write again. */
  purged(ref: SessionRef): Promise<void>;
  /**
   * The session ended (session-lengths.ts): it is being deleted, or (`idle`) it has had no activity
   * for SESSION_END_MS by the state's clock. Its length in client calls (`calls` of its report),
   * once: null when it was counted before, has no live state or no call, or (`idle`) is active.
   */
  end(ref: SessionRef, options?: { idle?: boolean }): Promise<number | null>;
}

/** The tenant's learning: its sessions' statistics, calibration and lengths, aggregated. */
export interface TenantAggregate {
  /** Offloads and recalls per tool name (live turns only). */
  tools: Record<string, ToolStats>;
  /** The estimates' calibration per price-table model. */
  calibrations: Record<string, Calibration>;
  /**
   * The ended sessions' lengths in client calls, decayed to the last ~1,000 and bucketed
   * (session-lengths.ts); absent before any session of the tenant has ended.
   */
  session_lengths?: SessionLengths;
}

/** What a turn, a recall, a measured usage or an ended session adds to its tenant's aggregate. */
export interface TenantDelta {
  tools?: Record<string, Partial<ToolStats>>;
  samples?: readonly CalibrationSample[];
  /** The lengths (client calls) of sessions that ended, one entry per session (counted once). */
  ended?: readonly number[];
}

/**
 * The tenant's aggregate. Best effort both ways: a lost addition only slows learning, and a turn
 * never waits for either (ComposedStore reads through a cache and adds in the background).
 */
export interface TenantLearning {
  read(tenant: string): Promise<TenantAggregate>;
  add(tenant: string, delta: TenantDelta): Promise<void>;
}

export interface BodyLedgerPort {
  /** Resolves once the body is durable. */
  put(ref: SessionRef, body: string, meta: BodyMeta): Promise<void>;
  get(ref: SessionRef, memId: string): Promise<StoredBody | null>;
  /** The metadata without the body. */
  head(ref: SessionRef, memId: string): Promise<BodyMeta | null>;
  /** mem_ids of the session's bodies, at most `limit` (default: all). Strongly consistent. */
  list(ref: SessionRef, limit?: number): Promise<string[]>;
  /** Deletes these bodies of the session (unknown ones are ignored). */
  delete(ref: SessionRef, memIds: readonly string[]): Promise<void>;
}

export interface IndexedBody {
  /** Where the body lives (the ledger key). */
  location: string;
  meta: BodyMeta;
}

export interface IndexedSession {
  session: string;
  created_at: number;
}

/**
 * What an index throws for a list cursor it cannot read: the caller's mistake (400), not an outage.
 */
export function badCursor(cause?: unknown): OffloadError {
  return new OffloadError(
    "invalid_argument",
    "cursor is not one this listing returned; list again without it",
    { path: "cursor", ...(cause === undefined ? {} : { cause }) },
  );
}

export interface IndexPort {
  putBody(ref: SessionRef, entry: IndexedBody): Promise<void>;
  getBody(ref: SessionRef, memId: string): Promise<IndexedBody | null>;
  putSession(ref: SessionRef, entry: IndexedSession): Promise<void>;
  /** A cursor it cannot read (not one a listing returned) throws `badCursor()`: the caller's mistake. */
  listSessions(
    tenant: string,
    options?: { cursor?: string; limit?: number },
  ): Promise<{ sessions: IndexedSession[]; cursor: string | null }>;
  deleteBodies(ref: SessionRef, memIds: readonly string[]): Promise<void>;
  /** Removes the session's entry, and any mem_id entries of it that a listing still shows. */
  deleteSession(ref: SessionRef): Promise<void>;
}

export interface BodyInfo {
  meta: BodyMeta;
  /** Which backend answered: the index, or the ledger after an index miss. */
  source: "index" | "ledger";
}

/** What the routes need of a store, beyond the core's port. */
export interface ServiceStore extends OffloadStore {
  describeSession(ref: SessionRef): Promise<SessionDetail | null>;
  /** The tenant's extraction cache (a store without one misses every time and stores nothing). */
  getExtraction(tenant: string, key: string): Promise<CachedExtraction | null>;
  putExtraction(tenant: string, key: string, value: CachedExtraction): Promise<void>;
  /** The savings report's data (null: unknown session); `turns: false` leaves out the lines. */
  sessionReport(ref: SessionRef, options?: { turns?: boolean }): Promise<SessionReportData | null>;
  getConfig(ref: SessionRef): Promise<OffloadConfigPatch>;
  /** Replaces the session's config layer (`{}` clears it). */
  setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void>;
  /**
   * Keeps a turn's measured usage (first report stands), durable once this resolves, and teaches
   * the calibration with it. Null for an unknown session.
   */
  recordUsage(ref: SessionRef, key: TurnKey, usage: TurnUsage): Promise<UsageOutcome | null>;
  /** The tenant's calibration per model ({} for a store that keeps none). */
  calibrations(tenant: string): Promise<Record<string, Calibration>>;
  /** A body's metadata: the index when it has the entry, else the ledger. */
  statBody(ref: SessionRef, memId: string): Promise<BodyInfo | null>;
  /** The tenant's sessions as the index knows them (may lag a new session by about a minute). */
  listSessions(
    tenant: string,
    options?: { cursor?: string; limit?: number },
  ): Promise<{ sessions: IndexedSession[]; cursor: string | null }>;
}
