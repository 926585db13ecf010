import { describe, expect, it } from "vitest";
import { offloadGate } from "../../src/core/gate.ts";
import { normalizeModelId, PRICE_TABLE, ratesFor, resolveModel } from "../../src/core/pricing.ts";
import { estimateTokens } from "../../src/core/tokens.ts";

const base = { stub_tokens: 300, horizon: 5, recall_probability: 0.5, context_tokens: 9_000 };

describe("offloadGate", () => {
  it("reference vector: a ~321K-token result, uncached side, Opus 4.5, H=5 fires with net ≈ +$8", () => {
    const g = offloadGate({
      ...base,
      model: "claude-opus-4-5-20251101",
      result_tokens: 321_000,
      cached_side: false,
    });
    expect(g.fire).toBe(true);
    expect(g.model).toBe("claude-opus-4-5");
    expect(g.reprefill_saving_usd).toBeCloseTo(5 * 321_000 * 5e-6, 6); // $8.025
    expect(g.net_usd).toBeGreaterThan(7.5);
    expect(g.net_usd).toBeLessThan(8.1);
    expect(g.invalidation_cost_usd).toBe(0);
    expect(g.net_usd).toBeCloseTo(
      g.reprefill_saving_usd -
        g.stub_carry_cost_usd -
        g.invalidation_cost_usd -
        g.expected_recall_hop_cost_usd,
      8,
    );
    expect(g.reason).toMatch(/saves \$7\.9/);
  });

  it("reference check: an 8K-char result does not pay for its recall hop", () => {
    const T = estimateTokens(8000, "json");
    for (const cached_side of [true, false]) {
      const g = offloadGate({
        ...base,
        model: "claude-opus-4-5",
        result_tokens: T,
        cached_side,
        tokens_to_breakpoint: 1500,
        context_tokens: 60_000,
        client_caches: cached_side,
      });
      expect(g.fire).toBe(false);
      expect(g.net_usd).toBeLessThan(0);
    }
  });

  it("never fires for an unknown model, and says why", () => {
    for (const model of ["claude-opus-9", "gpt-17", "", null, undefined]) {
      const g = offloadGate({ ...base, model, result_tokens: 1e6, cached_side: false });
      expect(g.fire).toBe(false);
      expect(g.model).toBeNull();
      expect(g.reason).toMatch(/unknown model|the request names no model/);
      expect(g.reason).toContain("tool_result_pricing_model");
    }
  });

  it("prices the cached side at read and charges the invalidation of the prefix after the result", () => {
    const unc = offloadGate({
      ...base,
      model: "claude-sonnet-4-6",
      result_tokens: 40_000,
      cached_side: false,
    });
    const cac = offloadGate({
      ...base,
      model: "claude-sonnet-4-6",
      result_tokens: 40_000,
      cached_side: true,
      tokens_to_breakpoint: 50_000,
      client_caches: true,
    });
    expect(cac.reprefill_saving_usd).toBeCloseTo(unc.reprefill_saving_usd / 10, 9);
    expect(cac.invalidation_cost_usd).toBeCloseTo((50_000 * (3.75 - 0.3)) / 1e6, 9);
    const oneHour = offloadGate({
      ...base,
      model: "claude-sonnet-4-6",
      result_tokens: 40_000,
      cached_side: true,
      tokens_to_breakpoint: 50_000,
      cache_ttl: "1h",
    });
    expect(oneHour.invalidation_cost_usd).toBeCloseTo((50_000 * (6 - 0.3)) / 1e6, 9);
    expect(unc.invalidation_cost_usd).toBe(0);
  });

  it("uses each model's own cache multipliers", () => {
    const at = (model: string) =>
      offloadGate({
        ...base,
        model,
        result_tokens: 100_000,
        cached_side: true,
        tokens_to_breakpoint: 0,
      });
    expect(at("claude-opus-5-5").reprefill_saving_usd).toBeCloseTo(5 * 100_000 * 0.2e-6, 9); // 0.05× input
    expect(at("claude-fable-5-1").reprefill_saving_usd).toBeCloseTo(5 * 100_000 * 0.25e-6, 9); // 0.025× input
    expect(at("gpt-4.1").reprefill_saving_usd).toBeCloseTo(5 * 100_000 * 0.5e-6, 9); // OpenAI cached input
  });

  it("charges a recall hop's context at input price when the client does not cache", () => {
    const caching = offloadGate({
      ...base,
      model: "claude-sonnet-4-6",
      result_tokens: 100_000,
      cached_side: false,
      client_caches: true,
      context_tokens: 100_000,
    });
    const plain = offloadGate({
      ...base,
      model: "claude-sonnet-4-6",
      result_tokens: 100_000,
      cached_side: false,
      client_caches: false,
      context_tokens: 100_000,
    });
    expect(plain.expected_recall_hop_cost_usd).toBeGreaterThan(
      caching.expected_recall_hop_cost_usd,
    );
  });

  it("is monotone in horizon and recall probability, and deterministic", () => {
    const g = (horizon: number, p: number) =>
      offloadGate({
        ...base,
        horizon,
        recall_probability: p,
        model: "claude-haiku-4-5",
        result_tokens: 30_000,
        cached_side: false,
      }).net_usd;
    expect(g(10, 0.5)).toBeGreaterThan(g(5, 0.5));
    expect(g(5, 0.1)).toBeGreaterThan(g(5, 0.9));
    expect(g(5, 0.5)).toBe(g(5, 0.5));
  });

  it("with a robustness margin fires only where the net exceeds that share of the gross, and says so", () => {
    const input = {
      ...base,
      model: "claude-haiku-4-5",
      result_tokens: 30_000,
      cached_side: false,
      horizon: 5,
      recall_probability: 0.5,
    };
    const plain = offloadGate(input);
    expect(plain.fire).toBe(true);
    const share = plain.net_usd / plain.reprefill_saving_usd;
    // just under the net's own share of the gross: still fires, with the same prices
    const under = offloadGate({ ...input, min_net_share: share * 0.99 });
    expect(under.fire).toBe(true);
    expect(under.net_usd).toBe(plain.net_usd);
    const over = offloadGate({ ...input, min_net_share: Math.min(1, share * 1.01) });
    expect(over.fire).toBe(false);
    expect(over.net_usd).toBe(plain.net_usd);
    expect(over.reason).toContain("tool_result_offload_min_net_share");
    // 0 or absent: any positive net
    expect(offloadGate({ ...input, min_net_share: 0 }).fire).toBe(true);
    // a losing stub keeps its own reason
    const losing = offloadGate({
      ...input,
      recall_probability: 1,
      horizon: 0.2,
      min_net_share: 0.5,
    });
    expect(losing.fire).toBe(false);
    expect(losing.reason).not.toContain("min_net_share");
  });

  it("declines when the stub is no smaller than the result", () => {
    const g = offloadGate({
      ...base,
      model: "claude-haiku-4-5",
      result_tokens: 200,
      stub_tokens: 300,
      cached_side: false,
    });
    expect(g.fire).toBe(false);
  });
});

describe("price table", () => {
  it("resolves dated ids, aliases and provider spellings", () => {
    const cases: [string, string][] = [
      ["claude-opus-4-5-20251101", "claude-opus-4-5"],
      ["claude-sonnet-4-5-20250929", "claude-sonnet-4-5"],
      ["claude-haiku-4-5-20251001", "claude-haiku-4-5"],
      ["claude-opus-4-1-20250805", "claude-opus-4-1"],
      ["claude-opus-4-0", "claude-opus-4"],
      ["claude-sonnet-4-20250514", "claude-sonnet-4"],
      ["claude-3-7-sonnet-latest", "claude-3-7-sonnet"],
      ["anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"],
      ["us.anthropic.claude-opus-4-6-v1", "claude-opus-4-6"],
      ["claude-sonnet-4-5@20250929", "claude-sonnet-4-5"],
      ["claude-opus-4-7[1m]", "claude-opus-4-7"],
      ["Claude-Sonnet-4-6", "claude-sonnet-4-6"],
      ["gpt-4.1-2025-04-14", "gpt-4.1"],
      ["gpt-5-2025-08-07", "gpt-5"],
      ["openai/gpt-5.1", "gpt-5.1"],
      ["o4-mini-2025-04-16", "o4-mini"],
    ];
    for (const [id, want] of cases) expect(resolveModel(id)?.id, id).toBe(want);
    expect(normalizeModelId("claude-opus-4-5-20251101")).toBe("claude-opus-4-5");
    expect(resolveModel("claude-opus-4-5-thinking")).toBeNull();
    expect(resolveModel("gpt-4.2")).toBeNull();
  });

  it("has consistent rows: read below input, writes at or above input, positive output", () => {
    for (const p of PRICE_TABLE.values()) {
      expect(p.cache_read, p.id).toBeLessThan(p.input);
      expect(p.cache_write_5m, p.id).toBeGreaterThanOrEqual(p.input);
      expect(p.cache_write_1h, p.id).toBeGreaterThanOrEqual(p.cache_write_5m);
      expect(p.output, p.id).toBeGreaterThan(p.input);
      expect(p.min_cacheable_tokens, p.id).toBeGreaterThanOrEqual(512);
    }
  });

  it("bills long prompts at long-context rates where the provider does", () => {
    const sonnet45 = resolveModel("claude-sonnet-4-5")!;
    expect(ratesFor(sonnet45, 150_000).input).toBe(3);
    expect(ratesFor(sonnet45, 250_000).input).toBe(6);
    expect(ratesFor(sonnet45, 250_000).output).toBe(22.5);
    expect(ratesFor(resolveModel("claude-sonnet-4-6")!, 900_000).input).toBe(3);
  });
});
