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
 */
import { type ModelPrice, ratesFor, usd } from "../core/pricing.ts";
import type { PromptBlock } from "./blocks.ts";
import type { CallCost } from "./types.ts";

const TTL_MS = { "5m": 5 * 60_000, "1h": 60 * 60_000 } as const;

export class CacheSim {
  readonly #price: ModelPrice;
  #cached: PromptBlock[] = [];
  /** When each cached block lapses (ms), for calls that carry a time. */
  #expires: number[] = [];

  constructor(price: ModelPrice) {
    this.#price = price;
  }

  call(blocks: readonly PromptBlock[], outputTokens: number, at?: number): CallCost {
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
      const n = Math.min(last + 1, this.#cached.length);
      let i = 0;
      while (
        i < n &&
        blocks[i]!.key === this.#cached[i]!.key &&
        (at === undefined || this.#expires[i]! >= at)
      )
        read += blocks[i++]!.tokens;
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
    const cost =
      usd(read, rates.cache_read) +
      writeUsd +
      usd(input, rates.input) +
      usd(outputTokens, rates.output);
    return {
      prompt_tokens: prompt,
      read_tokens: read,
      write_tokens: write,
      input_tokens: input,
      output_tokens: outputTokens,
      usd: cost,
    };
  }
}
