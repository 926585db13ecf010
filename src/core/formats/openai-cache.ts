/**
 * OpenAI prompt caching as the gate sees it (the model below follows OpenAI's prompt-caching documentation).
 *
 * OpenAI caches on its own: every request whose prompt reaches the model's minimum (1,024 tokens) is cached
 * by prefix, with no marker from the client (GPT-5.6 and later add one implicit breakpoint at the end of the
 * prompt, optional explicit `prompt_cache_breakpoint` markers on content parts, and
 * `prompt_cache_options.mode: "explicit"` to drop the implicit one). The model used here:
 *
 * - The newest messages of a request (from the last run of model output on: the assistant's answer and
 *   whatever followed it) are what the previous request of the session did not have; everything before them
 *   is the previous request's prompt, which the provider cached when it served it. So the end of that prefix
 *   is a breakpoint: a result before it sits on the cached side, and replacing it re-bills the tokens from it
 *   to that point at the input (or write) rate instead of the cache-read rate. Every result the transform
 *   decides is settled, i.e. before the newest model output, so on OpenAI a first decision is always priced
 *   on the cached side once the prefix is long enough: stickiness (same bytes forever after) is what keeps
 *   the prefix the provider holds matching.
 * - A prefix shorter than the model's minimum was not cached: no breakpoint there, the result is priced at
 *   the input rate. The client "caches" (the recall hop re-reads the context at the cache-read rate) when
 *   the whole prompt reaches the minimum, unless it turned caching off with explicit mode and no marker.
 * - Explicit breakpoints count where they are (the end of the marked part), like Anthropic's markers.
 * - TTL: the short write rate ("5m" slot: OpenAI's 30-minute write) unless the request or the marker asks
 *   for "12h" (the long write slot). Models before GPT-5.6 bill writes as plain input: the price table
 *   already says so (write = input), so nothing here depends on the model generation.
 * - Cache hits come in 128-token steps on older models; the estimate ignores that rounding (under 128
 *   tokens per request).
 */
import { getMember, type JsonNode, type JsonObject } from "../json/scan.ts";
import { resolveModel } from "../pricing.ts";
import { REQUEST_CHARS_PER_TOKEN } from "../tokens.ts";
import { expectObject, type Path, shapeError, stringMember } from "./shape.ts";
import type { Breakpoint, RequestAnalysis, ShapeNote, ToolResultSite } from "./types.ts";

/** OpenAI's documented minimum for every caching model; used when the model is not in the price table. */
export const OPENAI_MIN_CACHEABLE_TOKENS = 1024;

export interface CacheOptions {
  /** `prompt_cache_options.mode: "explicit"`: no implicit breakpoint. */
  explicit: boolean;
  /** The request's TTL slot for breakpoints that do not name their own. */
  ttl: Breakpoint["ttl"];
}

function ttlSlot(ttl: string | undefined, fallback: Breakpoint["ttl"]): Breakpoint["ttl"] {
  if (ttl === undefined) return fallback;
  return ttl === "12h" ? "1h" : "5m";
}

export function cacheOptionsOf(raw: string, root: JsonObject): CacheOptions {
  const node = getMember(root, "prompt_cache_options");
  if (node === undefined || node.kind === "null") return { explicit: false, ttl: "5m" };
  const obj = expectObject(node, ["prompt_cache_options"], "prompt_cache_options");
  const mode = stringMember(raw, obj, "mode", ["prompt_cache_options"], false, true);
  const ttl = stringMember(raw, obj, "ttl", ["prompt_cache_options"], false, true);
  return { explicit: mode === "explicit", ttl: ttlSlot(ttl, "5m") };
}

/** A content part's `prompt_cache_breakpoint`, as a breakpoint at `position` (the part's end), or undefined. */
export function partBreakpoint(
  raw: string,
  part: JsonObject,
  path: Path,
  position: number,
  options: CacheOptions,
): Breakpoint | undefined {
  const node: JsonNode | undefined = getMember(part, "prompt_cache_breakpoint");
  if (node === undefined || node.kind === "null") return undefined;
  const bpath: Path = [...path, "prompt_cache_breakpoint"];
  if (node.kind !== "object") shapeError("prompt_cache_breakpoint must be an object", bpath);
  return {
    position,
    ttl: ttlSlot(stringMember(raw, node, "ttl", bpath, false, true), options.ttl),
  };
}

export interface OpenAICaching {
  breakpoints: Breakpoint[];
  client_caches: boolean;
}

/**
 * The request's breakpoints under the model above. `seenPrefix` is the prompt-order offset where the newest
 * messages start (undefined when the request has no model output yet: no earlier turn to have cached).
 */
export function openaiCaching(input: {
  model: string | null;
  options: CacheOptions;
  explicit: Breakpoint[];
  seenPrefix: number | undefined;
  promptChars: number;
}): OpenAICaching {
  const min = resolveModel(input.model)?.min_cacheable_tokens ?? OPENAI_MIN_CACHEABLE_TOKENS;
  const cacheable = (chars: number) => chars / REQUEST_CHARS_PER_TOKEN >= min;
  const breakpoints = input.explicit.filter((b) => cacheable(b.position));
  if (!input.options.explicit && input.seenPrefix !== undefined && cacheable(input.seenPrefix))
    breakpoints.push({ position: input.seenPrefix, ttl: input.options.ttl });
  breakpoints.sort((a, b) => a.position - b.position);
  const caches =
    cacheable(input.promptChars) && (!input.options.explicit || input.explicit.length > 0);
  return { breakpoints, client_caches: caches };
}

/**
 * The analysis both OpenAI adapters return once they have walked the request: the breakpoints of the model
 * above, and no anchor slots (OpenAI caches prefixes on its own: an Anthropic-style anchor has nothing to add).
 */
export function openaiAnalysis(input: {
  model: string | null;
  sites: ToolResultSite[];
  assistantTurns: number;
  promptChars: number;
  seenPrefix: number | undefined;
  options: CacheOptions;
  explicit: Breakpoint[];
  hasRecallTool: boolean;
  notes: ShapeNote[];
}): RequestAnalysis {
  const caching = openaiCaching(input);
  return {
    model: input.model,
    sites: input.sites,
    assistant_turns: input.assistantTurns,
    prompt_chars: input.promptChars,
    breakpoints: caching.breakpoints,
    client_caches: caching.client_caches,
    has_recall_tool: input.hasRecallTool,
    auto_cache: true,
    last_message_position: input.seenPrefix ?? input.promptChars,
    anchor_slots: [],
    notes: input.notes,
  };
}

/**
 * Collects the explicit `prompt_cache_breakpoint` markers of content parts as an adapter walks the request
 * (`base` turns a raw offset into a prompt-order one).
 */
export function breakpointCollector(
  raw: string,
  base: number,
  options: CacheOptions,
): { explicit: Breakpoint[]; scanParts: (content: JsonNode | undefined, path: Path) => void } {
  const explicit: Breakpoint[] = [];
  const scanParts = (content: JsonNode | undefined, path: Path) => {
    if (content?.kind !== "array") return;
    content.items.forEach((part, i) => {
      if (part.kind !== "object") return;
      const bp = partBreakpoint(raw, part, [...path, i], base + part.end, options);
      if (bp !== undefined) explicit.push(bp);
    });
  };
  return { explicit, scanParts };
}
