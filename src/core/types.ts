/** The vocabulary shared by the core, its ports and the service. */
import type { RecallMode } from "../config.ts";
import type { TurnUsage } from "./billing.ts";
import type { ExtractionProblem } from "./problems.ts";
import type { ContentKind } from "./tokens.ts";

/**
 * A provider request format: Anthropic Messages, OpenAI Chat Completions, OpenAI Responses, or the
 * AI SDK's provider-neutral prompt (`ai-sdk`: `{ model, provider, tools, prompt }` as JSON, what the
 * AI SDK middleware compacts).
 */
export type Format = "anthropic" | "openai-chat" | "openai-responses" | "ai-sdk";

/** Which session a turn belongs to. Every stored key is scoped by both. */
export interface SessionRef {
  readonly tenant: string;
  readonly session: string;
}

/**
 * "attachment": a record of the attachment policy (a document or image block), not of a tool
 * result.
 */
export type Tier = "hot" | "small" | "medium" | "large" | "attachment";
export type Action = "kept" | "compacted" | "offloaded";

export interface GateResult {
  fire: boolean;
  net_usd: number;
  reprefill_saving_usd: number;
  stub_carry_cost_usd: number;
  invalidation_cost_usd: number;
  expected_recall_hop_cost_usd: number;
  /**
   * Declaring the recall tool with this offload (lazy declaration): its carry over H turns, plus
   * rewriting the cached head.
   */
  tool_declaration_cost_usd: number;
  reason: string;
  /** The price-table entry used, or null for an unknown model. */
  model: string | null;
  /** The inputs the gate priced, so a decision can be audited. */
  inputs: {
    result_tokens: number;
    stub_tokens: number;
    horizon: number;
    recall_probability: number;
    cached_side: boolean;
    tokens_to_breakpoint: number;
    cache_ttl: "5m" | "1h";
    context_tokens: number;
    recall_tokens: number;
    recall_output_tokens: number;
    tool_tokens: number;
    tool_prefix_tokens: number;
    first_delivery: boolean;
    /** The session was idle past its cache TTL: priced without invalidation or declaration rewrite. */
    cache_cold: boolean;
    /** The prompt's growth per call so far, when known (what the minimum cacheable length costs). */
    prompt_growth_tokens?: number;
  };
}

/**
 * A sticky decision about one tool result, keyed by its tool_use_id within a session. Once stored
 * it is never revisited: every later turn renders the result from this record (`rendered` is the
 * exact replacement text).
 */
export interface ResultRecord {
  tool_use_id: string;
  tool_name: string;
  tier: Tier;
  action: Action;
  mem_id: string | null;
  /** Size of the original text (UTF-16 units) and its token estimate. */
  chars: number;
  tokens: number;
  kind: ContentKind;
  /**
   * Raw JSON length of the result's content when decided: the O(1) "same body?" check on later
   * turns.
   */
  raw_chars: number;
  /**
   * Keyed digest of the original text (stubbed results), to tell the same body from another under a
   * reused id.
   */
  fingerprint: string;
  rendered: string | null;
  rendered_tokens: number;
  /** Assistant turns in the request on which the decision was taken. */
  turn: number;
  reason: string;
  gate: GateResult | null;
  /**
   * Set on attachment records (tier "attachment"): what the block was and what it costs natively.
   */
  attachment?: AttachmentInfo;
  /**
   * Share of whitespace in the text (2 decimals): how well it tokenizes, beyond its kind (indented
   * JSON packs more chars per token than compact JSON). Absent on records of earlier versions.
   */
  ws?: number;
}

/**
 * An attachment record is keyed by the block's id (`att_…`, from its place and its bytes), `action`
 * is "compacted" when the block is replaced and "kept" when it stays native for good (a failed
 * extraction, no saving); `rendered` holds a short replacement, or `mem_id` names the ledger body
 * holding a long one.
 */
export interface AttachmentInfo {
  kind: "document" | "image";
  /** Detected format (pdf, png…), or the declared media type when it could not be read. */
  format: string;
  bytes: number;
  /** The turn the block arrived on. */
  arrived: number;
  pages?: number;
  width?: number;
  height?: number;
  /**
   * Estimated tokens of the block sent natively (null when it could not be read, e.g. an encrypted
   * PDF).
   */
  native_tokens: number | null;
  /**
   * Why a sticky native decision was taken, when extraction failed (records of older versions say
   * `type`).
   */
  failed?: ExtractionProblem;
}

export interface BodyMeta {
  mem_id: string;
  tool_use_id: string;
  tool_name: string;
  chars: number;
  tokens: number;
  kind: ContentKind;
  /** The structural index's outline, as shown in the stub. */
  outline: string;
  turn: number;
}

export interface StoredBody {
  body: string;
  meta: BodyMeta;
}

/** What a turn did, counted: its log line and its report both carry these. */
export interface TurnCounts {
  /** Tool results in the request, and what became of them this turn. */
  results: number;
  kept: number;
  compacted: number;
  offloaded: number;
  /** Results decided this turn (not replayed from an earlier one). */
  new_decisions: number;
  /**
   * Estimated prompt tokens with every result (and attachment) sent as the client sent it, and as
   * returned.
   */
  tokens_before: number;
  tokens_after: number;
  /** Estimated dollars this request saves against sending everything as the client sent it. */
  saved_usd: number;
}

/** A short per-turn line for reports (no bodies). */
export interface TurnLog extends TurnCounts {
  turn: number;
  /** Non-fatal problems of the turn (their count). */
  errors: number;
  /**
   * Shadow mode (`tool_result_offload_shadow`): the decisions were taken and recorded, but the
   * request went out unchanged, so `tokens_after` and `saved_usd` are what offload would have sent
   * and saved.
   */
  shadow: boolean;
  /**
   * The net-saving gate's verdicts this turn: how often it was consulted and fired, or declined.
   */
  gate_fired: number;
  gate_declined: number;
  /** Set by the proxy routes once the provider has answered: recall hops it ran for this call. */
  proxy?: ProxyTurnNote;
  /** The turn's estimates by class of content, to set the provider's usage against. */
  estimate?: TurnEstimate;
  /**
   * What the provider billed for the turn: read from its answers by the proxy, or posted back by
   * the client (`POST /v1/sessions/{id}/usage`). Absent until then.
   */
  usage?: TurnUsage;
}

/** A turn's estimates, kept on its log line (estimate.ts). */
export interface TurnEstimate {
  /** Estimated tokens of the request as it went out, per class (content kinds, "request"). */
  sent: Record<string, number>;
  /**
   * Estimated tokens taken out of the client's request (its results and attachments, less the
   * stubs and the recall tool's declaration put in), per class; may be negative.
   */
  removed: Record<string, number>;
  /**
   * Share of the client's own request before its last cache breakpoint (0 when the client does not
   * cache): what the provider would have cached had the request gone out as the client sent it.
   */
  cached_share: number;
  /** That breakpoint's lifetime. */
  ttl: "5m" | "1h";
  /** The estimates the gate used were calibrated (enough measured turns). */
  calibrated: boolean;
  /** The price-table model the turn was priced as (its usage is priced so), null when unknown. */
  model: string | null;
  /**
   * The client's request and the one sent, sketched at a bounded set of unit boundaries
   * (core/sketch.ts): what the billing counterfactual runs the provider's cache rules over.
   */
  sketch?: string;
  /** The request's cache routing key (OpenAI's `prompt_cache_key`), hashed. */
  cache_scope?: string;
  /**
   * Results sent in full for the first time on this turn (the newest, not yet answered), by call
   * id: their estimated tokens. A later measured prompt's growth measures them.
   */
  fresh?: Record<string, number>;
  /** Results this turn's request took out (offloaded or shortened), by call id: their estimates. */
  cut?: Record<string, number>;
  /**
   * Results stubbed on the call they arrived (never sent, so no prompt measures them), by call id:
   * their tokens as the provider's token-counting endpoint counted them (proxy/token-count.ts), noted
   * when the turn finished.
   */
  counted?: Record<string, number>;
}

/** What the proxy adds to a turn's log line: the extra provider calls it made to answer recalls. */
export interface ProxyTurnNote {
  /** Extra provider calls (0: the first answer needed no recall). */
  hops: number;
  /** recall_tool_result calls the proxy executed (in hops and in mixed answers). */
  recalls: number;
  /** The hop limit stopped the loop while the model still asked for recalls. */
  exhausted: boolean;
}

/**
 * A recall_tool_result call the model made, as the proxy replays it: the call's id and its
 * arguments' JSON text.
 */
export interface RememberedCall {
  id: string;
  arguments: string;
}

/** The recall settings an answer was computed with, so replaying it yields the same bytes. */
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
 *   them open);
 * - "hop" (Anthropic, a model with preserved thinking; through the proxy or the AI SDK middleware): the
 *   client got one message for a turn answered in hops; wherever a later request carries it (`anchors`:
 *   its first thinking block's signature, as `sig:` and its last 64 chars) it is split back into the hops'
 *   messages, with our calls and their answers (`hops[i]`: how many of its blocks, or parts, the i-th
 *   hop's answer gave, and how many of `calls` it made), so every thinking block follows what it was
 *   produced after.
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
      kind: "hop";
      format: "anthropic" | "ai-sdk";
      anchors: string[];
      calls: RememberedCall[];
      /** `sig` (ai-sdk): the anchor of the hop's first reasoning part, where the app's message may differ. */
      hops: { kept: number; calls: number; sig?: string }[];
      /** ai-sdk: the anchor of the final answer's first reasoning part. */
      rest_sig?: string;
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

/** The strings a memo is found by in a later request. */
export function memoAnchors(memo: ProxyMemo): string[] {
  return memo.kind === "alias" ? [memo.from] : memo.anchors;
}

/** One result's decision on a turn, as the session report shows it (no body, no stub text). */
export interface TurnDecision {
  tool_use_id: string;
  tool_name: string;
  /** Where the result sits in the request, e.g. `messages[2].content[0]`. */
  path: string;
  tier: Tier;
  action: Action;
  mem_id: string | null;
  chars: number;
  tokens: number;
  /** Tokens the result costs as rendered (or, in shadow mode, would have cost). */
  sent_tokens: number;
  /** Taken on an earlier turn and replayed. */
  sticky: boolean;
  reason: string;
  gate?: GateResult;
  /** The `tool` of the tool rule (`tool_result_tool_rules`) this result's tool follows, if one. */
  rule?: string;
}
