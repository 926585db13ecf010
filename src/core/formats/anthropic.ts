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
import { formatPath } from "../../errors.ts";
import { attachmentIdIn } from "../attachments/text.ts";
import {
  decodeString,
  getMember,
  type JsonArray,
  type JsonNode,
  type JsonObject,
  type JsonString,
} from "../json/scan.ts";
import { RECALL_TOOL_NAME, recallToolDefinition } from "../recall-tool.ts";
import {
  appendTool,
  expectObject,
  lastAssistantIndex,
  MEDIA_FIELD_LIMITS,
  modelOf,
  type Path,
  renderTextContent,
  shapeError,
  shortString,
  stringMember,
  toolNameOf,
  typeOf,
} from "./shape.ts";
import type {
  AnchorSlot,
  Breakpoint,
  Edit,
  FormatAdapter,
  MediaSite,
  ReplacedMediaSite,
  RequestAnalysis,
  ShapeNote,
  ToolResultSite,
} from "./types.ts";

/**
 * A breakpoint's TTL slot. A TTL this adapter does not know (a newer one) is priced at the long write rate,
 * the nearest it knows, and noted: the marker itself passes through as it is.
 */
function ttlOf(raw: string, marker: JsonNode, path: Path, notes: ShapeNote[]): "5m" | "1h" {
  const obj = expectObject(marker, path, "cache_control");
  const ttl = stringMember(raw, obj, "ttl", path, false);
  if (ttl === undefined || ttl === "5m") return "5m";
  if (ttl !== "1h")
    notes.push({
      message: `cache_control.ttl ${JSON.stringify(ttl.slice(0, 40))} is not a TTL edge-offload knows: priced as "1h"`,
      path: formatPath([...path, "ttl"]),
    });
  return "1h";
}

export const anthropicAdapter: FormatAdapter = {
  format: "anthropic",

  analyze(raw: string, rootNode: JsonNode): RequestAnalysis {
    const root = expectObject(rootNode, [], "the request");
    const model = modelOf(raw, root);

    const tools = getMember(root, "tools");
    if (tools !== undefined && tools.kind !== "array")
      shapeError('"tools" must be an array', ["tools"]);
    const system = getMember(root, "system");
    if (system !== undefined && system.kind !== "string" && system.kind !== "array")
      shapeError('"system" must be a string or an array of blocks', ["system"]);
    const messages = getMember(root, "messages");
    if (messages === undefined) shapeError('missing "messages"', []);
    if (messages.kind !== "array") shapeError('"messages" must be an array', ["messages"]);

    const toolsLen = tools === undefined ? 0 : tools.end - tools.start;
    const systemLen = system === undefined ? 0 : system.end - system.start;
    const messagesBase = toolsLen + systemLen - messages.start;
    const breakpoints: Breakpoint[] = [];
    const notes: ShapeNote[] = [];
    const ttlAt = (marker: JsonNode, path: Path) => ttlOf(raw, marker, path, notes);

    let hasRecallTool = false;
    tools?.items.forEach((tool, i) => {
      const obj = expectObject(tool, ["tools", i], "a tool");
      if (toolNameOf(raw, obj, ["tools", i]) === RECALL_TOOL_NAME) hasRecallTool = true;
      const cc = getMember(obj, "cache_control");
      if (cc !== undefined && cc.kind !== "null")
        breakpoints.push({
          position: tool.end - tools.start,
          ttl: ttlAt(cc, ["tools", i, "cache_control"]),
        });
    });
    if (system?.kind === "array") {
      system.items.forEach((block, i) => {
        const obj = expectObject(block, ["system", i], "a system block");
        const cc = getMember(obj, "cache_control");
        if (cc !== undefined && cc.kind !== "null")
          breakpoints.push({
            position: toolsLen + block.end - system.start,
            ttl: ttlAt(cc, ["system", i, "cache_control"]),
          });
      });
    }

    const sites: ToolResultSite[] = [];
    // Document and image blocks (user messages and tool results) for the attachment policy, and the
    // replacements of earlier turns the client sent back.
    const media: MediaSite[] = [];
    const replaced: ReplacedMediaSite[] = [];
    // The calls the next results may answer: those of the latest run of assistant messages (the API merges
    // consecutive messages of one role into one turn, so results may also come in several user messages).
    let calls = new Map<string, Call>();
    // The ids answered since that run: a second answer to one call is noted, not paired.
    let answeredIds = new Set<string>();
    let previousRole = "";
    let assistantTurns = 0;
    const lastAssistant = lastAssistantIndex(raw, messages);
    // Server-held history (`thread: {type: "continue"}`): the request starts mid-conversation, so results
    // before its first assistant message may answer calls only the server holds (their tool is unknown here).
    const thread = getMember(root, "thread");
    const continues = thread?.kind === "object" && typeOf(raw, thread) === "continue";

    messages.items.forEach((message, m) => {
      const path: Path = ["messages", m];
      const msg = expectObject(message, path, "a message");
      const role = stringMember(raw, msg, "role", path, true);
      const content = getMember(msg, "content");
      if (role !== "user" && role !== "assistant") {
        // A mid-conversation `role: "system"` message (current API; Claude Code sends one), or a role newer
        // than this adapter: it holds no tool results and answers no call, so it is read for its cache
        // breakpoints (and tool additions) only, passes through as it is, and leaves the pairing alone.
        if (role !== "system")
          notes.push({
            message: `a message with role ${JSON.stringify(role?.slice(0, 40))} is passed through as it is`,
            path: formatPath([...path, "role"]),
          });
        if (content?.kind === "array") {
          content.items.forEach((block, b) => {
            if (block.kind !== "object") return;
            if (declaresRecallTool(raw, block, [...path, "content", b])) hasRecallTool = true;
            const cc = getMember(block, "cache_control");
            if (cc !== undefined && cc.kind !== "null")
              breakpoints.push({
                position: messagesBase + block.end,
                ttl: ttlAt(cc, [...path, "content", b, "cache_control"]),
              });
          });
        }
        return;
      }
      if (content === undefined) shapeError('missing "content"', path);
      if (content.kind !== "string" && content.kind !== "array")
        shapeError('"content" must be a string or an array of blocks', [...path, "content"]);
      if (role === "assistant") {
        assistantTurns++;
        if (previousRole !== "assistant") {
          calls = new Map();
          answeredIds = new Set();
        }
      }
      previousRole = role;
      if (content.kind === "array") {
        content.items.forEach((block, b) => {
          const bpath: Path = [...path, "content", b];
          const obj = expectObject(block, bpath, "a content block");
          const type = stringMember(raw, obj, "type", bpath, true);
          const cc = getMember(obj, "cache_control");
          if (cc !== undefined && cc.kind !== "null")
            breakpoints.push({
              position: messagesBase + block.end,
              ttl: ttlAt(cc, [...bpath, "cache_control"]),
            });
          if (type === "tool_use" && role === "assistant") {
            const id = stringMember(raw, obj, "id", bpath, true)!;
            const name = stringMember(raw, obj, "name", bpath, true)!;
            calls.set(id, { name, input: getMember(obj, "input") });
          } else if (type === "tool_result") {
            if (role !== "user") shapeError("a tool_result must be in a user message", bpath);
            const id = stringMember(raw, obj, "tool_use_id", bpath, true)!;
            let call = calls.get(id);
            if (call !== undefined) {
              calls.delete(id);
              answeredIds.add(id);
            } else if (continues && assistantTurns === 0) {
              call = { name: "", input: undefined };
            } else {
              // Not a result this adapter can place (the provider will judge it): it stays as it is.
              notes.push({
                message: answeredIds.has(id)
                  ? `a second tool_result for ${JSON.stringify(id.slice(0, 64))} is passed through as it is`
                  : `tool_result ${JSON.stringify(id.slice(0, 64))} answers no tool_use of the assistant turn before it: passed through as it is`,
                path: formatPath([...bpath, "tool_use_id"]),
              });
              return;
            }
            const isError = getMember(obj, "is_error");
            if (isError !== undefined && isError.kind !== "true" && isError.kind !== "false")
              shapeError('"is_error" must be a boolean', [...bpath, "is_error"]);
            const site = resultSite(
              raw,
              obj,
              bpath,
              sites.length,
              id,
              call,
              m,
              m < lastAssistant,
              messagesBase + block.start,
              { media, replaced, turn: assistantTurns, base: messagesBase },
            );
            if (site.content?.kind === "array") {
              site.content.items.forEach((item, i) => {
                const inner = getMember(item as JsonObject, "cache_control");
                if (inner !== undefined && inner.kind !== "null")
                  breakpoints.push({
                    position: messagesBase + item.end,
                    ttl: ttlAt(inner, [...bpath, "content", i, "cache_control"]),
                  });
              });
            }
            sites.push(site);
          } else if (type === "tool_addition") {
            if (declaresRecallTool(raw, obj, bpath)) hasRecallTool = true;
          } else if (role === "user" && (type === "document" || type === "image")) {
            media.push(
              mediaSite(raw, obj, type, formatPath(bpath), `m${m}.b${b}`, {
                message_index: m,
                turn: assistantTurns,
                settled: m < lastAssistant,
                position: messagesBase + block.start,
              }),
            );
          } else if (role === "user" && type === "text") {
            const text = getMember(obj, "text");
            const id = text?.kind === "string" ? attachmentIdIn(raw, text) : null;
            if (id !== null)
              replaced.push({
                id,
                path: formatPath(bpath),
                position: messagesBase + block.start,
                start: block.start,
                end: block.end,
              });
          }
        });
      }
    });

    const anchorSlots = anchorSlotsOf(raw, messages, messagesBase, sites);
    const lastMessage = messages.items[messages.items.length - 1];
    const auto = getMember(root, "cache_control");
    const promptChars = toolsLen + systemLen + (messages.end - messages.start);
    if (auto !== undefined && auto.kind !== "null")
      breakpoints.push({ position: promptChars, ttl: ttlAt(auto, ["cache_control"]) });
    breakpoints.sort((a, b) => a.position - b.position);

    return {
      model,
      sites,
      assistant_turns: assistantTurns,
      prompt_chars: promptChars,
      breakpoints,
      client_caches: breakpoints.length > 0,
      has_recall_tool: hasRecallTool,
      auto_cache: auto !== undefined && auto.kind !== "null",
      last_message_position:
        lastMessage === undefined ? promptChars : messagesBase + lastMessage.start,
      anchor_slots: anchorSlots,
      media,
      replaced_media: replaced,
      notes,
    };
  },

  anchorEdit(raw: string, slot: AnchorSlot, ttl: "5m" | "1h"): Edit {
    const marker = `"cache_control":{"type":"ephemeral"${ttl === "1h" ? ',"ttl":"1h"' : ""}}`;
    if (slot.string_span !== undefined) {
      const { start, end } = slot.string_span;
      return { start, end, text: `[{"type":"text","text":${raw.slice(start, end)},${marker}}]` };
    }
    return { start: slot.insert_at, end: slot.insert_at, text: `,${marker}` };
  },

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

  declareRecallTool(_raw: string, rootNode: JsonNode, mode: RecallMode): Edit {
    return appendTool(
      rootNode as JsonObject,
      JSON.stringify(recallToolDefinition("anthropic", mode)),
    );
  },
};

interface Call {
  name: string;
  input: JsonNode | undefined;
}

/**
 * A `tool_addition` block (tools declared mid-conversation) whose definition is the recall tool: the client
 * declares it itself.
 */
function declaresRecallTool(raw: string, block: JsonObject, path: Path): boolean {
  if (typeOf(raw, block) !== "tool_addition") return false;
  const tool = getMember(block, "tool");
  if (tool?.kind !== "object" || typeOf(raw, tool) !== "tool_definition") return false;
  const definition = getMember(tool, "definition");
  return (
    definition?.kind === "object" &&
    toolNameOf(raw, definition, [...path, "tool", "definition"]) === RECALL_TOOL_NAME
  );
}

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
function anchorSlotsOf(
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

/** A text block that replaced an attachment (its marker names the record): not the tool's own text. */
function isReplacement(raw: string, block: JsonObject): boolean {
  const text = getMember(block, "text");
  return text?.kind === "string" && attachmentIdIn(raw, text) !== null;
}

interface MediaPlace {
  message_index: number;
  turn: number;
  settled: boolean;
  position: number;
  result?: number;
}

/** A document/image block as the attachment policy sees it. Never throws: a malformed block is left alone. */
function mediaSite(
  raw: string,
  block: JsonObject,
  kind: "document" | "image",
  path: string,
  locator: string,
  place: MediaPlace,
): MediaSite {
  const source = getMember(block, "source");
  let sourceType = "invalid";
  let mediaType: string | undefined;
  let data: JsonString | undefined;
  if (source?.kind === "object") {
    sourceType = shortString(raw, source, "type", MEDIA_FIELD_LIMITS.source_type) ?? "invalid";
    mediaType = shortString(raw, source, "media_type", MEDIA_FIELD_LIMITS.media_type);
    const d = getMember(source, "data");
    if (d?.kind === "string") data = d;
  }
  const title = shortString(raw, block, "title", MEDIA_FIELD_LIMITS.title);
  const citations = getMember(block, "citations");
  const enabled = citations?.kind === "object" ? getMember(citations, "enabled") : undefined;
  const cc = getMember(block, "cache_control");
  return {
    kind,
    path,
    locator,
    ...place,
    start: block.start,
    end: block.end,
    source_type: sourceType,
    ...(mediaType === undefined ? {} : { media_type: mediaType }),
    ...(data === undefined ? {} : { data }),
    ...(title === undefined ? {} : { title }),
    citations: enabled?.kind === "true",
    ...(cc === undefined || cc.kind === "null"
      ? {}
      : { cache_control: raw.slice(cc.start, cc.end) }),
  };
}

function resultSite(
  raw: string,
  block: JsonObject,
  path: Path,
  index: number,
  id: string,
  call: Call,
  messageIndex: number,
  settled: boolean,
  position: number,
  collect: { media: MediaSite[]; replaced: ReplacedMediaSite[]; turn: number; base: number },
): ToolResultSite {
  const content = getMember(block, "content");
  const texts: JsonString[] = [];
  let hasMedia = false;
  // Media blocks and attachment replacements are counted together: a replacement takes its block's place.
  let ordinal = 0;
  if (content !== undefined) {
    if (content.kind === "string") texts.push(content);
    else if (content.kind === "array") {
      content.items.forEach((item, i) => {
        const ipath: Path = [...path, "content", i];
        const obj = expectObject(item, ipath, "a tool_result content block");
        const type = stringMember(raw, obj, "type", ipath, true);
        if (type === "text") {
          const text = getMember(obj, "text");
          if (text?.kind !== "string")
            shapeError('a text block needs a string "text"', [...ipath, "text"]);
          const replacedId = attachmentIdIn(raw, text);
          if (replacedId === null) texts.push(text);
          else {
            // An attachment's replacement from an earlier turn: media, not the tool's text (invariant 10).
            hasMedia = true;
            collect.replaced.push({
              id: replacedId,
              path: formatPath(ipath),
              position: collect.base + item.start,
              start: item.start,
              end: item.end,
              result: index,
            });
            ordinal++;
          }
        } else {
          hasMedia = true; // image, document, search_result…: kept in place, never measured
          if (type === "image" || type === "document") {
            const place = {
              message_index: messageIndex,
              turn: collect.turn,
              settled,
              position: collect.base + item.start,
              result: index,
            };
            collect.media.push(
              mediaSite(raw, obj, type, formatPath(ipath), `r${id}.${ordinal}`, place),
            );
          }
          ordinal++;
        }
      });
    } else if (content.kind !== "null")
      shapeError('tool_result "content" must be a string or an array of blocks', [
        ...path,
        "content",
      ]);
  }
  return {
    index,
    tool_use_id: id,
    tool_name: call.name,
    tool_input: call.input,
    message_index: messageIndex,
    path: formatPath(path),
    settled,
    content: content?.kind === "null" ? undefined : content,
    texts,
    has_media: hasMedia,
    position,
  };
}
