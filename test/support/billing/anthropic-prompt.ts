/**
 * A Messages API request as the prompt cache sees it: its blocks in the order the API renders them
 * (`tools`, then `system`, then `messages`), each with the bytes that key it (its JSON without
 * `cache_control`, plus its role and whether it opens a message), the text its tokens are counted on, its
 * breakpoint and its lookback position. The request's `cache_control` rules are checked here, with the 400 the
 * API answers when one is broken.
 */
import { createHash } from "node:crypto";
import { fakePrice } from "./prices.ts";

export type Ttl = "5m" | "1h";

export const TTL_MS: Readonly<Record<Ttl, number>> = { "5m": 300_000, "1h": 3_600_000 };

export const MAX_BREAKPOINTS = 4;

type Json = Record<string, unknown>;

export interface PromptBlock {
  /** Where it is in the request, e.g. `messages[3].content[1]`. */
  path: string;
  section: "tools" | "system" | "messages";
  role: string | null;
  type: string;
  /** sha256 of what keys the block in the cache. */
  hash: string;
  /** What its tokens are counted on. */
  text: string;
  /** Tokens counted without text (images). */
  fixed_tokens: number;
  /** The first block of a message (the role marker is billed on it). */
  message_start: boolean;
  /** Its breakpoint: an explicit `cache_control`, or the one automatic caching put there. */
  breakpoint: Ttl | null;
  /** Lookback position: a run of consecutive tool_use, or of tool_result, blocks is one position. */
  position: number;
  /** Whether automatic caching may put its breakpoint here. */
  cacheable: boolean;
}

export interface Prompt {
  model: string;
  blocks: PromptBlock[];
  /** `tool_choice` and thinking settings: rendered ahead of the messages, so they key the message blocks. */
  message_config: string;
  tool_choice: string;
}

/** A request the API refuses (HTTP 400, `invalid_request_error`). */
export class InvalidRequest extends Error {}

function isRecord(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function sha256(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}

function withoutCacheControl(block: Json): Json {
  if (!("cache_control" in block)) return block;
  const { cache_control: _, ...rest } = block;
  return rest;
}

function ttlOf(cc: unknown, path: string): Ttl | null {
  if (cc === undefined || cc === null) return null;
  if (!isRecord(cc) || cc.type !== "ephemeral")
    throw new InvalidRequest(`${path}.cache_control.type: Input should be 'ephemeral'`);
  if (cc.ttl === undefined) return "5m";
  if (cc.ttl === "5m" || cc.ttl === "1h") return cc.ttl;
  throw new InvalidRequest(`${path}.cache_control.ttl: Input should be '5m' or '1h'`);
}

/** Tokens of an image: the fake does not decode images, so every one is billed as a ~1.2-megapixel picture. */
export const IMAGE_TOKENS = 1600;

function textOfContent(content: unknown): { text: string; images: number } {
  if (typeof content === "string") return { text: content, images: 0 };
  if (!Array.isArray(content)) return { text: "", images: 0 };
  const texts: string[] = [];
  let images = 0;
  for (const part of content) {
    if (!isRecord(part)) continue;
    if (part.type === "text" && typeof part.text === "string") texts.push(part.text);
    else if (part.type === "image") images++;
    else texts.push(JSON.stringify(withoutCacheControl(part)));
  }
  return { text: texts.join("\n"), images };
}

/** The text a block's tokens are counted on, and its image count. */
function renderBlock(block: Json): { text: string; images: number } {
  switch (block.type) {
    case "text":
      return { text: String(block.text ?? ""), images: 0 };
    case "tool_use":
    case "server_tool_use":
      return {
        text: `${String(block.name ?? "")}\n${JSON.stringify(block.input ?? {})}`,
        images: 0,
      };
    case "tool_result": {
      const r = textOfContent(block.content);
      return { text: block.is_error === true ? `error\n${r.text}` : r.text, images: r.images };
    }
    case "image":
      return { text: "", images: 1 };
    case "thinking":
      return { text: String(block.thinking ?? ""), images: 0 };
    case "redacted_thinking":
      return { text: String(block.data ?? ""), images: 0 };
    case "tool_addition": {
      // A tool defined by value is counted as a `tools` entry would be; a reference on its JSON.
      const tool = isRecord(block.tool) ? block.tool : {};
      return tool.type === "tool_definition" && isRecord(tool.definition)
        ? { text: renderTool(tool.definition), images: 0 }
        : { text: JSON.stringify(tool), images: 0 };
    }
    default:
      return { text: JSON.stringify(withoutCacheControl(block)), images: 0 };
  }
}

function renderTool(tool: Json): string {
  if (tool.type === undefined || tool.type === "custom")
    return `${String(tool.name ?? "")}\n${String(tool.description ?? "")}\n${JSON.stringify(tool.input_schema ?? {})}`;
  return JSON.stringify(withoutCacheControl(tool));
}

const THINKING = new Set(["thinking", "redacted_thinking"]);
const RUNS = new Set(["tool_use", "tool_result"]);

/** The beta that lets a `tool_addition` block carry a tool definition by value. */
export const INLINE_TOOLS_BETA = "inline-tools-2026-09-15";

/**
 * The request's prompt blocks with their breakpoints, after automatic caching placed its own. Throws
 * `InvalidRequest` where the API answers 400: a malformed `cache_control`, one on a thinking block, an empty
 * text block, more than 4 breakpoints, automatic caching that conflicts with an explicit breakpoint, a
 * 1-hour breakpoint after a 5-minute one, or a `role: "system"` message the API does not take (below).
 * `betas`: the request's `anthropic-beta` values.
 */
export function promptOf(request: Json, betas: readonly string[] = []): Prompt {
  if (typeof request.model !== "string" || request.model === "")
    throw new InvalidRequest("model: Field required");
  if (!Array.isArray(request.messages) || request.messages.length === 0)
    throw new InvalidRequest("messages: at least one message is required");
  checkSystemMessages(request.model, request.messages, betas);
  const blocks: PromptBlock[] = [];
  let position = -1;
  let lastType = "";
  const push = (
    raw: Json,
    section: PromptBlock["section"],
    path: string,
    role: string | null,
    messageStart: boolean,
    rendered: { text: string; images: number },
  ) => {
    const type = String(raw.type ?? (section === "tools" ? "tool" : "text"));
    if (type === "text" && rendered.text === "")
      throw new InvalidRequest(`${path}: text content blocks must be non-empty`);
    const breakpoint = ttlOf(raw.cache_control, path);
    if (breakpoint !== null && THINKING.has(type))
      throw new InvalidRequest(`${path}: cache_control cannot be set on ${type} blocks`);
    if (!(RUNS.has(type) && type === lastType)) position++;
    lastType = type;
    const key = `${section}|${role ?? ""}|${messageStart ? 1 : 0}|${JSON.stringify(withoutCacheControl(raw))}`;
    blocks.push({
      path,
      section,
      role,
      type,
      hash: sha256(key),
      text: rendered.text,
      fixed_tokens: rendered.images * IMAGE_TOKENS,
      message_start: messageStart,
      breakpoint,
      position,
      cacheable: !THINKING.has(type),
    });
  };

  const tools = Array.isArray(request.tools) ? request.tools : [];
  tools.forEach((t, i) => {
    if (!isRecord(t)) throw new InvalidRequest(`tools.${i}: Input should be an object`);
    push(t, "tools", `tools[${i}]`, null, false, { text: renderTool(t), images: 0 });
  });
  const system = request.system;
  if (typeof system === "string" && system !== "")
    push({ type: "text", text: system }, "system", "system", null, false, {
      text: system,
      images: 0,
    });
  else if (Array.isArray(system))
    system.forEach((b, i) => {
      if (!isRecord(b)) throw new InvalidRequest(`system.${i}: Input should be an object`);
      push(b, "system", `system[${i}]`, null, false, renderBlock(b));
    });
  request.messages.forEach((m, i) => {
    if (!isRecord(m) || typeof m.role !== "string")
      throw new InvalidRequest(`messages.${i}: a message needs a role and content`);
    const content: unknown[] =
      typeof m.content === "string"
        ? [{ type: "text", text: m.content }]
        : Array.isArray(m.content)
          ? m.content
          : [];
    if (content.length === 0)
      throw new InvalidRequest(`messages.${i}: all messages must have non-empty content`);
    content.forEach((b, j) => {
      if (!isRecord(b))
        throw new InvalidRequest(`messages.${i}.content.${j}: Input should be an object`);
      push(
        b,
        "messages",
        `messages[${i}].content[${j}]`,
        m.role as string,
        j === 0,
        renderBlock(b),
      );
    });
  });

  placeAutomatic(request, blocks);
  checkBreakpoints(blocks);
  const toolChoice = isRecord(request.tool_choice) ? String(request.tool_choice.type) : "auto";
  return {
    model: request.model,
    blocks,
    message_config: JSON.stringify([request.tool_choice ?? null, request.thinking ?? null]),
    tool_choice: toolChoice,
  };
}

/**
 * `role: "system"` messages, as https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages
 * states them: only on models that take them ("Requests that include role: \"system\" in messages[] on
 * unsupported models return a 400"); "Cannot be the first entry in messages"; "Must immediately follow a user
 * message or an assistant message that ends in a server tool use"; "Must either be the last entry in messages
 * or be followed by an assistant turn"; "Consecutive system messages are not allowed". Their content: text
 * blocks, and the tool changes (`tool_addition`, `tool_removal`) the SDK's types place there; a tool defined
 * by value (`tool_definition`) needs the `inline-tools-2026-09-15` beta (the SDK's
 * `BetaRequestToolAdditionBlock`).
 */
function checkSystemMessages(model: string, messages: unknown[], betas: readonly string[]): void {
  const roleOf = (i: number) => {
    const m = messages[i];
    return isRecord(m) ? m.role : undefined;
  };
  messages.forEach((m, i) => {
    if (!isRecord(m) || m.role !== "system") return;
    const price = fakePrice(model);
    if (price !== null && price.system_messages !== true)
      throw new InvalidRequest(`messages.${i}.role: ${model} does not support system messages`);
    if (i === 0)
      throw new InvalidRequest(`messages.0: a system message cannot be the first message`);
    const before = messages[i - 1];
    const afterServerTool =
      isRecord(before) &&
      before.role === "assistant" &&
      Array.isArray(before.content) &&
      isRecord(before.content.at(-1)) &&
      (before.content.at(-1) as Json).type === "server_tool_use";
    if (roleOf(i - 1) !== "user" && !afterServerTool)
      throw new InvalidRequest(
        `messages.${i}: a system message must follow a user message (or a server tool use)`,
      );
    if (i + 1 < messages.length && roleOf(i + 1) !== "assistant")
      throw new InvalidRequest(
        `messages.${i}: a system message must be the last message or be followed by an assistant message`,
      );
    const content = typeof m.content === "string" ? [] : Array.isArray(m.content) ? m.content : [];
    content.forEach((b, j) => {
      const type = isRecord(b) ? b.type : undefined;
      if (type === "text" || type === "tool_removal") return;
      if (type !== "tool_addition")
        throw new InvalidRequest(
          `messages.${i}.content.${j}: a system message takes text blocks and tool changes only`,
        );
      const tool = (b as Json).tool;
      if (isRecord(tool) && tool.type === "tool_definition" && !betas.includes(INLINE_TOOLS_BETA))
        throw new InvalidRequest(
          `messages.${i}.content.${j}.tool: a tool_definition needs the ${INLINE_TOOLS_BETA} beta`,
        );
    });
  });
}

/** Automatic caching: the request's top-level `cache_control` becomes a breakpoint on the last cacheable block. */
function placeAutomatic(request: Json, blocks: PromptBlock[]): void {
  const ttl = ttlOf(request.cache_control, "cache_control");
  if (ttl === null) return;
  let last = blocks.length - 1;
  while (last >= 0 && !blocks[last]!.cacheable) last--;
  if (last < 0) return; // nothing can carry it: no caching, no error
  const target = blocks[last]!;
  if (target.breakpoint === ttl) return;
  if (target.breakpoint !== null)
    throw new InvalidRequest(
      `cache_control: automatic caching (ttl ${ttl}) conflicts with the explicit breakpoint at ${target.path} (ttl ${target.breakpoint})`,
    );
  if (blocks.filter((b) => b.breakpoint !== null).length >= MAX_BREAKPOINTS)
    throw new InvalidRequest(
      `A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${MAX_BREAKPOINTS + 1}.`,
    );
  target.breakpoint = ttl;
}

function checkBreakpoints(blocks: readonly PromptBlock[]): void {
  const marked = blocks.filter((b) => b.breakpoint !== null);
  if (marked.length > MAX_BREAKPOINTS)
    throw new InvalidRequest(
      `A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${marked.length}.`,
    );
  let short: PromptBlock | undefined;
  for (const b of marked) {
    if (b.breakpoint === "5m") short ??= b;
    else if (short !== undefined)
      throw new InvalidRequest(
        `${b.path}.cache_control: a ttl of "1h" cannot come after a ttl of "5m" (${short.path}): longer TTLs must come first`,
      );
  }
}
