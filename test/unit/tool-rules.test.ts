/**
 * Per-tool rules (`tool_result_tool_rules`): matching (exact names and `*` globs, first match wins, linear
 * in hostile patterns), what each field does to a tool's results (never, floor, threshold, hot window,
 * recall prior, first delivery), the reason and `rule` every touched decision carries, the report's counts
 * per rule, stickiness, and the config's checks.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseConfigPatch, resolveConfig, TOOL_RULES_MAX } from "../../src/config.ts";
import { compact } from "../../src/core/compact.ts";
import { describeRule, matchesTool, ruleFor } from "../../src/core/turn/tool-rules.ts";
import { isOffloadError } from "../../src/errors.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { conversation, jsonBody, type Turn, textBody } from "../support/requests.ts";

const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };
const LARGE = jsonBody(80_000);

/** The same glob as a regular expression: the reference the matcher is checked against. */
function reference(pattern: string, name: string): boolean {
  const source = pattern
    .split("*")
    .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join("[\\s\\S]*");
  return new RegExp(`^${source}$`).test(name);
}

async function turn(
  turns: Turn[],
  config: Record<string, unknown>,
  session = "s",
  store?: MemoryStore,
) {
  return compact({
    request: conversation(turns, { model: "claude-opus-4-5" }),
    session,
    store: store ?? new MemoryStore(),
    config: { ...ON, ...config },
  });
}

describe("matching a tool name", () => {
  it("takes a name exactly, or a glob where * matches any run of characters", () => {
    expect(matchesTool("web_fetch", "web_fetch")).toBe(true);
    expect(matchesTool("web_fetch", "web_fetch2")).toBe(false);
    expect(matchesTool("web_*", "web_fetch")).toBe(true);
    expect(matchesTool("web_*", "web_")).toBe(true);
    expect(matchesTool("web_*", "my_web_fetch")).toBe(false);
    expect(matchesTool("*", "anything")).toBe(true);
    expect(matchesTool("mcp__*__search", "mcp__github__search")).toBe(true);
    expect(matchesTool("mcp__*__search", "mcp__search")).toBe(false);
    expect(matchesTool("a*a", "a")).toBe(false);
    expect(matchesTool("*a*b*", "xxbxxa")).toBe(false);
    // ? [ ] and the like are ordinary characters
    expect(matchesTool("get?", "get?")).toBe(true);
    expect(matchesTool("get?", "getx")).toBe(false);
  });

  it("agrees with a regular-expression reference on random globs", () => {
    const chars = fc.constantFrom("a", "b", "_", "*");
    fc.assert(
      fc.property(
        fc.string({ unit: chars, maxLength: 8 }).filter((p) => p.length > 0),
        fc.string({ unit: fc.constantFrom("a", "b", "_"), maxLength: 12 }),
        (pattern, name) => matchesTool(pattern, name) === reference(pattern, name),
      ),
      { numRuns: 2000 },
    );
  });

  it("first matching rule wins", () => {
    const rules = [{ tool: "web_fetch" }, { tool: "web_*", offload: "never" as const }];
    expect(ruleFor(rules, "web_fetch")).toBe(rules[0]);
    expect(ruleFor(rules, "web_search")).toBe(rules[1]);
    expect(ruleFor(rules, "bash")).toBeNull();
  });

  it("answers the patterns that make a backtracking matcher slow (timed in work-budgets.test.ts)", () => {
    expect(matchesTool(`*${"a*".repeat(120)}b`, "a".repeat(256))).toBe(false);
    expect(matchesTool(`*${"a".repeat(128)}b*`, "a".repeat(256))).toBe(false);
    expect(matchesTool(`*${"a".repeat(128)}b*`, `${"a".repeat(200)}b`)).toBe(true);
  });
});

describe("what a rule does to its tool's results", () => {
  it('offload "never": kept full, with the rule in the reason, and counted per rule', async () => {
    const out = await turn(
      [
        { id: "w1", name: "web_fetch", result: LARGE },
        { id: "b1", name: "bash", result: LARGE },
        { id: "b2", name: "bash", result: "ok" },
      ],
      { tool_result_tool_rules: [{ tool: "web_*", offload: "never" }] },
    );
    const [web, bash] = out.decisions;
    expect(web).toMatchObject({
      action: "kept",
      rule: "web_*",
      reason: "kept: tool rule `web_*` says never",
    });
    expect(bash).toMatchObject({ action: "offloaded" });
    expect(bash!.rule).toBeUndefined();
    expect(out.report.tool_rules).toEqual([
      {
        tool: "web_*",
        says: "tool rule `web_*`: offload never",
        results: 1,
        kept: 1,
        compacted: 0,
        offloaded: 0,
      },
    ]);
  });

  it('"never" holds on the size-only path, at first delivery and against a context-pressure batch', async () => {
    const sizeOnly = await turn(
      [
        { id: "w1", name: "web_fetch", result: LARGE },
        { id: "b1", name: "bash", result: "ok" },
      ],
      {
        tool_result_offload_enabled: false,
        tool_result_tool_rules: [{ tool: "web_fetch", offload: "never" }],
      },
    );
    expect(sizeOnly.decisions[0]).toMatchObject({ action: "kept", rule: "web_fetch" });
    // Fresh (hot) and large: first delivery would weigh it.
    const fresh = await turn([{ id: "w1", name: "web_fetch", result: LARGE }], {
      tool_result_compaction_keep_last_n: 0,
      tool_result_tool_rules: [{ tool: "web_fetch", offload: "never" }],
    });
    expect(fresh.decisions[0]).toMatchObject({
      action: "kept",
      reason: "kept: tool rule `web_fetch` says never",
    });
    const many = Array.from({ length: 6 }, (_, i) => ({
      id: `r${i}`,
      name: i % 2 === 0 ? "web_fetch" : "bash",
      result: textBody(11_000, `r${i}`),
    }));
    const pressed = await turn(many, {
      tool_result_first_delivery: "full",
      tool_result_context_window_tokens: 10_000,
      tool_result_tool_rules: [{ tool: "web_fetch", offload: "never" }],
    });
    expect(pressed.report.pressure?.offloaded).toBeGreaterThan(0);
    for (const d of pressed.decisions)
      if (d.tool_name === "web_fetch") expect(d.action, d.tool_use_id).toBe("kept");
  });

  it("a lower large threshold offloads a tool's medium results, and says which rule", async () => {
    const medium = jsonBody(30_000);
    const turns = [
      { id: "r1", name: "read_file", result: medium },
      { id: "g1", name: "grep", result: medium },
      { id: "b1", name: "bash", result: "ok" },
    ];
    const out = await turn(turns, {
      tool_result_tool_rules: [{ tool: "read_*", large_offload_threshold_chars: 20_000 }],
    });
    expect(out.decisions[0]).toMatchObject({ tier: "large", action: "offloaded", rule: "read_*" });
    expect(out.decisions[0]!.reason).toMatch(
      /; tool rule `read_\*`: large_offload_threshold_chars 20000$/,
    );
    expect(out.decisions[1]).toMatchObject({ tier: "medium", action: "kept" });
  });

  it("a raised size floor keeps a tool's results small", async () => {
    const out = await turn(
      [
        { id: "r1", name: "read_file", result: LARGE },
        { id: "b1", name: "bash", result: "ok" },
      ],
      { tool_result_tool_rules: [{ tool: "read_file", compaction_size_chars: 200_000 }] },
    );
    expect(out.decisions[0]).toMatchObject({ tier: "small", action: "kept", rule: "read_file" });
    expect(out.decisions[0]!.reason).toBe(
      "small: at most the size floor; tool rule `read_file`: compaction_size_chars 200000",
    );
  });

  it("keep_last_n counts among the tool's own results", async () => {
    const turns = [
      { id: "r1", name: "read_file", result: jsonBody(80_000) },
      { id: "r2", name: "read_file", result: jsonBody(81_000) },
      { id: "r3", name: "read_file", result: jsonBody(82_000) },
      { id: "b1", name: "bash", result: jsonBody(83_000) },
      { id: "b2", name: "bash", result: "ok" },
    ];
    const out = await turn(turns, {
      tool_result_first_delivery: "full",
      tool_result_tool_rules: [{ tool: "read_file", keep_last_n: 2 }],
    });
    const by = Object.fromEntries(out.decisions.map((d) => [d.tool_use_id, d]));
    expect(by.r1).toMatchObject({ action: "offloaded" });
    expect(by.r2).toMatchObject({ tier: "hot", action: "kept", rule: "read_file" });
    expect(by.r3).toMatchObject({ tier: "hot", action: "kept" });
    expect(by.r2!.reason).toBe(
      "hot: among the most recent results; tool rule `read_file`: keep_last_n 2",
    );
    // The other tools keep the global window (1): b1 is settled and not the latest result.
    expect(by.b1).toMatchObject({ action: "offloaded" });
    expect(by.b2).toMatchObject({ tier: "hot" });
  });

  it("the recall prior and first delivery are the tool's", async () => {
    const out = await turn(
      [
        { id: "r1", name: "read_file", result: LARGE },
        { id: "b1", name: "bash", result: "ok" },
      ],
      { tool_result_tool_rules: [{ tool: "read_file", offload_recall_probability: 0.05 }] },
    );
    expect(out.decisions[0]!.gate?.inputs.recall_probability).toBe(0.05);
    // Fresh large results: offered at first delivery by default, not for a tool whose rule says "full".
    const fresh = (rules: unknown[]) =>
      turn([{ id: "r1", name: "read_file", result: jsonBody(400_000) }], {
        tool_result_compaction_keep_last_n: 0,
        tool_result_tool_rules: rules,
      });
    const gated = await fresh([]);
    expect(gated.decisions[0]).toMatchObject({ action: "offloaded" });
    const full = await fresh([{ tool: "read_file", first_delivery: "full" }]);
    expect(full.decisions[0]).toMatchObject({ action: "kept", rule: "read_file" });
  });

  it("decisions stay sticky: a rule added later does not bring back an offloaded result", async () => {
    const store = new MemoryStore();
    const turns = [
      { id: "w1", name: "web_fetch", result: LARGE },
      { id: "b1", name: "bash", result: "ok" },
    ];
    const first = await turn(turns, {}, "sticky", store);
    expect(first.decisions[0]!.action).toBe("offloaded");
    const later = await turn(
      turns,
      { tool_result_tool_rules: [{ tool: "web_*", offload: "never" }] },
      "sticky",
      store,
    );
    expect(later.decisions[0]).toMatchObject({ action: "offloaded", sticky: true });
    expect(later.request).toEqual(first.request);
  });
});

describe("the config's checks", () => {
  const invalid = (value: unknown) => {
    try {
      parseConfigPatch({ tool_result_tool_rules: value });
    } catch (e) {
      if (isOffloadError(e)) return { type: e.type, path: e.path };
      throw e;
    }
    return null;
  };

  it("refuses a rule it cannot read, naming the path", () => {
    expect(invalid([{ tool: "web_*", offload: "sometimes" }])).toEqual({
      type: "invalid_config",
      path: "config.tool_result_tool_rules[0].offload",
    });
    expect(invalid([{ tool: "web_*", threshold: 5 }])?.path).toBe(
      "config.tool_result_tool_rules[0].threshold",
    );
    expect(invalid([{ offload: "never" }])?.path).toBe("config.tool_result_tool_rules[0].tool");
    expect(invalid([{ tool: "x".repeat(257) }])?.path).toBe(
      "config.tool_result_tool_rules[0].tool",
    );
    expect(
      invalid(Array.from({ length: TOOL_RULES_MAX + 1 }, (_, i) => ({ tool: `t${i}` })))?.path,
    ).toBe("config.tool_result_tool_rules");
  });

  it("a layer's rules replace the rules of the layers below", () => {
    const config = resolveConfig(
      { tool_result_tool_rules: [{ tool: "a", offload: "never" }] },
      { tool_result_tool_rules: [{ tool: "b", keep_last_n: 3 }] },
    );
    expect(config.tool_result_tool_rules).toEqual([{ tool: "b", keep_last_n: 3 }]);
  });

  it("names what a rule sets", () => {
    expect(describeRule({ tool: "web_fetch" })).toBe("tool rule `web_fetch` (defaults)");
    expect(describeRule({ tool: "x".repeat(100), keep_last_n: 0 })).toBe(
      `tool rule \`${"x".repeat(64)}…\`: keep_last_n 0`,
    );
  });
});
