/**
 * The storage port. The core does all its I/O through this interface; adapters hold their binding (a Map, an
 * R2 bucket, a Durable Object stub…) and must pass the shared contract suite in test/contract.
 *
 * Guarantees an adapter gives:
 * - `putBody` resolves only once the body is durable (nothing is stubbed before its body is safe);
 * - `commit` is first-writer-wins per tool_use_id and returns the records that now stand, so two turns of
 *   one session racing each other render the same bytes;
 * - everything is scoped by tenant and session: another scope's mem_id reads exactly like an unknown one;
 * - values come back as copies: a caller mutating what it got changes nothing stored;
 * - a shadow turn's offloads (`log.shadow`) do not count in the tenant's learning statistics: the model saw
 *   those results full, so it could not recall them, and counting them would teach live sessions that nobody
 *   recalls.
 */
import type {
  BodyMeta,
  ResultRecord,
  SessionRef,
  StoredBody,
  TurnDecision,
  TurnLog,
} from "../core/types.ts";
import type { CachedExtraction } from "../extract/cache.ts";

/** Offloads and recalls of one tool's results: what the adaptive gate learns its recall rate from. */
export interface ToolStats {
  offloaded: number;
  recalls: number;
}

export interface LoadedState {
  /** Records for the requested tool_use_ids that have one. */
  records: Map<string, ResultRecord>;
  /** Whether the recall tool has been declared in this session (sticky once true). */
  recall_declared: boolean;
  /** Per tool name (of those asked for), across the tenant's sessions. Optional for adapters that do not learn. */
  tool_stats?: Record<string, ToolStats>;
  /** Per tool name, this session only. */
  session_tool_stats?: Record<string, ToolStats>;
  /** Typical seconds between this session's turns (median of recent gaps), null before two turns. */
  gap_seconds?: number | null;
  /** Seconds since the session's last turn was committed (the store's clock), null before the first. */
  idle_seconds?: number | null;
}

export interface TurnCommit {
  records: readonly ResultRecord[];
  recall_declared: boolean;
  log: TurnLog;
  /**
   * Every result's decision on this turn, for the session report's "last turn" (a store may keep only the
   * latest turn's, or none: nothing reads them back to decide).
   */
  decisions?: readonly TurnDecision[];
}

export interface CommitResult {
  /** The standing record for every committed tool_use_id (the earlier one where a record already existed). */
  records: Map<string, ResultRecord>;
}

export interface SessionSummary {
  tenant: string;
  session: string;
  calls: number;
  recall_declared: boolean;
  recalls: number;
  /** Per tool name, this session. */
  tool_stats: Record<string, ToolStats>;
  records: ResultRecord[];
  turns: TurnLog[];
}

export interface OffloadStore {
  /**
   * The sticky records of `toolUseIds`, the session flags, and (for the adaptive gate) the recall statistics of
   * `toolNames`. A commit's newly stored offloaded records count as offloads of their tool; `noteRecall` counts
   * a recall of the mem_id's tool.
   */
  load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames?: readonly string[],
  ): Promise<LoadedState>;
  commit(ref: SessionRef, commit: TurnCommit): Promise<CommitResult>;
  putBody(ref: SessionRef, body: string, meta: BodyMeta): Promise<void>;
  getBody(ref: SessionRef, memId: string): Promise<StoredBody | null>;
  noteRecall(ref: SessionRef, memId: string): Promise<void>;
  describeSession(ref: SessionRef): Promise<SessionSummary | null>;
  /** Removes the session's state and bodies; deleting an unknown session is not an error. */
  deleteSession(ref: SessionRef): Promise<void>;
  /**
   * Optional: the tenant's cache of attachment extractions (src/extract/cache.ts), keyed by content hash, so a
   * file is extracted once per tenant whatever the session. Not scoped by session and not removed with one.
   * A store without it makes the attachment policy extract again whenever a decision needs the text.
   */
  getExtraction?(tenant: string, key: string): Promise<CachedExtraction | null>;
  putExtraction?(tenant: string, key: string, value: CachedExtraction): Promise<void>;
}
