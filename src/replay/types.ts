/** Replay vocabulary: sessions in the corpus format, and what a replay measures per policy. */
import type { ToolRuleCount } from "../core/turn/tool-rules.ts";

export type Block = { type: string; [key: string]: unknown };
export type Message = { role: "user" | "assistant"; content: string | Block[] };

export interface CorpusRef {
  turn: number;
  quote: string;
  source_tool_use_id: string;
  in?: string;
}

export interface ReplaySession {
  id: string;
  system?: unknown;
  tools?: unknown[];
  messages: Message[];
  /** Prompt lengths (in messages) of the model calls, in order; each call's answer is messages[n] when it is an assistant message. */
  calls: number[];
  /** When each call was made (epoch ms, one per call), from a request log's timestamps. */
  times?: number[];
  refs?: CorpusRef[];
}

/** An Anthropic Messages request as the replay builds it (plain data). */
export interface Request {
  model: string;
  max_tokens: number;
  system?: unknown;
  tools?: unknown[];
  messages: Message[];
  [key: string]: unknown;
}

/**
 * The client's caching: `cached`, an advancing breakpoint on the last block of every prompt; `uncached`,
 * none (with Anthropic's rules nothing is cached but what a policy marks); `automatic`, OpenAI's (the
 * provider caches every prompt on its own, cache.ts): the request the policy sees is the cached client's,
 * whose breakpoint at the end of the prompt is where OpenAI's cache ends too.
 */
export type Client = "cached" | "uncached" | "automatic";

export interface CallCost {
  prompt_tokens: number;
  read_tokens: number;
  write_tokens: number;
  input_tokens: number;
  output_tokens: number;
  usd: number;
}

/** Counts per kind of reference evidence (see references.ts). */
export interface KindCounts {
  corpus: number;
  quote: number;
  token: number;
}

export interface SessionResult {
  session: string;
  calls: number;
  usd: number;
  prompt_tokens: number;
  read_tokens: number;
  recall_hops: number;
  lost_references: number;
  references: number;
  references_by_kind: KindCounts;
  lost_by_kind: KindCounts;
}

export interface PolicyTotals {
  policy: string;
  total_usd: number;
  ratio_to_none: number | null;
  prompt_tokens: number;
  cache_read_share: number;
  recall_hops: number;
  lost_references: number;
  references: number;
  references_by_kind: KindCounts;
  lost_by_kind: KindCounts;
  worst_session_ratio: number | null;
  worst_session: string | null;
  /** Sessions that cost more than under `none` (by more than a rounding error). */
  dearer_sessions: number;
  sessions: SessionResult[];
  /** What each tool rule of the policy's config did (each tool result counted once); absent: no rules. */
  tool_rules?: ToolRuleCount[];
}

export interface ReplayReport {
  model: string;
  client: Client;
  sessions: number;
  policies: PolicyTotals[];
}
