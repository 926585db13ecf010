import { describe, expect, it } from "vitest";
import {
  DEFAULT_CONFIG,
  OffloadConfigSchema,
  parseConfigPatch,
  resolveConfig,
} from "../../src/config.ts";

describe("config", () => {
  it("has the documented defaults", () => {
    expect(DEFAULT_CONFIG).toMatchObject({
      tool_result_compaction_enabled: false,
      tool_result_offload_enabled: false,
      tool_result_compaction_size_chars: 8000,
      tool_result_large_offload_threshold_chars: 60_000,
      tool_result_compaction_keep_last_n: 1,
      tool_result_offload_horizon_default: 5,
      tool_result_offload_recall_probability: 0.5,
      tool_result_recall_mode: "both",
    });
    expect(OffloadConfigSchema.parse({})).toEqual(DEFAULT_CONFIG);
  });

  it("accepts the keep_last_n alias", () => {
    expect(resolveConfig({ keep_last_n: 4 }).tool_result_compaction_keep_last_n).toBe(4);
    expect(() => resolveConfig({ keep_last_n: 4, tool_result_compaction_keep_last_n: 2 })).toThrow(
      /either/,
    );
  });

  it("layers left to right, validating each layer on its own", () => {
    const cfg = resolveConfig(
      { tool_result_compaction_enabled: true, tool_result_offload_horizon_default: 9 },
      { tool_result_offload_horizon_default: 3 },
      {},
    );
    expect(cfg.tool_result_compaction_enabled).toBe(true);
    expect(cfg.tool_result_offload_horizon_default).toBe(3);
    expect(() => resolveConfig({}, { tool_result_offload_horizon_default: -1 })).toThrow(
      expect.objectContaining({ path: "config[1].tool_result_offload_horizon_default" }),
    );
  });

  it("rejects unknown fields, wrong types and out-of-range values with the field's path", () => {
    const bad: [unknown, string][] = [
      [{ tool_result_compaction_enbled: true }, "config.tool_result_compaction_enbled"],
      [{ tool_result_compaction_enabled: "true" }, "config.tool_result_compaction_enabled"],
      [
        { tool_result_offload_recall_probability: 1.5 },
        "config.tool_result_offload_recall_probability",
      ],
      [{ tool_result_compaction_size_chars: 1.5 }, "config.tool_result_compaction_size_chars"],
      [{ tool_result_recall_mode: "semantic" }, "config.tool_result_recall_mode"],
      [{ tool_result_recall_max_chars: 60_000 }, "config.tool_result_recall_max_chars"],
      [[], "config"],
      ["{}", "config"],
    ];
    for (const [input, path] of bad) {
      expect(() => parseConfigPatch(input), JSON.stringify(input)).toThrow(
        expect.objectContaining({ type: "invalid_config", path }),
      );
    }
  });
});
