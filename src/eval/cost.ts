/**
 * What the eval itself costs. Before any call: an estimate from the sample's token counts (the
 * turn transform's estimates of A's and B's prompts, the recorded answers' length, B's expected
 * recall hops at the config's recall probability) at the price table's rates. While it runs: a
 * metered fetch under which no provider call starts unless the worst it can cost (its prompt at
 * the dearest rate with a margin on our estimate, its output to the cap) fits under the ceiling,
 * with what the calls in flight may still cost; the margin grows when the provider counts more
 * tokens than we estimated. What is spent is what the provider billed, from its usage.
 */
import { promptOf, usageUsd } from "../core/billing.ts";
import { type ModelPrice, ratesFor, usd } from "../core/pricing.ts";
import { REQUEST_CHARS_PER_TOKEN } from "../core/tokens.ts";
import type { Client } from "../replay/types.ts";
import { usageOf } from "./answers.ts";
import type { EvalProvider, SampledCall } from "./types.ts";

/** Output tokens of a call that asks for a recall (the tool call), as the replay prices it. */
const RECALL_CALL_TOKENS = 60;
/** What one recall answer adds to the next hop's prompt, expected (a query's matches). */
const RECALL_ANSWER_TOKENS = 800;
/** A judge's prompt beyond the two answers (instructions, the user's message, clipped). */
const JUDGE_PROMPT_TOKENS = 1800;
export const JUDGE_MAX_TOKENS = 512;
/** The margin on our prompt estimates until the provider's counts say better. */
const FIRST_FACTOR = 1.5;

export interface CostSettings {
  provider: EvalProvider;
  client: Client;
  price: ModelPrice;
  judge: ModelPrice | null;
  /** The config's prior that the model recalls an offloaded result (the gate's p). */
  recallProbability: number;
}

/** The prompt rate of a first call: Anthropic's cached client writes its prompt to the cache. */
function promptRate(price: ModelPrice, tokens: number, s: CostSettings): number {
  const r = ratesFor(price, tokens);
  return s.provider === "anthropic" && s.client === "cached"
    ? Math.max(r.input, r.cache_write_5m)
    : r.input;
}

function callUsd(price: ModelPrice, prompt: number, out: number, s: CostSettings): number {
  return usd(prompt, promptRate(price, prompt, s)) + usd(out, ratesFor(price, prompt).output);
}

/** The expected dollars of one sampled call: A (twice for an A/A pair), B and its hops, judges. */
export function estimateCall(c: SampledCall, s: CostSettings): number {
  const out = c.tokens_out;
  const a = callUsd(s.price, c.tokens_a, out, s);
  const p = c.changed.some((r) => r.action === "offloaded") ? s.recallProbability : 0;
  const hop = c.tokens_b + RECALL_CALL_TOKENS + RECALL_ANSWER_TOKENS;
  const b =
    (1 - p) * callUsd(s.price, c.tokens_b, out, s) +
    p * (callUsd(s.price, c.tokens_b, RECALL_CALL_TOKENS, s) + callUsd(s.price, hop, out, s));
  const pairs = c.aa ? 2 : 1;
  const judge =
    s.judge === null ? 0 : pairs * callUsd(s.judge, JUDGE_PROMPT_TOKENS + 2 * out, 60, s);
  return a * pairs + b + judge;
}

/**
 * The spend of a run under an optional ceiling: a provider call starts only when what was spent,
 * what the calls in flight may still cost, and the worst this one can cost fit under it.
 */
export class Budget {
  #spent: number;
  #reserved = 0;
  /** The worst ratio of provider-counted to estimated prompt tokens seen so far. */
  #ratio = 0;
  readonly ceiling: number | null;

  constructor(spent: number, ceiling: number | null) {
    this.#spent = spent;
    this.ceiling = ceiling;
  }

  get spent(): number {
    return this.#spent;
  }

  /** The margin the bound puts on our prompt estimates. */
  get factor(): number {
    return Math.max(FIRST_FACTOR, 1.2 * this.#ratio);
  }

  /** Holds `bound` dollars for a call about to start; false when it could pass the ceiling. */
  reserve(bound: number): boolean {
    if (this.ceiling !== null && this.#spent + this.#reserved + bound > this.ceiling) return false;
    this.#reserved += bound;
    return true;
  }

  /** The call finished: `billed` is spent, what it held is free again. */
  settle(bound: number, billed: number): void {
    this.#reserved = Math.max(0, this.#reserved - bound);
    this.#spent += billed;
  }

  /** The provider counted `billed` prompt tokens where we estimated `estimated`. */
  learn(billed: number, estimated: number): void {
    if (estimated > 0 && billed > 0) this.#ratio = Math.max(this.#ratio, billed / estimated);
  }
}

/** What a metered fetch throws when the next call could pass the ceiling (it is never sent). */
export const CEILING = new Error("the next provider call could pass the --max-usd ceiling");

/**
 * A fetch whose every call is held against the budget first (the request's size at the model's
 * dearest prompt rate, `outputCap` tokens at its output rate) and charged what its usage bills.
 */
export function meteredFetch(
  inner: typeof fetch,
  budget: Budget,
  provider: EvalProvider,
  price: ModelPrice,
  outputCap: number,
): typeof fetch {
  const rates = price.long_context ?? price;
  const promptRate = Math.max(rates.input, rates.cache_write_5m, rates.cache_write_1h);
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const body = typeof init?.body === "string" ? init.body : "";
    const estimated = body.length / REQUEST_CHARS_PER_TOKEN;
    const bound = usd(estimated * budget.factor, promptRate) + usd(outputCap, rates.output);
    if (!budget.reserve(bound)) throw CEILING;
    let billed = 0;
    try {
      const res = await inner(input, init);
      if (!res.ok) return res;
      const text = await res.text();
      try {
        const usage = usageOf(provider, JSON.parse(text));
        billed = usageUsd(price, usage);
        budget.learn(promptOf(usage), estimated);
      } catch {
        // not JSON: nothing billed that we can read
      }
      return new Response(text, {
        status: res.status,
        statusText: res.statusText,
        headers: res.headers,
      });
    } finally {
      budget.settle(bound, billed);
    }
  }) as typeof fetch;
}
