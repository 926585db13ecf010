/**
 * Anthropic Messages: tool results are `tool_result` blocks in user messages, answering `tool_use` blocks of
 * the assistant turn right before (the API merges consecutive messages of one role into one turn, so a turn
 * may span several messages); breakpoints are `cache_control` markers on tools, system blocks and message
 * blocks, or one top-level `cache_control` (automatic caching at the end of the prompt). Prompt order is
 * tools → system → messages, whatever the key order in the JSON.
 *
 * Everything else (thinking, server tool calls and their results, MCP blocks, compaction blocks, tool
 * additions, mid-conversation system messages, fields this adapter has never heard of) passes through as it
 * is. What it cannot place is left as it is and noted (a result that answers no call it can see, a second
 * answer to one call, an unknown role or TTL); with server-held history (`thread: {type: "continue"}`), a
 * result before the request's first assistant message may answer a call only the server holds.
 */

import { recallToolDeclaration } from "../recall-tool.ts";
import { anchorEditOf } from "./anthropic-anchor.ts";
import { isReplacement } from "./anthropic-media.ts";
import { analyzeAnthropic } from "./anthropic-walk.ts";
import { renderTextContent } from "./shape.ts";
import type { FormatAdapter, MediaSite, ToolResultSite } from "./types.ts";

export const anthropicAdapter: FormatAdapter = {
  format: "anthropic",

  analyze: analyzeAnthropic,
  anchorEdit: anchorEditOf,

  renderContent(
    raw: string,
    site: ToolResultSite,
    text: string,
    media?: ReadonlyMap<number, string>,
  ): string {
    // Media blocks stay in place (or take their attachment replacement), as do replacements of earlier turns;
    // the text blocks collapse into one carrying the last one's cache_control.
    return renderTextContent(raw, site.content, text, "text", "cache_control", {
      overrides: media,
      keepText: (block) => isReplacement(raw, block),
    });
  },

  renderMedia(_raw: string, site: MediaSite, text: string): string {
    return `{"type":"text","text":${JSON.stringify(text)}${site.cache_control === undefined ? "" : `,"cache_control":${site.cache_control}`}}`;
  },

  declareRecallTool: recallToolDeclaration("anthropic"),
};
