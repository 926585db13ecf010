/**
 * What the turn transform needs from a provider format: find the tool results (as spans over the raw text),
 * tell where the cache breakpoints are, and render a replacement. One adapter per format; the transform in
 * compact.ts is format-blind.
 */
import type { JsonNode, JsonString } from "../json/scan.ts";
import type { RecallMode } from "../../config.ts";

export interface ToolResultSite {
  /** Order among the request's tool results (0 = oldest). */
  index: number;
  /** The call's id: Anthropic `tool_use_id`, OpenAI chat `tool_call_id`, Responses `call_id`. Sticky decisions are keyed by it. */
  tool_use_id: string;
  tool_name: string;
  /** The matching call's input (raw JSON node), e.g. to name a recall answer's arguments. */
  tool_input: JsonNode | undefined;
  /**
   * The text `tool_input`'s spans index when it is not the request itself: OpenAI sends a call's arguments as
   * a JSON-encoded string, so the adapter parses the decoded string (for recall calls only) and says so here.
   */
  tool_input_source?: string;
  message_index: number;
  /** Where the result is, for reports and errors: `messages[3].content[1]`. */
  path: string;
  /** A later assistant message exists: the model has answered after seeing this result. */
  settled: boolean;
  /** The span that a replacement rewrites (the content value), or undefined when the result has none. */
  content: JsonNode | undefined;
  /** The text pieces measured and offloaded (invariant 10: media blocks are not). */
  texts: JsonString[];
  /** The result carries image/document blocks besides text. */
  has_media: boolean;
  /** Offset of the result in prompt order (chars of raw request text before it). */
  position: number;
}

export interface Breakpoint {
  /** Prompt-order offset of the end of the cached block. */
  position: number;
  /**
   * Which write rate the block is priced at: "5m" the short write (Anthropic 5 minutes, OpenAI 30 minutes),
   * "1h" the long one (Anthropic 1 hour, OpenAI 12 hours), as in the price table's two write columns.
   */
  ttl: "5m" | "1h";
}

/** A block the advancing cache anchor may be placed on (the last blocks of the prompt, in prompt order). */
export interface AnchorSlot {
  /** Prompt-order offset of the end of the block: what a breakpoint here caches. */
  position: number;
  /** Raw offset where the marker is inserted (just before the block's closing brace). */
  insert_at: number;
  /** The message content is a plain string: the marker needs it rewritten as one text block. */
  string_span?: { start: number; end: number };
  /** Index of the ToolResultSite when the block is a tool result. */
  site?: number;
}

export interface RequestAnalysis {
  model: string | null;
  sites: ToolResultSite[];
  /** Assistant messages in the request: the conversation's turn index. */
  assistant_turns: number;
  /** Raw chars of everything the model reads (tools, system, messages), in prompt order. */
  prompt_chars: number;
  /** Cache breakpoints in prompt order (explicit and automatic). */
  breakpoints: Breakpoint[];
  /**
   * The client caches at all (a breakpoint, automatic caching, or a provider that caches on its own, like
   * OpenAI once the prompt reaches the model's minimum cacheable length).
   */
  client_caches: boolean;
  has_recall_tool: boolean;
  /** A top-level cache_control (automatic caching) is set: the provider places the breakpoint itself. */
  auto_cache: boolean;
  /** Prompt-order offset where the last message starts. */
  last_message_position: number;
  /** Where an anchor could go (formats with explicit breakpoints only); empty when none can. */
  anchor_slots: AnchorSlot[];
}

export interface Edit {
  start: number;
  end: number;
  text: string;
}

export interface FormatAdapter {
  readonly format: string;
  analyze(raw: string, root: JsonNode): RequestAnalysis;
  /** The JSON text that replaces `site.content` so the result reads `text` (media blocks kept in place). */
  renderContent(raw: string, site: ToolResultSite, text: string): string;
  /** The edit that declares the recall tool at the end of `tools`. */
  declareRecallTool(raw: string, root: JsonNode, mode: RecallMode): Edit;
  /** The edit that puts a cache breakpoint on `slot` (formats with explicit breakpoints). */
  anchorEdit?(raw: string, slot: AnchorSlot, ttl: "5m" | "1h"): Edit;
}
