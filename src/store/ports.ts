/**
 * The service's storage, split by what each backend is good at:
 * - `SessionStatePort`: the authority for a session (sticky records, turn log, config, counters,
 *   the proxy's memos). The Worker's adapter is the SessionDO; it sees only small records, never a
 *   body.
 * - `BodyLedgerPort`: full bodies, one object per mem_id (R2). Strongly consistent: recall reads
 *   here.
 * - `IndexPort`: lookups that may lag (KV): mem_id → location and structural index, tenant →
 *   sessions. Nothing may depend on reading a write back; a miss falls back to the session state or
 *   the ledger.
 * - `TenantStatsPort`: the adaptive gate's learning statistics per tenant (the TenantDO).
 * - the core's `ExtractionCache`: attachment extractions per tenant, keyed by content hash (R2,
 *   `extracts/`). Each has an in-memory twin and its own contract suite in test/contract.
 *   `ComposedStore` (composed.ts) puts them together into the core's `OffloadStore` plus
 *   `ServiceStore`, what the routes and the proxy need.
 */
import type { OffloadConfigPatch } from "../config.ts";
import type { TurnUsage } from "../core/billing.ts";
import type { Calibration } from "../core/calibration.ts";
import type {
  CachedExtraction,
  OffloadStore,
  SessionSummary,
  ToolStats,
  TurnCommit,
} from "../core/ports.ts";
import type { IndexProblem, StatsProblem } from "../core/problems.ts";
import type { BodyMeta, ResultRecord, SessionRef, StoredBody } from "../core/types.ts";
import { OffloadError } from "../errors.ts";
import type { ProxyState, ProxyTurn } from "../proxy/port.ts";
import type { TurnKey, UsageOutcome } from "../session/usage.ts";
import type { LastTurn, LoggedTurn, SessionReportData, TurnTotals } from "./report-data.ts";
import type { BeginAsk, Refusal, TurnLease, TurnProtocol, TurnStart } from "./turn-protocol.ts";

export type { LastTurn, LoggedTurn, SessionReportData, TurnTotals };

export interface SessionCommitResult {
  /**
   * Standing record per committed tool_use_id (an earlier one where it existed: first writer wins).
   */
  records: ResultRecord[];
  /**
   * The tenant → session index entry should be (re)written (first commit, then about once a day).
   */
  index_due: boolean;
  /**
   * Offloaded records this commit inserted, per tool name (for the tenant's learning statistics).
   */
  offloads: Record<string, number>;
  /**
   * The turn log line this commit wrote (the proxy notes its hops on it once the provider has
   * answered).
   */
  turn_seq: number;
  /**
   * Set when the commit was refused (nothing written): the session was deleted since the turn's
   * lease, or the turn ran too long. Its bodies are noted for deletion.
   */
  refused?: Refusal;
}

export interface SessionLoad {
  records: ResultRecord[];
  recall_declared: boolean;
  /** Per asked tool name, this session's offloads and recalls. */
  session_tool_stats: Record<string, ToolStats>;
  /** Median seconds between the session's recent turns, null before two. */
  gap_seconds: number | null;
  /** Seconds since the last turn, null before the first. */
  idle_seconds?: number | null;
  /** The turn's lease (see turn-protocol.ts); null: the session is being deleted. */
  lease?: TurnLease | null;
  /** How many of the asked ids were answered (the rest did not fit the budget); all when absent. */
  answered?: number;
  /** The tenant's statistics for the asked names, when the session holds a copy of them. */
  tool_stats?: Record<string, ToolStats>;
  /** The tenant's calibration per model, when the session holds a copy of it. */
  calibrations?: Record<string, Calibration>;
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
 * The session's authority. The turn protocol's methods (`begin`, `addRecords`, `purged`:
 * turn-protocol.ts) are optional: a store composes an adapter without them as before.
 */
export interface SessionStatePort extends Partial<TurnProtocol> {
  load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames?: readonly string[],
  ): Promise<SessionLoad>;
  /** `decisions` (optional): kept as the session's last turn, replacing the previous one's. */
  commit(ref: SessionRef, commit: TurnCommit): Promise<SessionCommitResult>;
  /**
   * Counts a recall (also for the latest logged turn); returns the tool name of the mem_id's result
   * when a record names it.
   */
  noteRecall(ref: SessionRef, memId: string): Promise<string | null>;
  describe(ref: SessionRef): Promise<SessionDetail | null>;
  /**
   * The savings report's data, null for an unknown session; `turns: false` leaves out the per-turn
   * lines.
   */
  report(ref: SessionRef, options?: { turns?: boolean }): Promise<SessionReportData | null>;
  getConfig(ref: SessionRef): Promise<OffloadConfigPatch>;
  /** Replaces the session's config layer (`{}` clears it). */
  setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void>;
  /**
   * Forgets the session; returns the mem_ids its records named (so their index entries can go too).
   */
  destroy(ref: SessionRef): Promise<string[]>;
  /**
   * The config layer and the proxy's memos in one read (a proxied call makes it before compacting).
   */
  proxyState(ref: SessionRef): Promise<ProxyState>;
  /**
   * After a proxied call: notes its hops on its turn log line and keeps its memos (the oldest
   * beyond MEMO_LIMIT go).
   */
  finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void>;
  /**
   * Keeps a turn's measured usage on its log line (the compact route's clients post it back): the
   * first report stands. Null for an unknown session.
   */
  recordUsage(ref: SessionRef, key: TurnKey, usage: TurnUsage): Promise<UsageOutcome | null>;
}

/**
 * The estimates' calibration per tenant and model (calibration.ts): provider tokens per estimated
 * token, learned from measured turns. Small state per model; best effort like the statistics (a
 * lost update only slows learning).
 */
export interface CalibrationPort {
  get(tenant: string, model: string): Promise<Calibration | null>;
  /** Every model's calibration of the tenant (for the reports). */
  all(tenant: string): Promise<Record<string, Calibration>>;
  /**
   * Learns one measured turn (`calibrate`, applied atomically); returns the new state.
   * `estimate`: the request as sent, estimated per class; `measured`: its billed prompt tokens.
   * Absent: the session state learns (the SessionDO holds its tenant's calibration and sends its
   * samples in batches, tenant-copy.ts), so no turn waits on a tenant-wide object.
   */
  learn?(
    tenant: string,
    model: string,
    estimate: Record<string, number>,
    measured: number,
  ): Promise<Calibration>;
}

/**
 * Learning statistics across a tenant's sessions (the adaptive gate's recall rate per tool name).
 * Counts only, no content; they outlive deleted sessions as aggregates. Best effort: a lost
 * increment only slows learning.
 */
export interface TenantStatsPort {
  load(tenant: string, toolNames: readonly string[]): Promise<Record<string, ToolStats>>;
  add(tenant: string, deltas: Record<string, Partial<ToolStats>>): Promise<void>;
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

/**
 * What the routes and the proxy need of a store, beyond the core's port. One instance serves one
 * call: its `notes` and `lastTurnSeq` are that call's (the Worker builds a store per request;
 * `forCall()` gives another instance over the same backends, e.g. for calls running in one
 * process).
 */
export interface ServiceStore extends OffloadStore {
  /**
   * Non-fatal problems of this call (a lookup-index or statistics write that failed), for its
   * summary.
   */
  readonly notes: readonly (IndexProblem | StatsProblem)[];
  /**
   * The turn log line of this call's last commit (the proxy notes its hops on it), null before one.
   */
  readonly lastTurnSeq: number | null;
  /** Another instance over the same backends, with notes of its own: one per concurrent call. */
  forCall(): ServiceStore;
  /**
   * A turn's first read (turn-protocol.ts): the config layer, the records of `ask.ids` (served to
   * the turn's `load`) and the memos anchored on `ask.anchors`, in one round trip where the
   * session state offers it.
   */
  begin(ref: SessionRef, ask: BeginAsk): Promise<TurnStart>;
  describeSession(ref: SessionRef): Promise<SessionDetail | null>;
  /** The tenant's extraction cache (a store without one misses every time and stores nothing). */
  getExtraction(tenant: string, key: string): Promise<CachedExtraction | null>;
  putExtraction(tenant: string, key: string, value: CachedExtraction): Promise<void>;
  /**
   * The savings report's data (null: unknown session); `turns: false` leaves out the per-turn
   * lines.
   */
  sessionReport(ref: SessionRef, options?: { turns?: boolean }): Promise<SessionReportData | null>;
  getConfig(ref: SessionRef): Promise<OffloadConfigPatch>;
  /** Replaces the session's config layer (`{}` clears it). */
  setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void>;
  proxyState(ref: SessionRef): Promise<ProxyState>;
  finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void>;
  /**
   * Keeps a turn's measured usage (first report stands) and calibrates the tenant's estimates with
   * it. Null for an unknown session.
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
