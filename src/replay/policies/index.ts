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
  "edge-offload": { config: ON, description: "the product's defaults with offload on (gate on)" },
  "edge-offload+anchor": {
    config: { ...ON, tool_result_medium_tier: "cache_anchor" },
    description: "plus the advancing cache anchor",
  },
  "edge-offload+adaptive": {
    config: { ...ON, tool_result_offload_adaptive: true },
    description: "plus the learning gate",
  },
  "edge-offload+anchor+adaptive": {
    config: { ...ON, tool_result_medium_tier: "cache_anchor", tool_result_offload_adaptive: true },
    description: "anchor and learning gate",
  },
  "edge-offload+first-delivery": {
    config: { ...ON, tool_result_first_delivery: "gated" },
    description: "plus gated offload on first delivery",
  },
  "edge-offload+medium-first-delivery": {
    config: {
      ...ON,
      tool_result_first_delivery: "gated",
      tool_result_first_delivery_min_chars: 8001,
    },
    description: "gated offload on first delivery of medium and large results",
  },
  "edge-offload+all": {
    config: {
      ...ON,
      tool_result_medium_tier: "cache_anchor",
      tool_result_offload_adaptive: true,
      tool_result_first_delivery: "gated",
    },
    description: "anchor, learning gate and first-delivery offload",
  },
};

export function policyByName(name: string): Policy | null {
  if (name === "none") return nonePolicy;
  if (name === "clear-tool-uses") return clearToolUses();
  if (name === "prune-messages") return pruneMessagesPolicy();
  const mask = /^mask-last-(\d+)$/.exec(name);
  if (mask) return maskLastN(Number(mask[1]));
  const ev = /^evict-(\d+)k$/.exec(name);
  if (ev) return evict(Number(ev[1]) * 1000);
  // "<row>/no-cold": the same row with the cold-cache moment hidden from the gate (to measure it).
  const [row, variant] = name.split("/", 2) as [string, string | undefined];
  const ours = Object.hasOwn(EDGE_OFFLOAD_CONFIGS, row) ? EDGE_OFFLOAD_CONFIGS[row] : undefined;
  if (ours !== undefined && variant === undefined)
    return edgeOffload(name, ours.config, ours.description);
  if (ours !== undefined && variant === "no-cold")
    return edgeOffload(name, ours.config, `${ours.description}, cold cache not used`, {
      coldCache: false,
    });
  return null;
}

export const DEFAULT_POLICIES = [
  "none",
  ...Object.keys(EDGE_OFFLOAD_CONFIGS),
  "clear-tool-uses",
  "mask-last-10",
  "evict-20k",
  "prune-messages",
];
