/**
 * The service's storage, split by what each backend is good at (DESIGN.md "Storage"):
 * - `SessionStatePort`: the authority for a session (sticky records, turn log, config, counters). The Worker's
 *   adapter is the SessionDO; it sees only small records, never a body.
 * - `BodyLedgerPort`: full bodies, one object per mem_id (R2). Strongly consistent: recall reads here.
 * - `IndexPort`: lookups that may lag (KV): mem_id → location and structural index, tenant → sessions.
 *   Nothing may depend on reading a write back; a miss falls back to the session state or the ledger.
 * - `ExtractionCachePort`: attachment extractions per tenant, keyed by content hash (R2, `extracts/<tenant>/…`).
 * Each port has an in-memory twin and its own contract suite in test/contract; `EdgeStore` composes the
 * three into the core's `OffloadStore`.
 */
import type { OffloadConfigPatch, RecallMode } from "../config.ts";
import type {
  BodyMeta,
  Format,
  ProxyTurnNote,
  ResultRecord,
  SessionRef,
  StoredBody,
  TurnDecision,
  TurnLog,
} from "../core/types.ts";
import { OffloadError } from "../errors.ts";
import type { ExtractionCache } from "../extract/cache.ts";
import type { SessionSummary, ToolStats } from "./port.ts";

export interface SessionCommitResult {
  /** Standing record per committed tool_use_id (an earlier one where it existed: first writer wins). */
  records: ResultRecord[];
  /** The tenant → session index entry should be (re)written (first commit, then about once a day). */
  index_due: boolean;
  /** Offloaded records this commit inserted, per tool name (for the tenant's learning statistics). */
  offloads: Record<string, number>;
  /** The turn log line this commit wrote (the proxy notes its hops on it once the provider has answered). */
  turn_seq: number;
}

/** A recall_tool_result call the model made, as the proxy replays it: the call's id and its arguments' JSON text. */
export interface RememberedCall {
  id: string;
  arguments: string;
}

/** The recall settings the answer was computed with, so replaying it yields the same bytes. */
export interface RecallParams {
  mode: RecallMode;
  max_chars: number;
  window: number;
}

/**
 * What the proxy remembers about a session so the client never has to see its tool (docs/proxy.md):
 * - "recall": a mixed answer's recall calls, spliced back (call and answer) next to the client's own calls
 *   (`anchors`, their ids) whenever a later request carries them;
 * - "alias" (Responses with stored history): the response id the client saw stands for the last hop's
 *   response, and `calls` are answers the provider still expects there (the hop limit left them open).
 * Only small records: the answers are recomputed from the ledger with the stored params, never stored.
 */
export type ProxyMemo =
  | {
      kind: "recall";
      format: Format;
      anchors: string[];
      calls: RememberedCall[];
      params: RecallParams;
    }
  | {
      kind: "alias";
      format: "openai-responses";
      from: string;
      to: string;
      calls: RememberedCall[];
      params: RecallParams;
    };

export interface ProxyState {
  /** The session's config layer (what `PUT …/config` stored), `{}` when none. */
  config: OffloadConfigPatch;
  /** Oldest first, at most MEMO_LIMIT. */
  memos: ProxyMemo[];
}

export interface ProxyTurn {
  /** The turn log line to note the hops on (from the call's commit), or null when compaction logged no turn. */
  turn_seq: number | null;
  note: ProxyTurnNote;
  memos: readonly ProxyMemo[];
}

export interface SessionCommit {
  records: readonly ResultRecord[];
  recall_declared: boolean;
  log: TurnLog;
  decisions?: readonly TurnDecision[];
}

export interface SessionLoad {
  records: ResultRecord[];
  recall_declared: boolean;
  /** Per asked tool name, this session's offloads and recalls. */
  session_tool_stats: Record<string, ToolStats>;
  /** Median seconds between the session's recent turns, null before two. */
  gap_seconds: number | null;
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

/** A turn as the session logged it: the core's line, when it was committed, and the recalls that followed it. */
export interface LoggedTurn extends TurnLog {
  /** Commit time, epoch milliseconds. */
  at: number;
  /**
   * Successful recalls counted after this turn's compact call and before the next one's: the model, answering
   * this turn's prompt, read these back.
   */
  recalls: number;
}

/** The decisions of the session's latest turn (at most LAST_DECISIONS_LIMIT of them, the last in request order). */
export interface LastTurn {
  at: number;
  turn: number;
  shadow: boolean;
  decisions: TurnDecision[];
  /** How many results the turn decided (more than `decisions` holds when it was cut). */
  decisions_total: number;
}

/** Sums over the logged turns (the last TURN_LOG_LIMIT); live and shadow savings apart. */
export interface TurnTotals {
  turns_logged: number;
  shadow_turns: number;
  tokens_before: number;
  tokens_after: number;
  /** Live turns: what offload saved. */
  saved_tokens: number;
  saved_usd: number;
  /** Shadow turns: what offload would have saved. */
  would_save_tokens: number;
  would_save_usd: number;
  gate_fired: number;
  gate_declined: number;
}

/** What the savings report needs, computed where the state lives (no record bodies or stubs travel). */
export interface SessionReportData {
  tenant: string;
  session: string;
  created_at: number;
  last_active: number;
  calls: number;
  recall_declared: boolean;
  config: OffloadConfigPatch;
  /** The sticky decisions by action; `offloaded_recalled`: offloaded results recalled at least once. */
  records: { kept: number; compacted: number; offloaded: number; offloaded_recalled: number };
  /** Successful recalls in the session (all of them, logged turns or not). */
  recalls: number;
  totals: TurnTotals;
  /** The latest logged turn (whether or not the per-turn lines were asked for), null before the first. */
  latest: { turn: number; at: number; shadow: boolean } | null;
  /** Oldest first; empty when not asked for. */
  turns: LoggedTurn[];
  last_turn: LastTurn | null;
}

export interface SessionStatePort {
  load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames?: readonly string[],
  ): Promise<SessionLoad>;
  /** `decisions` (optional): kept as the session's last turn, replacing the previous one's. */
  commit(ref: SessionRef, commit: SessionCommit): Promise<SessionCommitResult>;
  /** Counts a recall (also for the latest logged turn); returns the tool name of the mem_id's result when a record names it. */
  noteRecall(ref: SessionRef, memId: string): Promise<string | null>;
  describe(ref: SessionRef): Promise<SessionDetail | null>;
  /** The savings report's data, null for an unknown session; `turns: false` leaves out the per-turn lines. */
  report(ref: SessionRef, options?: { turns?: boolean }): Promise<SessionReportData | null>;
  getConfig(ref: SessionRef): Promise<OffloadConfigPatch>;
  /** Replaces the session's config layer (`{}` clears it). */
  setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void>;
  /** Forgets the session; returns the mem_ids its records named (so their index entries can go too). */
  destroy(ref: SessionRef): Promise<string[]>;
  /** The config layer and the proxy's memos in one read (a proxied call makes it before compacting). */
  proxyState(ref: SessionRef): Promise<ProxyState>;
  /** After a proxied call: notes its hops on its turn log line and keeps its memos (the oldest beyond MEMO_LIMIT go). */
  finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void>;
}

/**
 * Learning statistics across a tenant's sessions (the adaptive gate's recall rate per tool name). Counts only,
 * no content; they outlive deleted sessions as aggregates. Best effort: a lost increment only slows learning.
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

/** What an index throws for a list cursor it cannot read: the caller's mistake (400), not an outage. */
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

/**
 * The tenant's extraction cache (src/extract/cache.ts). Keys are content hashes, not session-scoped: entries
 * outlive sessions (an R2 lifecycle rule on `extracts/` bounds them). Strongly consistent, like the ledger.
 */
export type ExtractionCachePort = ExtractionCache;

/** R2 key of a cached extraction: the tenant first; the key is `<sha256>/<format>/<variant>`. */
export function extractionKey(tenant: string, key: string): string {
  return `${EXTRACTS_PREFIX}${tenant}/${key}`;
}

export const EXTRACTS_PREFIX = "extracts/";

/** The ledger key of a body: tenant and session first, so a session's bodies share one listable prefix. */
export function ledgerKey(ref: SessionRef, memId: string): string {
  return `${ledgerPrefix(ref)}${memId}`;
}

/** Ids cannot contain "/" (see core/session.ts), so `a/b/` never prefixes another session's keys. */
export function ledgerPrefix(ref: SessionRef): string {
  return `bodies/${ref.tenant}/${ref.session}/`;
}

/** KV keys: `s/<tenant>/<session>` (tenant → sessions) and `m/<tenant>/<session>/<mem_id>` (mem_id → location). */
export function indexSessionKey(ref: SessionRef): string {
  return `${indexSessionPrefix(ref.tenant)}${ref.session}`;
}

export function indexSessionPrefix(tenant: string): string {
  return `s/${tenant}/`;
}

export function indexBodyKey(ref: SessionRef, memId: string): string {
  return `m/${ref.tenant}/${ref.session}/${memId}`;
}
