/**
 * The prompt-cache simulation that prices each call (issue 5): the cache holds the previous call's prefix up
 * to its last breakpoint; a call reads the longest shared prefix at the cache-read price, writes the rest up
 * to its breakpoint at the cache-write price, pays the remainder at the input price and its output at the
 * output price. Two clients: "cached" places an advancing breakpoint at the end of every prompt, "uncached"
 * sets none (every prompt token at input price). All calls of a session are taken to fall within the TTL
 * (the corpus has no timestamps), and a prompt shorter than the model's minimum cacheable length is neither
 * written nor read.
 */
import { type ModelPrice, ratesFor, usd } from "../core/pricing.ts";
import type { PromptBlock } from "./blocks.ts";
import type { CallCost, Client } from "./types.ts";

export class CacheSim {
  readonly #price: ModelPrice;
  readonly #client: Client;
  #cached: PromptBlock[] = [];

  constructor(price: ModelPrice, client: Client) {
    this.#price = price;
    this.#client = client;
  }

  call(blocks: readonly PromptBlock[], outputTokens: number): CallCost {
    let prompt = 0;
    for (const b of blocks) prompt += b.tokens;
    const rates = ratesFor(this.#price, prompt);
    let read = 0;
    let write = 0;
    let input = prompt;
    if (this.#client === "cached" && prompt >= this.#price.min_cacheable_tokens) {
      const n = Math.min(blocks.length, this.#cached.length);
      let i = 0;
      while (i < n && blocks[i]!.key === this.#cached[i]!.key) read += blocks[i++]!.tokens;
      write = prompt - read;
      input = 0;
      this.#cached = [...blocks];
    }
    const cost = usd(read, rates.cache_read) + usd(write, rates.cache_write_5m) + usd(input, rates.input) + usd(outputTokens, rates.output);
    return { prompt_tokens: prompt, read_tokens: read, write_tokens: write, input_tokens: input, output_tokens: outputTokens, usd: cost };
  }
}
