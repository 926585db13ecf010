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

import type { RecallMode } from "../../config.ts";
import { decodeString, getMember, type JsonNode } from "../json/scan.ts";
import { recallToolDeclaration, recallToolDefinition } from "../recall-tool.ts";
import { anchorEditOf } from "./anthropic-anchor.ts";
import { isReplacement } from "./anthropic-media.ts";
import { analyzeAnthropic } from "./anthropic-walk.ts";
import { renderTextContent, roleAt, runEnd } from "./shape.ts";
import type { Edit, FormatAdapter, MediaSite, ToolResultSite } from "./types.ts";

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
  declareRecallToolInline: inlineRecallTool,
};

/**
 * The recall tool as a `tool_addition` block (beta `inline-tools-2026-09-15`) in a `role: "system"` message
 * right after the run of user messages holding message `after`: the API takes one there when it follows a
 * user turn and ends the array or precedes an assistant turn. Where the client's own system message already
 * sits there (two in a row are not taken), the block ends that message's content instead.
 */
function inlineRecallTool(
  raw: string,
  rootNode: JsonNode,
  mode: RecallMode,
  after: number,
): Edit | null {
  if (rootNode.kind !== "object") return null;
  const messages = getMember(rootNode, "messages");
  if (messages?.kind !== "array") return null;
  const i = runEnd(raw, messages, after, ["user"]);
  if (i === null) return null;
  const block = `{"type":"tool_addition","tool":{"type":"tool_definition","definition":${JSON.stringify(recallToolDefinition("anthropic", mode))}}}`;
  const next = messages.items[i + 1];
  const role = roleAt(raw, messages, i + 1);
  if (next === undefined || role === "assistant") {
    const at = messages.items[i]!.end;
    return { start: at, end: at, text: `,{"role":"system","content":[${block}]}` };
  }
  if (role !== "system" || next.kind !== "object") return null;
  // A message shown only until the next user turn would take the tool away with it.
  const clear = getMember(next, "clear_at");
  if (clear !== undefined && clear.kind !== "null")
    if (clear.kind !== "string" || decodeString(raw, clear) !== "never") return null;
  const content = getMember(next, "content");
  // At the end of its blocks (a cache breakpoint the turn puts on one of them stays clear of it); a string
  // content is left alone.
  if (content?.kind !== "array") return null;
  const at = content.end - 1;
  return { start: at, end: at, text: content.items.length > 0 ? `,${block}` : block };
}
