/**
 * The walk of an Anthropic Messages request: tools → system → messages in prompt order, pairing each
 * `tool_result` with a `tool_use` of the assistant turn right before, collecting breakpoints, media blocks
 * and the attachment replacements sent back, and noting what it cannot place.
 */
import { formatPath } from "../../errors.ts";
import { attachmentIdIn } from "../attachments/text.ts";
import { getMember, type JsonNode, type JsonObject } from "../json/scan.ts";
import { RECALL_TOOL_NAME } from "../recall-tool.ts";
import { anchorSlotsOf, memberRemoval } from "./anthropic-anchor.ts";
import { mediaSite } from "./anthropic-media.ts";
import { type Call, resultSite } from "./anthropic-results.ts";
import {
  expectObject,
  lastAssistantIndex,
  modelOf,
  type Path,
  shapeError,
  stringMember,
  toolNameOf,
  typeOf,
} from "./shape.ts";
import type {
  Breakpoint,
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

/** The request analysed: its tool results, breakpoints, media blocks, anchor slots and notes. */
export function analyzeAnthropic(raw: string, rootNode: JsonNode): RequestAnalysis {
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
  const callEnds: number[] = [];
  let resultsBefore = false;
  let lastThinking: number | undefined;
  const chain = { answered: 0, chained: 0 };
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
      callEnds.push(messagesBase + message.start);
      if (previousRole !== "assistant") {
        calls = new Map();
        answeredIds = new Set();
      }
    }
    // The model's answer to tool results: did it call a tool again (tool_chain)?
    const answering = role === "assistant" && previousRole === "user" && resultsBefore;
    if (role === "user" && previousRole !== "user") resultsBefore = false;
    previousRole = role;
    let calledTool = false;
    if (content.kind === "array") {
      content.items.forEach((block, b) => {
        const bpath: Path = [...path, "content", b];
        const obj = expectObject(block, bpath, "a content block");
        const type = stringMember(raw, obj, "type", bpath, true);
        const cc = getMember(obj, "cache_control");
        if (cc !== undefined && cc.kind !== "null") {
          const removal = memberRemoval(raw, obj, "cache_control");
          breakpoints.push({
            position: messagesBase + block.end,
            ttl: ttlAt(cc, [...bpath, "cache_control"]),
            ...(removal === undefined ? {} : { removal }),
          });
        }
        if (role === "assistant" && (type === "thinking" || type === "redacted_thinking"))
          lastThinking = messagesBase + block.start;
        if (type === "tool_use" && role === "assistant") {
          calledTool = true;
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
          resultsBefore = true;
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
    if (answering) {
      chain.answered++;
      if (calledTool) chain.chained++;
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
    ...(lastThinking === undefined ? {} : { last_thinking_position: lastThinking }),
    last_message_position:
      lastMessage === undefined ? promptChars : messagesBase + lastMessage.start,
    tool_chain: chain,
    call_prompt_ends: callEnds,
    anchor_slots: anchorSlots,
    media,
    replaced_media: replaced,
    notes,
  };
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
