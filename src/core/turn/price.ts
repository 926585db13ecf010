/**
 * What the net-saving gate is asked about a result: where it sits against the cache breakpoints,
 * the context a recall hop would re-read, the horizon and recall probability (configured, or
 * learned by the adaptive gate), and what declaring the recall tool would cost when this offload
 * would be the one to declare it.
 */

import { learnedHorizon, learnedRecallProbability, unseenRecallProbability } from "../adaptive.ts";
import { ratioOf, resultRatio } from "../calibration.ts";
import { cacheCold } from "../cold.ts";
import type { ToolResultSite } from "../formats/types.ts";
import type { GateInput } from "../gate.ts";
import { expectedRemainingCalls } from "../horizon.ts";
import { REQUEST_CHARS_PER_TOKEN } from "../tokens.ts";
import { rawLength, recallToolTokens, sentOffset, type TurnContext } from "./context.ts";
import { inlineDeclares, inlineDeclaresFresh } from "./declare.ts";
import { configOf } from "./tool-rules.ts";

export function priceOffload(
  ctx: TurnContext,
  site: ToolResultSite,
  estimatedResult: number,
  estimatedStub: number,
  firstDelivery: boolean,
): GateInput {
  const { analysis } = ctx;
  // Calibrated (once enough turns were measured): the provider's tokens, not the estimate's. The
  // result at its kind's ratio, everything else at the request's.
  const k = ratioOf(ctx.calibration, "request");
  const scale = (t: number) => Math.round(t * k);
  const resultTokens = Math.round(
    estimatedResult *
      resultRatio(
        ctx.calibration,
        ctx.kinds?.get(site.tool_use_id) ?? "request",
        ctx.whitespace?.get(site.tool_use_id),
      ),
  );
  const stubTokens = scale(estimatedStub);
  const side = cacheSide(ctx, site, stubTokens, k);
  const contextTokens =
    scale(
      Math.round(
        (sentOffset(ctx, analysis.prompt_chars) - (ctx.takenThisTurn ?? 0) - rawLength(site)) /
          REQUEST_CHARS_PER_TOKEN,
      ),
    ) + stubTokens;
  const lastBp = analysis.breakpoints[analysis.breakpoints.length - 1];
  const declaration = ctx.toolDeclared
    ? undefined
    : {
        tool_tokens: scale(recallToolTokens(ctx.format, ctx.config.tool_result_recall_mode)),
        // Changing `tools` rewrites the cached prompt ahead of the result too (after it is in
        // invalidation); declared inline, after the stub, it rewrites nothing (declare.ts).
        prefix_tokens:
          lastBp === undefined || (site.settled ? inlineDeclares(ctx) : inlineDeclaresFresh(ctx))
            ? 0
            : scale(
                Math.round(
                  sentOffset(ctx, Math.min(site.position, lastBp.position)) /
                    REQUEST_CHARS_PER_TOKEN,
                ),
              ),
      };
  const { horizon, p } = priors(ctx, site, firstDelivery);
  return {
    model: ctx.price ?? ctx.model,
    result_tokens: resultTokens,
    stub_tokens: stubTokens,
    horizon,
    recall_probability: p,
    first_delivery: firstDelivery,
    ...side,
    context_tokens: contextTokens,
    client_caches: analysis.client_caches,
    ...(declaration === undefined ? {} : { tool_declaration: declaration }),
    prompt_growth_tokens: scale(promptGrowth(ctx, site)),
    cache_cold: cacheCold(ctx.format, analysis.breakpoints, ctx.loaded.idle_seconds),
    min_net_share: ctx.config.tool_result_offload_min_net_share,
  };
}

/**
 * The prompt's growth per call as sent so far (estimated tokens): from where the first message of tool
 * results starts to where the message of `site` starts, over the messages of results before it (a call
 * adds one, with the model's answer). 0 (unknown) for the first such message: the result being priced
 * says nothing of how later calls grow, whatever is decided for it.
 */
function promptGrowth(ctx: TurnContext, site: ToolResultSite): number {
  const { sites } = ctx.analysis;
  const first = sites[0]!;
  let messages = 0;
  let last = -1;
  for (const s of sites) {
    if (s.message_index === site.message_index)
      return messages === 0
        ? 0
        : Math.round(
            (sentOffset(ctx, s.position) - sentOffset(ctx, first.position)) /
              REQUEST_CHARS_PER_TOKEN /
              messages,
          );
    if (s.message_index !== last) {
      messages++;
      last = s.message_index;
    }
  }
  return 0;
}

/** Where the result sits against the cache breakpoints. */
function cacheSide(
  ctx: TurnContext,
  site: ToolResultSite,
  stubTokens: number,
  k: number,
): { cached_side: boolean; tokens_to_breakpoint: number; cache_ttl: "5m" | "1h" } {
  const bps = ctx.analysis.breakpoints;
  const last = bps[bps.length - 1];
  if (last === undefined || site.position >= last.position)
    return { cached_side: false, tokens_to_breakpoint: 0, cache_ttl: "5m" };
  const after = site.position + rawLength(site);
  const next = bps.find((b) => b.position > site.position) ?? last;
  return {
    cached_side: true,
    tokens_to_breakpoint:
      Math.max(
        0,
        Math.round(
          ((sentOffset(ctx, last.position) - sentOffset(ctx, after)) / REQUEST_CHARS_PER_TOKEN) * k,
        ),
      ) + stubTokens,
    cache_ttl: next.ttl,
  };
}

/**
 * The turn's horizon: the expected calls the session still makes after this one, learned from the
 * tenant's observed session lengths where the store supplies them (horizon.ts), else the adaptive
 * gate's estimate from the session's own length (when on), else the configured prior.
 */
export function turnHorizon(ctx: TurnContext): number {
  const { config, loaded, analysis } = ctx;
  const prior = config.tool_result_offload_horizon_default;
  if (config.tool_result_offload_horizon_learned && loaded.session_lengths !== undefined)
    return expectedRemainingCalls(loaded.session_lengths, analysis.assistant_turns + 1, prior);
  if (config.tool_result_offload_adaptive) return learnedHorizon(analysis.assistant_turns, prior);
  return prior;
}

/**
 * Horizon and recall probability for a result: the config's (or its tool rule's) prior, or learned
 * (adaptive).
 */
function priors(
  ctx: TurnContext,
  site: ToolResultSite,
  firstDelivery: boolean,
): { horizon: number; p: number } {
  const { config, loaded } = ctx;
  const tool = site.tool_name;
  const horizon = turnHorizon(ctx);
  let p = configOf(ctx, site).tool_result_offload_recall_probability;
  if (config.tool_result_offload_adaptive)
    p = learnedRecallProbability(
      p,
      horizon,
      loaded.tool_stats?.[tool],
      loaded.session_tool_stats?.[tool],
    );
  // Unseen: more likely recalled, and some results many times over (a file being edited): the saving
  // must also cover the margin's hops.
  return {
    horizon,
    p: firstDelivery
      ? unseenRecallProbability(p) + config.tool_result_first_delivery_recall_margin
      : p,
  };
}
