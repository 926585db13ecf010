/**
 * Type-level test, compiled by `npm run typecheck` (tsconfig.node.json), never run: `compact({ config })` is
 * checked against the config schema's fields, so a misspelt switch fails to compile instead of leaving a feature
 * silently off, whether the config is written inline or built in a variable first. Values the schema checks at
 * run time anyway (a variable's widened string, a parsed record) still compile.
 */
import {
  compact,
  MemoryStore,
  type OffloadConfig,
  type OffloadConfigLike,
  resolveConfig,
} from "../../src/lib.ts";

const store = new MemoryStore();
const base = { request: "{}", session: "s", store };

export async function checked(): Promise<void> {
  await compact({ ...base, config: { tool_result_compaction_enabled: true } });
  await compact({ ...base, config: { tool_result_medium_tier: "cache_anchor", keep_last_n: 2 } });
  await compact({ ...base, config: { tool_result_pricing_model: null } });
  await compact(base);

  // A variable: its "gated" widens to string, which passes (the schema checks it at run time).
  const variable = { tool_result_compaction_enabled: true, tool_result_first_delivery: "gated" };
  await compact({ ...base, config: variable });
  const annotated: OffloadConfigLike = { tool_result_offload_enabled: true };
  await compact({ ...base, config: annotated });
  const resolved: OffloadConfig = resolveConfig({ tool_result_compaction_enabled: true });
  await compact({ ...base, config: resolved });
  const parsed = JSON.parse('{"tool_result_compaction_enabled":true}') as Record<string, unknown>;
  await compact({ ...base, config: parsed });

  // @ts-expect-error: a misspelt field, inline.
  await compact({ ...base, config: { tool_result_ofload_enabled: true } });
  const typo = { tool_result_compaction_enabled: true, tool_result_ofload_enabled: true };
  // @ts-expect-error: a misspelt field in a variable (no excess-property check there).
  await compact({ ...base, config: typo });
  // @ts-expect-error: a value of the wrong type.
  await compact({ ...base, config: { tool_result_compaction_enabled: "yes" } });
  // @ts-expect-error: a string literal that is not one of the field's values.
  await compact({ ...base, config: { tool_result_medium_tier: "cache-anchor" } });
  const annotatedTypo: OffloadConfigLike = {
    // @ts-expect-error: an annotated config is checked where it is written.
    tool_result_offload_enable: true,
  };
  void annotatedTypo;
}
