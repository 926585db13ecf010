/**
 * What the proxy loop needs of a store, and what it remembers there. The proxy depends on this
 * interface only (never on a concrete store), so it runs wherever a store implements it: in the
 * Worker over the Durable Objects, or in one process over a `MemoryStore`.
 */
import type { OffloadConfigPatch, RecallMode } from "../config.ts";
import type { TurnUsage } from "../core/billing.ts";
import type { OffloadStore } from "../core/ports.ts";
import type { Problem } from "../core/problems.ts";
import type { Format, ProxyTurnNote, SessionRef, TurnEstimate } from "../core/types.ts";

/**
 * A store for one proxied call: the core's port (compaction, recall), the session's proxy state,
 * and what this call's commit left (its turn line, its non-fatal problems). One instance per call.
 */
export interface ProxyStore extends OffloadStore {
  /** The config layer and the memos in one read (made before compacting). */
  proxyState(ref: SessionRef): Promise<ProxyState>;
  /**
   * Optional: the config layer, the records of `ask.ids` (kept for the turn's load) and the memos
   * anchored on `ask.anchors`, in one round trip; without it, `proxyState` and a load.
   */
  begin?(
    ref: SessionRef,
    ask: {
      ids: readonly string[] | null;
      names: readonly string[];
      anchors?: readonly string[];
    },
  ): Promise<TurnStart>;
  /**
   * After the call: notes its hops on its turn log line and keeps its memos (the oldest beyond the
   * limit go).
   */
  finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void>;
  /** The turn log line of this call's commit, null when compaction logged no turn. */
  readonly lastTurnSeq: number | null;
  /** Non-fatal problems of this call's store operations, for the summary. */
  readonly notes: readonly Problem[];
}

/**
 * A recall_tool_result call the model made, as the proxy replays it: the call's id and its
 * arguments' JSON text.
 */
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
 * - "recall": a mixed answer's recall calls, spliced back (call and answer) next to the client's
 *   own calls (`anchors`, their ids) whenever a later request carries them;
 * - "alias" (Responses with stored history): the response id the client saw stands for the last
 *   hop's response, and `calls` are answers the provider still expects there (the hop limit left
 *   them open). Only small records: the answers are recomputed from the ledger with the stored
 *   params, never stored.
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

/** A turn's first read: the session's config layer and the memos anchored on the request. */
export interface TurnStart {
  config: OffloadConfigPatch;
  memos: ProxyMemo[];
}

export interface ProxyState {
  /** The session's config layer (what `PUT …/config` stored), `{}` when none. */
  config: OffloadConfigPatch;
  /** Oldest first, at most MEMO_LIMIT. */
  memos: ProxyMemo[];
}

export interface ProxyTurn {
  /**
   * The turn log line to note the hops on (from the call's commit), or null when compaction logged
   * no turn.
   */
  turn_seq: number | null;
  note: ProxyTurnNote;
  memos: readonly ProxyMemo[];
  /**
   * What the provider billed for the call, read from its answers (summed over hops; the client's
   * own call apart): kept on the turn's line unless it has usage already. Absent when the answers
   * carried none.
   */
  usage?: TurnUsage;
  /**
   * The turn's estimates (the compact report's): the store calibrates them against `usage`. Not
   * stored (the line has them).
   */
  estimate?: TurnEstimate;
}
