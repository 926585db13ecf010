/**
 * The session config layers this isolate saw last, as a guess: a turn reads its session's config
 * and records in one round trip, but to name the records it must parse the request first, which
 * only pays when compaction will be on. The guess (the deployment's and the request's layers over
 * the last layer seen for the session) decides whether to parse first; the session's answer always
 * decides what happens. A wrong guess costs one more round trip, or a parse for nothing.
 */
import { type OffloadConfigPatch, resolveConfig } from "../config.ts";
import type { SessionRef } from "../core/types.ts";

/** Sessions remembered per isolate (the oldest go first). */
const LIMIT = 4096;
const layers = new Map<string, OffloadConfigPatch>();

const keyOf = (ref: SessionRef) => `${ref.tenant}/${ref.session}`;

export function hintedLayer(ref: SessionRef): OffloadConfigPatch {
  return layers.get(keyOf(ref)) ?? {};
}

export function rememberLayer(ref: SessionRef, layer: OffloadConfigPatch): void {
  const key = keyOf(ref);
  layers.delete(key);
  if (Object.keys(layer).length === 0) return;
  layers.set(key, layer);
  if (layers.size > LIMIT) layers.delete(layers.keys().next().value!);
}

/** What a turn needs to know before it asks its session: will it compact, will it learn. */
export interface TurnGuess {
  enabled: boolean;
  adaptive: boolean;
}

let defaults: TurnGuess | undefined;

/**
 * The guess from the layers, lowest first (deployment, session as last seen, request), without
 * validating them again: each layer was validated when it was read.
 */
export function guessOf(...layers: OffloadConfigPatch[]): TurnGuess {
  defaults ??= (() => {
    const d = resolveConfig({});
    return {
      enabled: d.tool_result_compaction_enabled,
      adaptive: d.tool_result_offload_adaptive,
    };
  })();
  const out = { ...defaults };
  for (const layer of layers) {
    if (layer.tool_result_compaction_enabled !== undefined)
      out.enabled = layer.tool_result_compaction_enabled;
    if (layer.tool_result_offload_adaptive !== undefined)
      out.adaptive = layer.tool_result_offload_adaptive;
  }
  return out;
}
