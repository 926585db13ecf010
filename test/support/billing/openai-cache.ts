/**
 * OpenAI's automatic prompt caching, as documented (https://developers.openai.com/api/docs/guides/prompt-caching).
 * Models before GPT-5.6: every prompt of at least 1,024 tokens is cached as it was processed; a later prompt
 * reads the longest token prefix it shares with a live cached prompt, "with cache hits occurring in increments
 * of 128 tokens"; a cached prompt lives 5 minutes after its last use ("typically 5 to 10 minutes of
 * inactivity": the fake takes the short end); writes cost nothing extra. GPT-5.6 and later families ("For
 * GPT-5.6 models and later model families, cache writes cost 1.25× the uncached input token rate"; "Implicit
 * caching places a managed breakpoint near the latest user or tool message. It no longer uses 128-token
 * rounding"; a cached prefix "is matched exactly at a breakpoint"; `prompt_cache_options.ttl` "30m ... is a
 * minimum lifetime"): entries are written at breakpoints (the implicit one at the end of the newest message,
 * unless `prompt_cache_options.mode` is "explicit", and every part marked `prompt_cache_breakpoint`), a
 * request reads the longest live entry its own prefix equals, and the tokens from there to its last
 * breakpoint are reported as `cache_write_tokens`. `prompt_cache_key` routes requests ("Requests are routed
 * to a machine based on a hash of the initial prefix of the prompt", combined with the key): the fake keeps
 * entries per key. A prompt is rendered as segments in the order the model sees them (Chat Completions: tool
 * definitions, then each message; Responses: instructions, tool definitions, then each input item), each
 * billed with a small framing overhead.
 */
import { createHash } from "node:crypto";
import { commonPrefixTokens, countTokens } from "./tokenizer.ts";

export const OPENAI_MIN_CACHEABLE = 1024;
export const OPENAI_CACHE_STEP = 128;
/** In-memory retention: "typically 5 to 10 minutes of inactivity"; the fake takes the short end. */
export const OPENAI_TTL_MS = 300_000;
/** `prompt_cache_retention: "24h"`. */
export const OPENAI_EXTENDED_TTL_MS = 86_400_000;
const SEGMENT_OVERHEAD = 3;

type Json = Record<string, unknown>;

/** `prompt_cache_options.ttl` on GPT-5.6 and later: 30 minutes, a minimum. */
export const OPENAI_BREAKPOINT_TTL_MS = 1_800_000;

export interface Segment {
  text: string;
  tokens: number;
  /** A part of it carries `prompt_cache_breakpoint`. */
  breakpoint?: boolean;
}

function marked(content: unknown): boolean {
  return (
    Array.isArray(content) &&
    content.some((p) => typeof p === "object" && p !== null && "prompt_cache_breakpoint" in p)
  );
}

function segment(text: string, content?: unknown): Segment {
  return {
    text,
    tokens: countTokens(text) + SEGMENT_OVERHEAD,
    ...(marked(content) ? { breakpoint: true } : {}),
  };
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
    out.push(segment(`${String(m.role)}${id}\n${contentText(m.content)}${calls}`, m.content));
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
        out.push(
          segment(`tool\n${String(item.call_id)}\n${contentText(item.output)}`, item.output),
        );
      else if (item.type === "function_call")
        out.push(segment(`call\n${String(item.name)}\n${String(item.arguments ?? "")}`));
      // Freeform tools (Codex's exec): the call's input is its text.
      else if (item.type === "custom_tool_call")
        out.push(segment(`call\n${String(item.name)}\n${String(item.input ?? "")}`));
      // Tools declared in the input (Codex's `additional_tools` item).
      else if (Array.isArray(item.tools))
        for (const t of item.tools) out.push(segment(`tool\n${JSON.stringify(t)}`));
      else
        out.push(
          segment(`${String(item.role ?? item.type)}\n${contentText(item.content)}`, item.content),
        );
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
  /** GPT-5.6 and later: the tokens written to the cache (billed at the write rate). */
  cache_write_tokens: number;
}

export interface OpenAIBillOptions {
  /** `prompt_cache_key` (entries are kept per key). */
  key?: unknown;
  /** `prompt_cache_retention` (models before GPT-5.6). */
  retention?: unknown;
  /** The model caches at breakpoints and bills writes (GPT-5.6 and later). */
  breakpoints?: boolean;
  /** `prompt_cache_options.mode === "explicit"`: no implicit breakpoint. */
  explicit?: boolean;
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

interface Entry {
  tokens: number;
  expires: number;
}

export class OpenAICache {
  readonly #now: () => number;
  readonly #prompts = new Map<string, Cached[]>();
  readonly #entries = new Map<string, Entry>();
  /** Cached prompts kept per scope and model (the oldest go first). */
  static readonly KEEP = 64;

  constructor(now: () => number) {
    this.#now = now;
  }

  clear(): void {
    this.#prompts.clear();
    this.#entries.clear();
  }

  bill(model: string, segments: Segment[], options: OpenAIBillOptions = {}): OpenAIOutcome {
    const key = `${typeof options.key === "string" ? options.key : ""}\u0000${model}`;
    if (options.breakpoints) return this.#atBreakpoints(key, segments, options.explicit === true);
    const now = this.#now();
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
    return { prompt_tokens: tokens, cached_tokens: cached, cache_write_tokens: 0 };
  }

  /** GPT-5.6 and later: entries at breakpoints, read where the request's prefix equals one. */
  #atBreakpoints(key: string, segments: Segment[], explicit: boolean): OpenAIOutcome {
    const now = this.#now();
    const chain: string[] = [];
    const cum: number[] = [];
    let h = createHash("sha256").update(key).digest("hex");
    let total = 0;
    for (const s of segments) {
      h = createHash("sha256").update(`${h}|${s.text}`).digest("hex");
      chain.push(h);
      total += s.tokens;
      cum.push(total);
    }
    let read = 0;
    let hit: Entry | undefined;
    chain.forEach((c, i) => {
      const e = this.#entries.get(c);
      if (e !== undefined && e.expires > now && cum[i]! > read) [read, hit] = [cum[i]!, e];
    });
    if (hit !== undefined) hit.expires = now + OPENAI_BREAKPOINT_TTL_MS;
    const bps = segments.flatMap((s, i) =>
      s.breakpoint || (!explicit && i === segments.length - 1) ? [i] : [],
    );
    let written = 0;
    for (const i of bps) {
      if (cum[i]! < OPENAI_MIN_CACHEABLE || cum[i]! <= read) continue;
      this.#entries.set(chain[i]!, { tokens: cum[i]!, expires: now + OPENAI_BREAKPOINT_TTL_MS });
      written = Math.max(written, cum[i]! - read);
    }
    return { prompt_tokens: total, cached_tokens: read, cache_write_tokens: written };
  }
}
