/**
 * The advancing cache anchor on Anthropic requests: the blocks of the last two messages a breakpoint may be
 * put on, and the edit that puts one there.
 */
import { decodeString, getMember, type JsonArray, type JsonObject } from "../json/scan.ts";
import type { AnchorSlot, Edit, ToolResultSite } from "./types.ts";

/** Block types the API lets carry cache_control (thinking blocks cannot, nor can an empty text block). */
const CACHEABLE = new Set([
  "text",
  "image",
  "document",
  "tool_use",
  "tool_result",
  "server_tool_use",
  "web_search_tool_result",
  "search_result",
]);

/** The blocks of the last two messages, in prompt order, that a breakpoint may be put on. */
export function anchorSlotsOf(
  raw: string,
  messages: JsonArray,
  base: number,
  sites: readonly ToolResultSite[],
): AnchorSlot[] {
  const slots: AnchorSlot[] = [];
  const byStart = new Map(sites.map((s, i) => [s.position - base, i]));
  for (const message of messages.items.slice(-2)) {
    const content = getMember(message as JsonObject, "content");
    if (content?.kind === "string") {
      if (content.length !== 0)
        slots.push({
          position: base + content.end,
          insert_at: content.end,
          string_span: { start: content.start, end: content.end },
        });
      continue;
    }
    if (content?.kind !== "array") continue;
    for (const block of content.items) {
      if (block.kind !== "object") continue;
      const type = getMember(block, "type");
      if (type?.kind !== "string" || !CACHEABLE.has(decodeString(raw, type))) continue;
      const text = getMember(block, "text");
      if (
        decodeString(raw, type) === "text" &&
        (text?.kind !== "string" || text.end - text.start <= 2)
      )
        continue;
      const site = byStart.get(block.start);
      slots.push({
        position: base + block.end,
        insert_at: block.end - 1,
        ...(site === undefined ? {} : { site }),
      });
    }
  }
  return slots;
}

/** The `cache_control` marker put on `slot` (a string content becomes one text block to carry it). */
export function anchorEditOf(raw: string, slot: AnchorSlot, ttl: "5m" | "1h"): Edit {
  const marker = `"cache_control":{"type":"ephemeral"${ttl === "1h" ? ',"ttl":"1h"' : ""}}`;
  if (slot.string_span !== undefined) {
    const { start, end } = slot.string_span;
    return { start, end, text: `[{"type":"text","text":${raw.slice(start, end)},${marker}}]` };
  }
  return { start: slot.insert_at, end: slot.insert_at, text: `,${marker}` };
}

/** JSON's whitespace, which may sit between a member's parts. */
function isSpace(ch: string | undefined): boolean {
  return ch === " " || ch === "\n" || ch === "\r" || ch === "\t";
}

/**
 * The raw span that removes `obj`'s member `key` and one comma next to it, so the object stays valid JSON;
 * undefined when the key appears twice (removing one would expose the other) or is the only member.
 */
export function memberRemoval(
  raw: string,
  obj: JsonObject,
  key: string,
): { start: number; end: number } | undefined {
  const at = obj.keys.flatMap((k, i) => (k === key ? [i] : []));
  if (at.length !== 1 || obj.keys.length < 2) return undefined;
  const i = at[0]!;
  // Not the first member: from the end of the one before it (its comma, key and value go).
  if (i > 0) return { start: obj.values[i - 1]!.end, end: obj.values[i]!.end };
  // The first: from just after "{" to the next member's key (the comma after it goes).
  let end = obj.values[0]!.end;
  while (isSpace(raw[end])) end++;
  if (raw[end] !== ",") return undefined;
  end++;
  while (isSpace(raw[end])) end++;
  return { start: obj.start + 1, end };
}
