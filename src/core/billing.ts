/**
 * What the provider billed, as opposed to what we estimated: its usage objects read into one
 * provider-neutral shape, priced with the price table, and kept per turn. Pure: the proxy reads
 * usage from answers it forwards, a client of the compact route posts it back, and both end up
 * here.
 */
import { type ModelPrice, ratesFor, resolveModel, usd } from "./pricing.ts";
import type { Format } from "./types.ts";

/** Billed tokens by rate (the same five rates as the price table). */
export interface UsageTokens {
  /** Prompt tokens billed at the input rate (neither read from nor written to the cache). */
  input: number;
  cache_read: number;
  cache_write_5m: number;
  cache_write_1h: number;
  output: number;
}

export const NO_USAGE: Readonly<UsageTokens> = Object.freeze({
  input: 0,
  cache_read: 0,
  cache_write_5m: 0,
  cache_write_1h: 0,
  output: 0,
});

/** A turn's measured usage, as its log line keeps it. */
export interface TurnUsage {
  /** "proxy": read from the answers that passed through; "client": posted to the usage route. */
  source: "proxy" | "client";
  /** The model the usage is priced as (the answer's, else the request's), null when unknown. */
  model: string | null;
  /** Provider calls: the client's, then one per recall hop. */
  calls: number;
  /** Summed over every call. */
  tokens: UsageTokens;
  /** The client's own call: the request we sent, so the one that calibrates the estimates. */
  first: UsageTokens;
  /** Output tokens of the call whose answer the client read (the last one). */
  answer_output: number;
  /**
   * The tokens offloading took out of the request (the turn's `estimate.removed`), at the tenant's
   * calibration when the usage was kept (absent: the report calibrates on the session's turns).
   */
  removed_calibrated?: number;
}

const n = (v: unknown): number =>
  typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
const rec = (v: unknown): Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/**
 * A provider usage object in the neutral shape, or null when it holds no usage at all. Anthropic:
 * `input_tokens` (the uncached part), `cache_creation_input_tokens` split by `cache_creation`'s
 * 5m/1h fields (all 5m when there is no split), `cache_read_input_tokens`, `output_tokens`. OpenAI
 * Chat: `prompt_tokens` (the whole prompt) with `prompt_tokens_details.cached_tokens` (and
 * `cache_write_tokens` where the model bills writes), `completion_tokens`. Responses:
 * `input_tokens` with `input_tokens_details`, `output_tokens`. Malformed fields count as 0.
 */
export function usageTokens(format: Format, usage: unknown): UsageTokens | null {
  const u = rec(usage);
  if (Object.keys(u).length === 0) return null;
  if (format === "ai-sdk") return aiSdkUsageTokens(u);
  if (format === "anthropic") {
    const created = n(u.cache_creation_input_tokens);
    const split = rec(u.cache_creation);
    const w1h = Math.min(created, n(split.ephemeral_1h_input_tokens));
    return {
      input: n(u.input_tokens),
      cache_read: n(u.cache_read_input_tokens),
      cache_write_5m: created - w1h,
      cache_write_1h: w1h,
      output: n(u.output_tokens),
    };
  }
  const chat = format === "openai-chat";
  const prompt = n(chat ? u.prompt_tokens : u.input_tokens);
  const details = rec(chat ? u.prompt_tokens_details : u.input_tokens_details);
  const read = Math.min(prompt, n(details.cached_tokens));
  const written = Math.min(prompt - read, n(details.cache_write_tokens));
  return {
    input: prompt - read - written,
    cache_read: read,
    cache_write_5m: written,
    cache_write_1h: 0,
    output: n(chat ? u.completion_tokens : u.output_tokens),
  };
}

/**
 * The AI SDK's provider-neutral usage (LanguageModelV4Usage): the provider's own object (`raw`) where it is
 * one this module reads (Anthropic's carries the 5-minute/1-hour split of its writes), else the neutral
 * fields (writes then taken as 5-minute ones).
 */
function aiSdkUsageTokens(u: Record<string, unknown>): UsageTokens | null {
  const raw = rec(u.raw);
  if ("cache_creation_input_tokens" in raw || "cache_read_input_tokens" in raw)
    return usageTokens("anthropic", raw);
  if ("prompt_tokens" in raw) return usageTokens("openai-chat", raw);
  if ("input_tokens_details" in raw) return usageTokens("openai-responses", raw);
  const input = rec(u.inputTokens);
  const output = rec(u.outputTokens);
  if (input.total === undefined && output.total === undefined) return null;
  const read = n(input.cacheRead);
  const written = n(input.cacheWrite);
  return {
    input:
      input.noCache === undefined ? Math.max(0, n(input.total) - read - written) : n(input.noCache),
    cache_read: read,
    cache_write_5m: written,
    cache_write_1h: 0,
    output: n(output.total),
  };
}

export function addUsageTokens(a: UsageTokens, b: UsageTokens): UsageTokens {
  return {
    input: a.input + b.input,
    cache_read: a.cache_read + b.cache_read,
    cache_write_5m: a.cache_write_5m + b.cache_write_5m,
    cache_write_1h: a.cache_write_1h + b.cache_write_1h,
    output: a.output + b.output,
  };
}

export function subUsageTokens(a: UsageTokens, b: UsageTokens): UsageTokens {
  return {
    input: Math.max(0, a.input - b.input),
    cache_read: Math.max(0, a.cache_read - b.cache_read),
    cache_write_5m: Math.max(0, a.cache_write_5m - b.cache_write_5m),
    cache_write_1h: Math.max(0, a.cache_write_1h - b.cache_write_1h),
    output: Math.max(0, a.output - b.output),
  };
}

/** Prompt tokens of a call, whatever rate they were billed at. */
export function promptOf(t: UsageTokens): number {
  return t.input + t.cache_read + t.cache_write_5m + t.cache_write_1h;
}

/**
 * The turn's usage from the usage object of each provider call, the client's first (null entries:
 * an answer without usage). Null when no call reported any.
 */
export function turnUsage(
  format: Format,
  usages: readonly unknown[],
  model: string | null,
  source: TurnUsage["source"],
): TurnUsage | null {
  const each = usages.map((u) => usageTokens(format, u));
  if (each.every((t) => t === null)) return null;
  const tokens = each.reduce<UsageTokens>((s, t) => addUsageTokens(s, t ?? NO_USAGE), NO_USAGE);
  return {
    source,
    model,
    calls: usages.length,
    tokens,
    first: { ...(each[0] ?? NO_USAGE) },
    answer_output: each[each.length - 1]?.output ?? 0,
  };
}

/**
 * Dollars for billed tokens at a model's rates (long-context rates when the call's prompt was
 * over the threshold: a sum over calls is priced per call where known, else as one call).
 */
export function usageUsd(price: ModelPrice, t: UsageTokens): number {
  const r = ratesFor(price, promptOf(t));
  return (
    usd(t.input, r.input) +
    usd(t.cache_read, r.cache_read) +
    usd(t.cache_write_5m, r.cache_write_5m) +
    usd(t.cache_write_1h, r.cache_write_1h) +
    usd(t.output, r.output)
  );
}

/** The price-table entry of a usage's model, null when unknown (then nothing is priced). */
export function priceOfUsage(u: TurnUsage): ModelPrice | null {
  return resolveModel(u.model);
}
