/**
 * The prompt-cache simulation that prices each call (issue 5): the cache holds the previous call's prefix up
 * to its last breakpoint; a call reads the longest shared prefix at the cache-read price, writes the rest up
 * to its breakpoint at the cache-write price, pays the remainder at the input price and its output at the
 * output price. The breakpoints are the ones in the request as sent: the "cached" client places an advancing
 * one at the end of every prompt, the "uncached" client sets none, and a policy may add its own (the anchor).
 * Without any, every prompt token is billed at the input price. All calls of a session are taken to fall
 * within the TTL (the corpus has no timestamps), and a prefix shorter than the model's minimum cacheable
 * length is neither written nor read.
 */
import { type ModelPrice, ratesFor, usd } from "../core/pricing.ts";
import type { PromptBlock } from "./blocks.ts";
import type { CallCost } from "./types.ts";

export class CacheSim {
  readonly #price: ModelPrice;
  #cached: PromptBlock[] = [];

  constructor(price: ModelPrice) {
    this.#price = price;
  }

  call(blocks: readonly PromptBlock[], outputTokens: number): CallCost {
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
    let input = prompt;
    if (last >= 0 && upTo >= this.#price.min_cacheable_tokens) {
      const n = Math.min(last + 1, this.#cached.length);
      let i = 0;
      while (i < n && blocks[i]!.key === this.#cached[i]!.key) read += blocks[i++]!.tokens;
      write = upTo - read;
      input = prompt - upTo;
      this.#cached = blocks.slice(0, last + 1);
    }
    const cost =
      usd(read, rates.cache_read) +
      usd(write, rates.cache_write_5m) +
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
