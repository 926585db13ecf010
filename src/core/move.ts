/**
 * The breakpoint move: never cache what is about to be stubbed. A client that caches puts its breakpoint at
 * the end of every prompt, so the call that delivers a large result writes it to the cache (1.25× input, 2×
 * under a 1-hour TTL) for reads that never come when the next call replaces it by a stub. Moving that
 * breakpoint to just before the result writes only what the next call reads: the result is billed once at
 * input instead. The move binds the stub: a result the cache did not keep costs a write on the next call if
 * it is still sent in full, so the decision taken here is "offload once settled", recorded on arrival.
 *
 * Priced against keeping the result in full (written now, read on each later call), over the horizon H of
 * calls after this one, with T the result's tokens, S the stub's, w/i/r the write, input and read rates:
 *   stub once settled (the gate, as priced on the next call with nothing after the result cached):
 *     H·(T − S)·r − recall hops − declaration
 *   the move itself: T·(w − i) − S·(w − r) − (rest + low)·(i − r)
 *     (the result billed at input now, not written; the stub written, not read, on the next call; what follows
 *     the result in this message, `rest`, billed at input now and written next call instead of read; and when
 *     the prompt before the moved breakpoint is shorter than the model's minimum cacheable length, `low`,
 *     that prefix too: the moved breakpoint caches nothing this call, so the next call writes what it would
 *     have read)
 *   with q the chance the model does not call a tool next (the result stays in the hot window, sent in full
 *   and written next call after all): net = (1 − q)·(stub + move) − q·(T + rest)·(i − r)
 * It fires when the net is positive and the move on its own saves (a result the gate would stub anyway, but
 * whose write is cheaper than input, is not moved: with OpenAI's models before GPT-5.6 a write costs input).
 * Pure, like the gate: the same input gives the same answer, with its breakdown in dollars.
 */
import { type GateInput, gatePrice, offloadGate } from "./gate.ts";
import { ratesFor, usd } from "./pricing.ts";
import type { GateResult } from "./types.ts";

export interface MoveInput {
  /** The result as the gate prices it once settled; the side and cold-cache fields are set here. */
  gate: GateInput;
  /** Tokens after the result up to the client's breakpoint that stay in full (billed now, written next call). */
  rest_tokens: number;
  /** The chance the result is still in the hot window on the next call (the model answers without a tool). */
  hot_probability: number;
  /** Tokens before the moved breakpoint (the prompt it would cache). */
  prefix_tokens?: number;
}

export interface MoveResult {
  fire: boolean;
  net_usd: number;
  /** What the move itself saves this call and the next, before the hot-window risk. */
  move_saving_usd: number;
  /** The expected cost of a result still in full on the next call (written then after all). */
  hot_risk_usd: number;
  /** The stub once settled, as the gate prices it with nothing after the result cached. */
  gate: GateResult;
  reason: string;
}

/**
 * The chance the model answers a fresh result without calling a tool (the result then stays in the hot
 * window, and may stay there: a chat that looked at one dump). Certain until the session has shown the model
 * answering a result with another tool call at least once; then a uniform prior updated by the history.
 */
export function hotProbability(chain: { answered: number; chained: number } | undefined): number {
  const answered = Math.max(0, chain?.answered ?? 0);
  const chained = Math.min(answered, Math.max(0, chain?.chained ?? 0));
  if (chained === 0) return 1;
  return 1 - (chained + 1) / (answered + 2);
}

function round(x: number): number {
  return Math.round(x * 1e9) / 1e9;
}

export function moveGate(input: MoveInput): MoveResult {
  const gate = offloadGate({
    ...input.gate,
    cached_side: true,
    tokens_to_breakpoint: 0,
    first_delivery: false,
    cache_cold: false,
  });
  const price = gatePrice(input.gate.model);
  const q = Math.min(1, Math.max(0, input.hot_probability));
  if (price === null)
    return {
      fire: false,
      net_usd: 0,
      move_saving_usd: 0,
      hot_risk_usd: 0,
      gate,
      reason: gate.reason,
    };
  const rates = ratesFor(price, input.gate.context_tokens);
  const write = input.gate.cache_ttl === "1h" ? rates.cache_write_1h : rates.cache_write_5m;
  const T = gate.inputs.result_tokens;
  const S = gate.inputs.stub_tokens;
  const rest = Math.max(0, input.rest_tokens);
  // A moved breakpoint below the minimum caches nothing: the prefix is written next call, not read.
  const prefix = Math.max(0, input.prefix_tokens ?? price.min_cacheable_tokens);
  const low = prefix < price.min_cacheable_tokens ? prefix : 0;
  const move =
    usd(T, write - rates.input) -
    usd(S, write - rates.cache_read) -
    usd(rest + low, rates.input - rates.cache_read);
  const hot = q * usd(T + rest, rates.input - rates.cache_read);
  const net = (1 - q) * (gate.net_usd + move) - hot;
  const margin =
    Math.max(0, input.gate.min_net_share ?? 0) * (1 - q) * (gate.reprefill_saving_usd + move);
  const fire = T > S && move > 0 && net > 0 && net > margin;
  const reason = fire
    ? `the cache breakpoint moved before it, offloaded once settled: saves $${net.toFixed(4)} (the move $${move.toFixed(4)}, the stub $${gate.net_usd.toFixed(4)})`
    : move <= 0
      ? "not moving the breakpoint: a cache write here costs no more than input"
      : net > 0 && T > S
        ? `not moving the breakpoint: $${net.toFixed(4)} expected, not more than tool_result_offload_min_net_share of the $${((1 - q) * (gate.reprefill_saving_usd + move)).toFixed(4)} it saves`
        : `not moving the breakpoint: $${net.toFixed(4)} expected (the stub $${gate.net_usd.toFixed(4)}, the move $${move.toFixed(4)}, a result still hot next call $${hot.toFixed(4)})`;
  return {
    fire,
    net_usd: round(net),
    move_saving_usd: round(move),
    hot_risk_usd: round(hot),
    gate,
    reason,
  };
}
