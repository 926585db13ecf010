/** The policies a replay can compare, by name. */
import type { Policy } from "../policy.ts";
import { clearToolUses } from "./clear-tool-uses.ts";
import { edgeOffload } from "./edge-offload.ts";
import { evict } from "./evict.ts";
import { maskLastN } from "./mask-last-n.ts";
import { nonePolicy } from "./none.ts";
import { pruneMessagesPolicy } from "./prune-messages.ts";

const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };

/** edge-offload configurations with a replay row of their own (documented in the README). */
export const EDGE_OFFLOAD_CONFIGS: Record<
  string,
  { config: Record<string, unknown>; description: string }
> = {
  "edge-offload": {
    config: ON,
    description:
      "the product's defaults with offload on: the gate, first delivery of medium and large results, the breakpoint move, the learned horizon, the anchor within its risk bound",
  },
  "edge-offload+anchor": {
    config: { ...ON, tool_result_anchor_risk_share: null },
    description: "plus the anchor without its risk bound (from the first call where it pays)",
  },
  "edge-offload+adaptive": {
    config: { ...ON, tool_result_offload_adaptive: true },
    description: "plus the learning gate",
  },
  "edge-offload+all": {
    config: { ...ON, tool_result_anchor_risk_share: null, tool_result_offload_adaptive: true },
    description: "the unbounded anchor and the learning gate on top of the defaults",
  },
};

/**
 * A row's variants, `<row>/<variant>[/<variant>…]`: one switch of the defaults turned off, to measure what it
 * is worth (`edge-offload/full-delivery/no-move/fixed-horizon/no-anchor` is the defaults before issue 28).
 */
export const EDGE_OFFLOAD_VARIANTS: Record<
  string,
  { config?: Record<string, unknown>; coldCache?: false; description: string }
> = {
  "no-cold": { coldCache: false, description: "cold cache not used" },
  "no-move": { config: { tool_result_breakpoint_move: false }, description: "no breakpoint move" },
  "fixed-horizon": {
    config: { tool_result_offload_horizon_learned: false },
    description: "the configured horizon, not learned",
  },
  "full-delivery": {
    config: { tool_result_first_delivery: "full" },
    description: "every result sent in full once",
  },
  "no-anchor": {
    config: { tool_result_medium_tier: "off" },
    description: "no cache anchor",
  },
  "no-margin": {
    config: { tool_result_first_delivery_recall_margin: 0 },
    description: "first delivery without the recall margin",
  },
};

/**
 * A policy by the name the CLI's `--policies` takes (`none`, `edge-offload`, `mask-last-10`, `evict-20k`,
 * `edge-offload/no-move`…), or null for a name it does not know.
 */
export function policyByName(name: string): Policy | null {
  if (name === "none") return nonePolicy;
  if (name === "clear-tool-uses") return clearToolUses();
  if (name === "prune-messages") return pruneMessagesPolicy();
  const mask = /^mask-last-(\d+)$/.exec(name);
  if (mask) return maskLastN(Number(mask[1]));
  const ev = /^evict-(\d+)k$/.exec(name);
  if (ev) return evict(Number(ev[1]) * 1000);
  // "<row>/<variant>…": the same row with switches turned off (to measure them).
  const [row, ...variants] = name.split("/") as [string, ...string[]];
  const ours = Object.hasOwn(EDGE_OFFLOAD_CONFIGS, row) ? EDGE_OFFLOAD_CONFIGS[row] : undefined;
  if (ours === undefined) return null;
  let config = ours.config;
  let description = ours.description;
  let coldCache = true;
  for (const v of variants) {
    const variant = Object.hasOwn(EDGE_OFFLOAD_VARIANTS, v) ? EDGE_OFFLOAD_VARIANTS[v] : undefined;
    if (variant === undefined) return null;
    config = { ...config, ...variant.config };
    if (variant.coldCache === false) coldCache = false;
    description = `${description}, ${variant.description}`;
  }
  return edgeOffload(name, config, description, coldCache ? {} : { coldCache: false });
}

export const DEFAULT_POLICIES = [
  "none",
  ...Object.keys(EDGE_OFFLOAD_CONFIGS),
  "clear-tool-uses",
  "mask-last-10",
  "evict-20k",
  "prune-messages",
];
