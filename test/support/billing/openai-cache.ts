/**
 * OpenAI's automatic prompt caching, as documented for the models before GPT-5.6: every prompt of at least
 * 1,024 tokens is cached as it was processed; a later prompt reads the longest token prefix it shares with a
 * live cached prompt, counted in steps of 128 tokens from 1,024 on; a cached prompt lives 5 minutes after
 * its last use. No write surcharge, no breakpoints. A prompt is rendered as segments in the order the model
 * sees them (Chat Completions: tool definitions, then each message; Responses: instructions, tool
 * definitions, then each input item), each billed with a small framing overhead.
 */
import { commonPrefixTokens, countTokens } from "./tokenizer.ts";

export const OPENAI_MIN_CACHEABLE = 1024;
export const OPENAI_CACHE_STEP = 128;
/** In-memory retention: "typically 5 to 10 minutes of inactivity"; the fake takes the short end. */
export const OPENAI_TTL_MS = 300_000;
/** `prompt_cache_retention: "24h"`. */
export const OPENAI_EXTENDED_TTL_MS = 86_400_000;
const SEGMENT_OVERHEAD = 3;

type Json = Record<string, unknown>;

export interface Segment {
  text: string;
  tokens: number;
}

function segment(text: string): Segment {
  return { text, tokens: countTokens(text) + SEGMENT_OVERHEAD };
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((p) =>
      typeof p === "object" && p !== null && typeof (p as Json).text === "string"
        ? String((p as Json).text)
        : JSON.stringify(p),
    )
    .join("\n");
}

/** A Chat Completions request as segments. */
export function chatSegments(request: Json): Segment[] {
  const out: Segment[] = [];
  for (const t of Array.isArray(request.tools) ? request.tools : [])
    out.push(segment(`tool\n${JSON.stringify(t)}`));
  for (const m of Array.isArray(request.messages) ? (request.messages as Json[]) : []) {
    const calls = Array.isArray(m.tool_calls) ? `\n${JSON.stringify(m.tool_calls)}` : "";
    const id = typeof m.tool_call_id === "string" ? `\n${m.tool_call_id}` : "";
    out.push(segment(`${String(m.role)}${id}\n${contentText(m.content)}${calls}`));
  }
  return out;
}

/** A Responses request as segments (`input` as a string is one user message). */
export function responsesSegments(request: Json): Segment[] {
  const out: Segment[] = [];
  if (typeof request.instructions === "string")
    out.push(segment(`developer\n${request.instructions}`));
  for (const t of Array.isArray(request.tools) ? request.tools : [])
    out.push(segment(`tool\n${JSON.stringify(t)}`));
  if (typeof request.input === "string") out.push(segment(`user\n${request.input}`));
  else
    for (const item of Array.isArray(request.input) ? (request.input as Json[]) : []) {
      if (item.type === "function_call_output" || item.type === "custom_tool_call_output")
        out.push(segment(`tool\n${String(item.call_id)}\n${contentText(item.output)}`));
      else if (item.type === "function_call")
        out.push(segment(`call\n${String(item.name)}\n${String(item.arguments ?? "")}`));
      // Freeform tools (Codex's exec): the call's input is its text.
      else if (item.type === "custom_tool_call")
        out.push(segment(`call\n${String(item.name)}\n${String(item.input ?? "")}`));
      // Tools declared in the input (Codex's `additional_tools` item).
      else if (Array.isArray(item.tools))
        for (const t of item.tools) out.push(segment(`tool\n${JSON.stringify(t)}`));
      else out.push(segment(`${String(item.role ?? item.type)}\n${contentText(item.content)}`));
    }
  return out;
}

interface Cached {
  segments: Segment[];
  tokens: number;
  expires: number;
  ttl: number;
}

export interface OpenAIOutcome {
  prompt_tokens: number;
  cached_tokens: number;
}

/** Tokens two segment lists share from the start. */
function sharedTokens(a: readonly Segment[], b: readonly Segment[]): number {
  let n = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i]!.text === b[i]!.text) {
      n += a[i]!.tokens;
      continue;
    }
    return n + commonPrefixTokens(a[i]!.text, b[i]!.text);
  }
  return n;
}

export class OpenAICache {
  readonly #now: () => number;
  readonly #prompts = new Map<string, Cached[]>();
  /** Cached prompts kept per scope and model (the oldest go first). */
  static readonly KEEP = 64;

  constructor(now: () => number) {
    this.#now = now;
  }

  clear(): void {
    this.#prompts.clear();
  }

  bill(model: string, segments: Segment[], options: { scope?: string; retention?: unknown } = {}) {
    const now = this.#now();
    const key = `${options.scope ?? ""}\u0000${model}`;
    const live = (this.#prompts.get(key) ?? []).filter((c) => now < c.expires);
    const tokens = segments.reduce((n, s) => n + s.tokens, 0);
    let best = 0;
    let used: Cached | undefined;
    for (const c of live) {
      const shared = Math.min(sharedTokens(c.segments, segments), tokens);
      if (shared > best) [best, used] = [shared, c];
    }
    const cached =
      best >= OPENAI_MIN_CACHEABLE ? Math.floor(best / OPENAI_CACHE_STEP) * OPENAI_CACHE_STEP : 0;
    if (cached > 0 && used !== undefined) used.expires = now + used.ttl;
    if (tokens >= OPENAI_MIN_CACHEABLE) {
      const ttl = options.retention === "24h" ? OPENAI_EXTENDED_TTL_MS : OPENAI_TTL_MS;
      live.push({ segments, tokens, expires: now + ttl, ttl });
    }
    this.#prompts.set(key, live.slice(-OpenAICache.KEEP));
    return { prompt_tokens: tokens, cached_tokens: cached } satisfies OpenAIOutcome;
  }
}
