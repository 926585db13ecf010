/**
 * The net-saving gate (README.md, "The net-saving gate"). Pure: the same input always gives the same answer,
 * and every answer carries its breakdown in dollars so a decision can be audited.
 *
 * With T tokens of the body, S of the stub, H turns of horizon, p the recall probability and r the rate the
 * result is billed at (cache read on the cached side of the last breakpoint, input after it):
 *   reprefill_saving   = H·T·r
 *   stub_carry_cost    = H·S·r
 *   invalidation_cost  = cached side only: tokens from the result to the breakpoint · (write − read)
 *   expected_recall    = p·(context · r_ctx + recalled · input + recall call output · output)
 *   tool_declaration   = when this offload would declare the recall tool: H·tool·r_tool + cached head · (write − read)
 * On first delivery (opt-in) the result is new in this request: saving and carry gain this turn (at the write
 * rate when cached), and there is no cached suffix to invalidate. On a cold cache (the session was idle past
 * its TTL) the whole prompt is written anew this turn whatever we do: the same holds for a settled result
 * (this turn's write of T becomes a write of S), and the recall tool's declaration rewrites nothing cached.
 * A prompt shorter than the model's minimum cacheable length is not cached at all: when stubbing the result
 * would bring a caching client's prompt below it, the remaining context is billed at input instead of read
 * until the prompt grows past the minimum again (at the rate it has grown so far, `prompt_growth_tokens`;
 * the whole horizon when that is unknown), and is then written anew once; that is counted with the
 * invalidation (what the change does to the cache).
 * where r_ctx is the cache read rate when the client caches and the input rate when it does not (a recall
 * hop re-reads the whole context; priced at the read rate, it would undercharge a client that sets no
 * breakpoints).
 */
import { type ModelPrice, ratesFor, resolveModel, usd } from "./pricing.ts";
import type { GateResult } from "./types.ts";

export interface GateInput {
  /** Model id as sent (dated ids and aliases resolve) or a price-table entry. */
  model: string | ModelPrice | null | undefined;
  result_tokens: number;
  stub_tokens: number;
  horizon: number;
  /** Probability of a recall (the configured prior), or a learned expected number of recall hops (≤ horizon). */
  recall_probability: number;
  /** The result sits before the request's last cache breakpoint. */
  cached_side: boolean;
  /** Tokens from the result to that breakpoint (cached side only). */
  tokens_to_breakpoint?: number;
  cache_ttl?: "5m" | "1h";
  /** Prompt tokens of the request (what a recall hop re-reads). */
  context_tokens: number;
  /** Whether the client caches at all (any breakpoint, or automatic caching). Defaults to `cached_side`. */
  client_caches?: boolean;
  /** Tokens a recall brings back; defaults to min(T, RECALL_TOKENS_DEFAULT). */
  recall_tokens?: number;
  /** Output tokens of the call that asks for the recall. */
  recall_output_tokens?: number;
  /**
   * The recall tool is not declared yet and firing would add it (lazy declaration): its tokens ride in every
   * later request, and changing `tools` rewrites the cached prompt ahead of the result.
   */
  tool_declaration?: { tool_tokens: number; prefix_tokens: number };
  /**
   * First delivery (opt-in): the result arrives in this very request, so stubbing it saves this turn too —
   * its cache write on a caching client (then H turns of reads), H+1 turns of input otherwise — and nothing
   * after it is cached yet to invalidate.
   */
  first_delivery?: boolean;
  /**
   * How many tokens the prompt grows per call, as it has grown so far in the session (0 or absent:
   * unknown). A stub that brings the prompt below the model's minimum cacheable length uncaches it only
   * until the prompt has grown past the minimum again.
   */
  prompt_growth_tokens?: number;
  /**
   * The provider's cache for the session has lapsed (idle past its TTL, see cold.ts): this turn writes the
   * whole prompt anew, so rewriting earlier bytes costs nothing extra and this turn's write shrinks too.
   */
  cache_cold?: boolean;
  /**
   * A robustness margin: fire only where the net is more than this share of the gross saving (0 or absent:
   * any positive net), so a decision that pays only if its priors hold exactly is not taken.
   */
  min_net_share?: number;
}

/**
 * What one recall typically brings back: a few query windows or a slice of a few thousand chars. The 50,000
 * char cap (~15K tokens) is the worst case; pricing every hop at the cap made the gate decline offloads that
 * the replay shows paying off (query answers there average well under 1K tokens).
 */
export const RECALL_TOKENS_DEFAULT = 2_000;
export const RECALL_OUTPUT_TOKENS_DEFAULT = 100;

/** The prices a gate input names: a price row as given, or a model's name looked up (null: unpriced). */
export function gatePrice(model: GateInput["model"]): ModelPrice | null {
  return typeof model === "object" && model !== null ? model : resolveModel(model);
}

/**
 * Why a model cannot be priced, and the config key that fixes it: said by the gate's reason, the anchor's and the
 * turn's report, so an unpriced model never just quietly leaves offload off.
 */
export function unpricedModel(model: string | null | undefined): string {
  const which =
    typeof model === "string" && model !== ""
      ? `unknown model ${JSON.stringify(model)}`
      : "the request names no model";
  return `${which} (no price): set the config's tool_result_pricing_model to a model in the price table (e.g. "claude-sonnet-4-6") to price it`;
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

function round(x: number): number {
  return Math.round(x * 1e9) / 1e9;
}

/**
 * What a stub that brings a caching client's prompt below the model's minimum cacheable length costs: the
 * context billed at input, not read, on each call until the prompt has grown past the minimum again (at
 * `prompt_growth_tokens` a call), then written anew once; input over the whole horizon when the growth
 * is unknown.
 */
function uncachedFor(
  input: GateInput,
  minimum: number,
  H: number,
  rates: { input: number; cache_read: number },
  write: number,
): number {
  const growth = Math.max(0, input.prompt_growth_tokens ?? 0);
  const calls = growth > 0 ? Math.min(H, Math.ceil((minimum - input.context_tokens) / growth)) : H;
  return (
    usd(calls * input.context_tokens, rates.input - rates.cache_read) +
    (calls < H ? usd(input.context_tokens, write - rates.cache_read) : 0)
  );
}

/**
 * Headroom over the model's minimum cacheable length for a stub sized to keep the prompt cacheable: the
 * prompt's tokens are an estimate (chars per token, calibrated once measured), and a prompt one token
 * short of the minimum is not cached at all, so a padding sized exactly would be lost to any estimate
 * that runs high; 5% covers the spread of the estimate against the provider's count (either way: a
 * prompt with the result estimated up to 5% under the minimum is taken to be cached, `uncachesPrompt`).
 */
export const CACHEABLE_MARGIN = 0.05;

/**
 * At most this share of the result may a stub sized to keep the prompt cacheable take: past it the
 * "stub" is most of the result, and keeping the result whole is the honest alternative (the gate prices it).
 */
export const CACHEABLE_STUB_MAX_SHARE = 0.5;

/**
 * The stub size (in the gate's tokens) that keeps a caching client's prompt cacheable, where stubbing
 * the result as priced would bring the prompt below the model's minimum cacheable length while the
 * prompt with the result is above it: the prompt as sent reaches the minimum (plus CACHEABLE_MARGIN).
 * null when the prompt stays cacheable (or is not cached) either way, or when such a stub would exceed
 * CACHEABLE_STUB_MAX_SHARE of the result. Pure; price the stub at that size with `offloadGate` (its
 * preview raised) and keep whichever of the two nets more.
 */
export function cacheableStubTokens(input: GateInput): number | null {
  const price = gatePrice(input.model);
  if (price === null) return null;
  const T = Math.max(0, input.result_tokens);
  const S = Math.max(0, input.stub_tokens);
  if (!uncachesPrompt(input, price, T, S)) return null;
  const stub =
    S + Math.ceil(price.min_cacheable_tokens * (1 + CACHEABLE_MARGIN)) - input.context_tokens;
  return stub <= T * CACHEABLE_STUB_MAX_SHARE ? stub : null;
}

/**
 * Whether a stub of `S` tokens in place of a result of `T` brings a caching client's prompt below the
 * model's minimum cacheable length (`context_tokens` is the prompt with the stub): cached with the result,
 * not with the stub. The prompt with the result counts as cached from CACHEABLE_MARGIN under the minimum:
 * its tokens are an estimate, and one that runs a few percent low would otherwise call a cached prompt
 * uncacheable and price the stub as costing nothing there, when it uncaches the prompt for every call
 * until it has grown past the minimum again (the safe side: the loss is priced, the gate may still fire).
 */
function uncachesPrompt(input: GateInput, price: ModelPrice, T: number, S: number): boolean {
  const min = price.min_cacheable_tokens;
  return (
    (input.client_caches ?? input.cached_side) &&
    input.context_tokens - S + T >= min * (1 - CACHEABLE_MARGIN) &&
    input.context_tokens < min
  );
}

/**
 * The net-saving gate: whether replacing a result of `result_tokens` by a stub of `stub_tokens`
 * pays off over the horizon at the model's prices, against the prompt cache it would invalidate and
 * the recall hops it may cost. Pure; the answer carries its breakdown in dollars.
 *
 * @example
 * const verdict = offloadGate({
 *   model: "claude-sonnet-4-6", result_tokens: 40_000, stub_tokens: 300, horizon: 5,
 *   recall_probability: 0.5, cached_side: false, context_tokens: 60_000,
 * });
 * if (verdict.fire) console.log(`saves ≈ $${verdict.net_usd}`);
 */
export function offloadGate(input: GateInput): GateResult {
  const price = gatePrice(input.model);
  const T = Math.max(0, input.result_tokens);
  const S = Math.max(0, input.stub_tokens);
  const H = Math.max(0, input.horizon);
  // p is the expected number of recall hops per offload: a probability for the configured prior, possibly above 1
  // when learned (a result recalled several times), at most one hop per turn of the horizon.
  const p = Math.min(Math.max(1, H), Math.max(0, input.recall_probability));
  const ttl = input.cache_ttl ?? "5m";
  const toBreakpoint = input.cached_side ? Math.max(0, input.tokens_to_breakpoint ?? 0) : 0;
  const recallTokens = Math.max(0, input.recall_tokens ?? Math.min(T, RECALL_TOKENS_DEFAULT));
  const recallOutput = Math.max(0, input.recall_output_tokens ?? RECALL_OUTPUT_TOKENS_DEFAULT);
  const toolTokens = Math.max(0, input.tool_declaration?.tool_tokens ?? 0);
  const toolPrefix = Math.max(0, input.tool_declaration?.prefix_tokens ?? 0);
  const inputs = {
    result_tokens: T,
    stub_tokens: S,
    horizon: H,
    recall_probability: p,
    cached_side: input.cached_side,
    tokens_to_breakpoint: toBreakpoint,
    cache_ttl: ttl,
    context_tokens: input.context_tokens,
    recall_tokens: recallTokens,
    recall_output_tokens: recallOutput,
    tool_tokens: toolTokens,
    tool_prefix_tokens: toolPrefix,
    first_delivery: input.first_delivery === true,
    cache_cold: input.cache_cold === true,
    ...(input.prompt_growth_tokens === undefined
      ? {}
      : { prompt_growth_tokens: Math.max(0, input.prompt_growth_tokens) }),
  };
  if (price === null) {
    return {
      fire: false,
      net_usd: 0,
      reprefill_saving_usd: 0,
      stub_carry_cost_usd: 0,
      invalidation_cost_usd: 0,
      expected_recall_hop_cost_usd: 0,
      tool_declaration_cost_usd: 0,
      reason: `never offloads: ${unpricedModel(typeof input.model === "string" ? input.model : null)}`,
      model: null,
      inputs,
    };
  }
  const rates = ratesFor(price, input.context_tokens);
  const r = input.cached_side ? rates.cache_read : rates.input;
  const write = ttl === "1h" ? rates.cache_write_1h : rates.cache_write_5m;
  const contextRate = (input.client_caches ?? input.cached_side) ? rates.cache_read : rates.input;

  const first = input.first_delivery === true;
  const cold = input.cache_cold === true && input.cached_side;
  // Both price this turn's write: the result is new in the cached prompt, or the cached prompt is gone.
  const written = first || cold;
  const saving = written
    ? input.cached_side
      ? usd(T, write) + usd(H * T, r)
      : usd((H + 1) * T, r)
    : usd(H * T, r);
  const carry = written
    ? input.cached_side
      ? usd(S, write) + usd(H * S, r)
      : usd((H + 1) * S, r)
    : usd(H * S, r);
  const caches = input.client_caches ?? input.cached_side;
  const belowMinimum = uncachesPrompt(input, price, T, S)
    ? uncachedFor(input, price.min_cacheable_tokens, H, rates, write)
    : 0;
  const invalidation =
    (input.cached_side && !written ? usd(toBreakpoint, write - rates.cache_read) : 0) +
    belowMinimum;
  const recall =
    p *
    (usd(input.context_tokens, contextRate) +
      usd(recallTokens, rates.input) +
      usd(recallOutput, rates.output));
  const declaration =
    usd(H * toolTokens, caches ? rates.cache_read : rates.input) +
    (caches && input.cache_cold !== true ? usd(toolPrefix, write - rates.cache_read) : 0);
  const net = saving - (carry + invalidation + recall + declaration);
  // The robustness margin: a thin net pays only if the priors hold exactly.
  const share = Math.max(0, input.min_net_share ?? 0);
  const fire = net > 0 && net > share * saving;

  const costs = [
    ["the stub's own carry cost", carry],
    ["invalidating the cached prefix", invalidation],
    ["the expected recall hop", recall],
    ["declaring the recall tool", declaration],
  ] as const;
  const biggest = costs.reduce((a, b) => (b[1] > a[1] ? b : a));
  const reason = fire
    ? `saves $${net.toFixed(4)} over ${written ? `this and ${round1(H)} more` : round1(H)} turns (${input.cached_side ? (cold ? "cold cache" : "cached") : "uncached"} side, p=${round2(p)})`
    : T <= S
      ? "the stub is not smaller than the result"
      : net > 0
        ? `declined: saves $${net.toFixed(4)}, not more than ${share} of the $${saving.toFixed(4)} re-prefill saving (tool_result_offload_min_net_share)`
        : `declined: ${biggest[0]} outweighs the $${saving.toFixed(4)} re-prefill saving`;
  return {
    fire,
    net_usd: round(net),
    reprefill_saving_usd: round(saving),
    stub_carry_cost_usd: round(carry),
    invalidation_cost_usd: round(invalidation),
    expected_recall_hop_cost_usd: round(recall),
    tool_declaration_cost_usd: round(declaration),
    reason,
    model: price.id,
    inputs,
  };
}
