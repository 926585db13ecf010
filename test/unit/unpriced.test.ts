/**
 * An unknown model never offloads, and says so where people look: the gate's reason, each decision, the anchor's
 * reason, the turn report's errors (which the x-offload-summary header repeats) name the model and the config
 * key that prices it, tool_result_pricing_model. The session report over HTTP is checked in
 * test/worker/unpriced.test.ts.
 */
import { describe, expect, it } from "vitest";
import { summaryOf } from "../../src/http/summary.ts";
import { compact, MemoryStore } from "../../src/lib.ts";
import { offloadGate } from "../../src/pricing.ts";
import { conversation } from "../support/requests.ts";

const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };
const BIG = JSON.stringify({
  rows: Array.from({ length: 3000 }, (_, i) => ({ id: i, v: `row-${i}` })),
});
const request = (model?: string) =>
  JSON.stringify(
    conversation(
      [
        { id: "t1", result: BIG },
        { id: "t2", result: "ok" },
      ],
      model === undefined ? {} : { model },
    ),
  );

describe("an unknown model", () => {
  it("is named in the gate's reason, with the config key that prices it", () => {
    const g = offloadGate({
      model: "acme-gateway-large",
      result_tokens: 1e6,
      stub_tokens: 300,
      horizon: 5,
      recall_probability: 0.5,
      cached_side: false,
      context_tokens: 9000,
    });
    expect(g.fire).toBe(false);
    expect(g.reason).toBe(
      'never offloads: unknown model "acme-gateway-large" (no price): set the config\'s tool_result_pricing_model to a model in the price table (e.g. "claude-sonnet-4-6") to price it',
    );
  });

  it("is named in the decision and the turn's errors (so in the summary header), not as `null`", async () => {
    const out = await compact({
      request: request("acme-gateway-large"),
      session: "s",
      store: new MemoryStore(),
      config: { ...ON, tool_result_medium_tier: "cache_anchor" },
    });
    expect(out.decisions[0]).toMatchObject({ tier: "large", action: "kept" });
    expect(out.decisions[0]!.reason).toContain('unknown model "acme-gateway-large"');
    expect(out.decisions[0]!.reason).toContain("tool_result_pricing_model");
    expect(out.decisions[0]!.reason).not.toContain("null");
    expect(out.report.anchor?.reason).toContain('unknown model "acme-gateway-large"');
    expect(out.report.errors).toEqual([
      {
        code: "unpriced_model",
        message: expect.stringContaining('unknown model "acme-gateway-large" (no price)'),
      },
    ]);
    const header = summaryOf(out.report, out.changed, []);
    expect(header.errors_total).toBe(1);
    expect(header.errors[0]!.message).toContain("tool_result_pricing_model");
  });

  it("says when the request names no model at all", async () => {
    const raw = JSON.parse(request());
    delete raw.model;
    const out = await compact({
      request: JSON.stringify(raw),
      session: "s",
      store: new MemoryStore(),
      config: ON,
    });
    expect(out.report.errors[0]!.message).toContain("the request names no model");
    expect(out.decisions[0]!.reason).toContain("the request names no model");
  });

  it("is priced, and offloaded, once tool_result_pricing_model names a known model", async () => {
    const out = await compact({
      request: request("acme-gateway-large"),
      session: "s",
      store: new MemoryStore(),
      config: { ...ON, tool_result_pricing_model: "claude-sonnet-4-6" },
    });
    expect(out.report).toMatchObject({ priced_as: "claude-sonnet-4-6", errors: [] });
    expect(out.decisions[0]!.action).toBe("offloaded");
  });

  it("is no error where no price is needed (compaction on, offload and the anchor off)", async () => {
    const out = await compact({
      request: request("acme-gateway-large"),
      session: "s",
      store: new MemoryStore(),
      config: { tool_result_compaction_enabled: true, tool_result_medium_tier: "off" },
    });
    expect(out.report.errors).toEqual([]);
  });
});
