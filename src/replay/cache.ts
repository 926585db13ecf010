/**
 * The prompt-cache simulation that prices each call: the cache holds the previous call's prefix up to its
 * last breakpoint; a call reads the longest shared prefix at the cache-read price, writes the rest up to its
 * breakpoint at the cache-write price (the 1-hour rate for blocks a 1-hour breakpoint covers), pays the
 * remainder at the input price and its output at the output price. The breakpoints are the ones in the
 * request as sent: the "cached" client places an advancing one at the end of every prompt, the "uncached"
 * client sets none, and a policy may add its own (the anchor). Without any, every prompt token is billed at
 * the input price. A prefix shorter than the model's minimum cacheable length is neither written nor read.
 *
 * Time: a call given its time (ms) finds cached only what its TTL kept alive since the call that last read or
 * wrote it (5 minutes, or 1 hour for blocks a 1-hour breakpoint covers). Calls without a time are taken to
 * fall within the TTL, as when the sessions carry no timestamps and no gap model is set.
 *
 * `automatic`: OpenAI's rules (its prompt-caching guide) in place of breakpoints. Every prompt of the model's
 * minimum (1,024 tokens) or more is cached by prefix, whole, with no marker (markers in the request are
 * ignored); a call reads the prefix it shares with the cached one in 128-token steps, and pays the rest at
 * the cache-write price (plain input for the models before GPT-5.6: the price table says write = input). The
 * cache lives 5 minutes after its last use: the guide's in-memory retention clears it "within 5 to 10
 * minutes of inactivity" (always within an hour); the lower end, and no extended (24 h) retention.
 */
import { type ModelPrice, type Rates, ratesFor, usd } from "../core/pricing.ts";
import type { PromptBlock } from "./blocks.ts";
import type { CallCost } from "./types.ts";

const TTL_MS = { "5m": 5 * 60_000, "1h": 60 * 60_000 } as const;

/** OpenAI's cache hits come in steps of this many tokens (from the 1,024-token minimum up). */
export const AUTOMATIC_STEP_TOKENS = 128;

/** How the provider caches: by the request's breakpoints (Anthropic), or every prompt on its own (OpenAI). */
export type CacheRules = "breakpoints" | "automatic";

export class CacheSim {
  readonly #price: ModelPrice;
  readonly #rules: CacheRules;
  #cached: PromptBlock[] = [];
  /** When each cached block lapses (ms), for calls that carry a time. */
  #expires: number[] = [];

  constructor(price: ModelPrice, rules: CacheRules = "breakpoints") {
    this.#price = price;
    this.#rules = rules;
  }

  call(blocks: readonly PromptBlock[], outputTokens: number, at?: number): CallCost {
    if (this.#rules === "automatic") return this.#automatic(blocks, outputTokens, at);
    let prompt = 0;
    let last = -1;
    let upTo = 0;
    blocks.forEach((b, i) => {
      prompt += b.tokens;
      if (b.breakpoint) {
        last = i;
        upTo = prompt;
      }
    });
    const rates = ratesFor(this.#price, prompt);
    let read = 0;
    let write = 0;
    let writeUsd = 0;
    let input = prompt;
    if (last >= 0 && upTo >= this.#price.min_cacheable_tokens) {
      const i = this.#matching(blocks, last + 1, at);
      for (let j = 0; j < i; j++) read += blocks[j]!.tokens;
      // Each block is kept for the TTL of the first breakpoint at or after it.
      const ttls: ("5m" | "1h")[] = new Array(last + 1);
      let ttl: "5m" | "1h" = "5m";
      for (let j = last; j >= 0; j--) {
        if (blocks[j]!.breakpoint) ttl = blocks[j]!.ttl ?? "5m";
        ttls[j] = ttl;
      }
      for (let j = i; j <= last; j++) {
        write += blocks[j]!.tokens;
        writeUsd += usd(
          blocks[j]!.tokens,
          ttls[j] === "1h" ? rates.cache_write_1h : rates.cache_write_5m,
        );
      }
      input = prompt - upTo;
      this.#cached = blocks.slice(0, last + 1);
      this.#expires = ttls.map((t) => (at ?? 0) + TTL_MS[t]);
    }
    return priced(rates, { prompt, read, write, writeUsd, input, output: outputTokens });
  }

  /** How many of the first `upTo` blocks are still cached (the same, and alive at `at`). */
  #matching(blocks: readonly PromptBlock[], upTo: number, at?: number): number {
    const n = Math.min(upTo, this.#cached.length);
    let i = 0;
    while (
      i < n &&
      blocks[i]!.key === this.#cached[i]!.key &&
      (at === undefined || this.#expires[i]! >= at)
    )
      i++;
    return i;
  }

  /** OpenAI's automatic caching: the whole prompt is the prefix, hits in 128-token steps. */
  #automatic(blocks: readonly PromptBlock[], outputTokens: number, at?: number): CallCost {
    const prompt = blocks.reduce((n, b) => n + b.tokens, 0);
    const rates = ratesFor(this.#price, prompt);
    let read = 0;
    let write = 0;
    let input = prompt;
    if (prompt >= this.#price.min_cacheable_tokens) {
      let shared = 0;
      for (let i = this.#matching(blocks, blocks.length, at) - 1; i >= 0; i--)
        shared += blocks[i]!.tokens;
      if (shared >= this.#price.min_cacheable_tokens)
        read = Math.floor(shared / AUTOMATIC_STEP_TOKENS) * AUTOMATIC_STEP_TOKENS;
      write = prompt - read;
      input = 0;
      this.#cached = [...blocks];
      this.#expires = blocks.map(() => (at ?? 0) + TTL_MS["5m"]);
    }
    const writeUsd = usd(write, rates.cache_write_5m);
    return priced(rates, { prompt, read, write, writeUsd, input, output: outputTokens });
  }
}

/** A call's tokens by how they are billed, and its price. */
function priced(
  rates: Rates,
  t: {
    prompt: number;
    read: number;
    write: number;
    writeUsd: number;
    input: number;
    output: number;
  },
): CallCost {
  return {
    prompt_tokens: t.prompt,
    read_tokens: t.read,
    write_tokens: t.write,
    input_tokens: t.input,
    output_tokens: t.output,
    usd:
      usd(t.read, rates.cache_read) +
      t.writeUsd +
      usd(t.input, rates.input) +
      usd(t.output, rates.output),
  };
}
