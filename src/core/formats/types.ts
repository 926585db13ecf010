/**
 * What the turn transform needs from a provider format: find the tool results (as spans over the raw text),
 * tell where the cache breakpoints are, and render a replacement. One adapter per format; the transform in
 * compact.ts is format-blind.
 */

import type { RecallMode } from "../../config.ts";
import type { JsonNode, JsonString } from "../json/scan.ts";

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
  /** The text pieces measured and offloaded (media blocks never are: only text is measured). */
  texts: JsonString[];
  /**
   * A result that is a JSON value rather than text (the AI SDK's `json` outputs, which providers
   * send as the value's JSON text): measured and offloaded as its raw JSON text, in place of `texts`.
   */
  json_text?: JsonNode;
  /** The result carries image/document blocks besides text. */
  has_media: boolean;
  /** Offset of the result in prompt order (chars of raw request text before it). */
  position: number;
}

/** A document or image block the attachment policy may replace: in a user message, or inside a tool result. */
export interface MediaSite {
  kind: "document" | "image";
  /** Where it is, for reports: `messages[3].content[1]`, `messages[2].content[0].content[1]`. */
  path: string;
  /**
   * Its place, stable across turns whichever history the client sends back: `m<message>.b<block>` in a user
   * message, `r<tool_use_id>.<n>` for the n-th media block of a tool result (a stubbed result collapses its
   * text blocks, never its media blocks, so block indexes there are not stable but this ordinal is).
   */
  locator: string;
  message_index: number;
  /** The block's span in the raw text: what a replacement rewrites. */
  start: number;
  end: number;
  /** Index (ToolResultSite.index) of the tool result that holds it. */
  result?: number;
  /** Assistant messages before it: the turn it arrived on (the report's `turn` of the request that brought it). */
  turn: number;
  /** A later assistant message exists: the model has answered after seeing it. */
  settled: boolean;
  /** Offset in prompt order (for pricing against the cache breakpoints). */
  position: number;
  /** `base64`, `text`, `url`, `file`, … or "invalid" when the block has no usable source. */
  source_type: string;
  media_type?: string;
  /** The source's data string (base64 or text): what the block's id is hashed from. */
  data?: JsonString;
  title?: string;
  /** Citations are enabled on the document: its text must stay a document for them to work. */
  citations: boolean;
  /** The block's own cache_control value (raw JSON), carried over to its replacement. */
  cache_control?: string;
}

/** A text block this project rendered for an attachment on an earlier turn (the client sent it back). */
export interface ReplacedMediaSite {
  /** The id in its marker (`att_…`). */
  id: string;
  path: string;
  position: number;
  start: number;
  end: number;
  result?: number;
}

export interface Breakpoint {
  /** Prompt-order offset of the end of the cached block. */
  position: number;
  /**
   * Which write rate the block is priced at: "5m" the short write (Anthropic 5 minutes, OpenAI 30 minutes),
   * "1h" the long one (Anthropic 1 hour, OpenAI 12 hours), as in the price table's two write columns.
   */
  ttl: "5m" | "1h";
  /**
   * The raw span whose removal takes this marker out of the request (its member and one separating comma),
   * where the format can move it: a block-level marker in a message (Anthropic). Absent for a marker the
   * transform never moves (tools, system, automatic caching, a marker inside a tool result's content).
   */
  removal?: { start: number; end: number };
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

/**
 * A part of the request the adapter could not place (a result that answers no call it can see, a second
 * answer to one call, a role or TTL it does not know): passed through exactly as it is, and said in the report.
 */
export interface ShapeNote {
  message: string;
  /** Where it is: `messages[3].content[1]`. */
  path: string;
}

export interface RequestAnalysis {
  model: string | null;
  sites: ToolResultSite[];
  /** Assistant messages in the request: the conversation's turn index. */
  assistant_turns: number;
  /** Raw chars of everything the model reads (tools, system, messages), in prompt order. */
  prompt_chars: number;
  /**
   * Of those, chars the provider never receives (the AI SDK's provider-specific parts its package drops,
   * e.g. a stream's `anthropic.message_start` metadata): positions keep them, the token estimate does not.
   */
  unsent_chars?: number;
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
  /**
   * Where each assistant message starts (chars in prompt order, ascending): the end of the prompt of the
   * call that wrote it. The anchor's risk bound sums these prompts, as they go out (sentOffset), for what
   * the session has spent so far. Absent where the format does not count it.
   */
  call_prompt_ends?: readonly number[];
  /**
   * How often the model answered tool results with another tool call, in this request's history: of the
   * assistant messages that follow a message holding tool results (the last one excepted), how many call a
   * tool. A fresh result leaves the hot window on the next call only when the model calls a tool again
   * (the breakpoint move prices that). Absent where the format does not count it.
   */
  tool_chain?: { answered: number; chained: number };
  /**
   * Where the latest thinking block the client sent back starts (prompt order; Anthropic `thinking` and
   * `redacted_thinking` blocks, the AI SDK's `reasoning` parts). On a model with preserved thinking
   * nothing before it may change (core/turn/frozen.ts). Absent when the request holds none.
   */
  last_thinking_position?: number;
  /** Where an anchor could go (formats with explicit breakpoints only); empty when none can. */
  anchor_slots: AnchorSlot[];
  /** Document and image blocks, in request order (formats with media blocks only). */
  media?: MediaSite[];
  /** Attachment replacements sent back by the client (counted in the report, never edited). */
  replaced_media?: ReplacedMediaSite[];
  /** What was passed through unplaced (the sites above never include it). */
  notes?: ShapeNote[];
}

export interface Edit {
  start: number;
  end: number;
  text: string;
}

export interface FormatAdapter {
  readonly format: string;
  analyze(raw: string, root: JsonNode): RequestAnalysis;
  /**
   * The JSON text that replaces `site.content` so the result reads `text` (media blocks kept in place, or
   * replaced by `media[block start]` when the attachment policy replaces them this turn).
   */
  renderContent(
    raw: string,
    site: ToolResultSite,
    text: string,
    media?: ReadonlyMap<number, string>,
  ): string;
  /** The JSON block that replaces a media block by `text` (keeping the block's cache_control). */
  renderMedia?(raw: string, site: MediaSite, text: string): string;
  /** The edit that declares the recall tool at the end of `tools`. */
  declareRecallTool(raw: string, root: JsonNode, mode: RecallMode): Edit;
  /**
   * The edit that declares it mid-conversation instead, right after the run of user messages that
   * holds message `after` (formats whose API takes tools defined in a system message); null where no
   * such place is valid there.
   */
  declareRecallToolInline?(
    raw: string,
    root: JsonNode,
    mode: RecallMode,
    after: number,
  ): Edit | null;
  /** The edit that puts a cache breakpoint on `slot` (formats with explicit breakpoints). */
  anchorEdit?(raw: string, slot: AnchorSlot, ttl: "5m" | "1h"): Edit;
}
