/**
 * The gate that learns (opt-in, `tool_result_offload_adaptive`): the recall probability becomes the
 * observed rate of recalls per offloaded result, and the horizon an estimate of the remaining
 * turns. Pure functions of the counts the store keeps, so a decision stays deterministic for a
 * given state.
 *
 * Recall rate, per tool name: a Beta prior centred on the configured p with the weight of
 * PRIOR_WEIGHT offloads, updated first by the tenant's counts for that tool (all its sessions), and
 * that posterior in turn by this session's own counts — so a session's behaviour counts for more
 * than the tenant average. A result can be recalled more than once, so the "probability" is an
 * expected number of recall hops per offload, capped at the horizon (at most one hop per turn).
 *
 * Horizon: a session that has run t turns is expected to run about as many again (the usual
 * estimate when nothing else is known), never less than the configured default (a conservative
 * prior, which the learned recall rate corrects) and at most MAX_HORIZON.
 */
import type { ToolStats } from "./ports.ts";

export const PRIOR_WEIGHT = 4;

function update(prior: number, weight: number, s: ToolStats | undefined): number {
  if (s === undefined || s.offloaded <= 0) return prior;
  return (prior * weight + s.recalls) / (weight + s.offloaded);
}

export function learnedRecallProbability(
  prior: number,
  horizon: number,
  tenant: ToolStats | undefined,
  session: ToolStats | undefined,
): number {
  const p = update(update(prior, PRIOR_WEIGHT, tenant), PRIOR_WEIGHT, session);
  return Math.min(Math.max(p, 0), Math.max(1, horizon));
}

export const MAX_HORIZON = 200;

export function learnedHorizon(turnsSoFar: number, floor: number): number {
  return Math.min(MAX_HORIZON, Math.max(floor, turnsSoFar));
}

/**
 * The recall prior for a result the model has not seen (first delivery): halfway from p to
 * certainty.
 */
export function unseenRecallProbability(p: number): number {
  return p + (1 - Math.min(p, 1)) / 2;
}
