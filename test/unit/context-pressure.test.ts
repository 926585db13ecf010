/**
 * Context-pressure mode: near the configured share of the model's context window, settled results are
 * offloaded oldest-first in one batch (down to the target share), recallable, and sticky on later turns,
 * even those an earlier turn had kept; and the "free" recall-tool declaration.
 */
import { describe, expect, it } from "vitest";
import { compact } from "../../src/core/compact.ts";
import { resolveModel } from "../../src/core/pricing.ts";
import { recall } from "../../src/core/recall.ts";
import { PRESSURE_BATCH_LIMIT, pressureWindow } from "../../src/core/turn/pressure.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { conversation, textBody } from "../support/requests.ts";

const model = "claude-sonnet-4-6";
const config = {
  tool_result_compaction_enabled: true,
  tool_result_offload_enabled: true,
  tool_result_context_window_tokens: 40_000,
  tool_result_context_pressure_share: 0.8,
  tool_result_context_pressure_target: 0.5,
  // every result read in full once: what is measured here is what happens to them once settled
  tool_result_first_delivery: "full",
};
/** Medium results (kept by the gate once settled), each about 3,000 estimated tokens. */
const turns = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ id: `r${i}`, result: textBody(11_000, `r${i}`) }));

describe("context-pressure mode", () => {
  it("writes nothing for results too small to be worth a stub, and bounds a batch", async () => {
    const small = Array.from({ length: 2_000 }, (_, i) => ({
      id: `s${i}`,
      result: textBody(900, `s${i}`),
    }));
    const tiny = await compact({
      request: conversation(small, { model }),
      session: "many-small",
      store: new MemoryStore(),
      config: { ...config, tool_result_compaction_size_chars: 0 },
    });
    // Past the pressure share, but no result is several stubs long: no body written, no batch.
    expect(tiny.report.pressure).toBeNull();
    expect(tiny.report.offloaded).toBe(0);
    const big = Array.from({ length: PRESSURE_BATCH_LIMIT + 40 }, (_, i) => ({
      id: `b${i}`,
      result: textBody(11_000, `b${i}`),
    }));
    const out = await compact({
      request: conversation(big, { model }),
      session: "many-big",
      store: new MemoryStore(),
      config: { ...config, tool_result_context_window_tokens: 10_000 },
    });
    expect(out.report.pressure!.offloaded).toBe(PRESSURE_BATCH_LIMIT);
  });

  it("stays out of the way below the pressure share", async () => {
    const store = new MemoryStore();
    const out = await compact({
      request: conversation(turns(5), { model }),
      session: "calm",
      store,
      config,
    });
    expect(out.report.pressure).toBeNull();
    expect(out.report.offloaded).toBe(0);
  });

  it("offloads settled results oldest-first in one batch, down to the target, then replays them", async () => {
    const store = new MemoryStore();
    const session = "pressed";
    // Turns 1…9 grow the context; every medium result is decided "kept" as it settles.
    for (let n = 1; n <= 9; n++) {
      const out = await compact({
        request: conversation(turns(n), { model }),
        session,
        store,
        config,
      });
      expect(out.report.pressure).toBeNull();
    }
    const heavy = conversation(turns(12), { model });
    const out = await compact({ request: heavy, session, store, config });
    const p = out.report.pressure!;
    expect(p.window).toBe(40_000);
    expect(p.share_before).toBeGreaterThanOrEqual(0.8);
    expect(p.share_after).toBeLessThanOrEqual(0.5);
    // Oldest first, and only what the target needs; the newest (hot) result stays.
    const actions = out.decisions.map((d) => d.action);
    const first = actions.indexOf("kept");
    expect(first).toBe(p.offloaded);
    expect(actions.slice(0, p.offloaded).every((a) => a === "offloaded")).toBe(true);
    expect(actions.at(-1)).toBe("kept");
    expect(out.report.recall_tool).toBe("added");
    expect(out.decisions[0]!.reason).toContain("context pressure");
    expect(out.report.tokens_after).toBeLessThan(out.report.tokens_before * 0.7);

    // A later turn replays the batch byte for byte, and is not a new batch.
    const sent = out.request as unknown as { messages: unknown[] };
    const next = await compact({
      request: conversation(turns(13), { model }),
      session,
      store,
      config,
    });
    expect(next.report.pressure).toBeNull();
    // The batch's results count as what they are in the turn's estimates (the calibration's classes),
    // on the batch's turn and on the turns that replay it.
    for (const est of [out.report.estimate!, next.report.estimate!]) {
      const kinds = Object.keys(est.removed).filter((k) => k !== "request" && !k.endsWith("~ws"));
      expect(kinds.length).toBeGreaterThan(0);
      expect(est.removed.request!).toBeLessThan(0); // only the stubs, less
    }
    const again = JSON.parse(JSON.stringify(next.request)) as { messages: unknown[] };
    for (let i = 0; i < p.offloaded * 2; i++)
      expect(JSON.stringify(again.messages[i])).toBe(JSON.stringify(sent.messages[i]));

    // The session's report counts each result once, as it is sent: a batch's result holds its earlier
    // "kept" record and its pressure record, and counts as offloaded.
    const report = (await store.sessionReport({ tenant: "default", session }))!;
    expect(report.records.offloaded).toBe(p.offloaded);
    // Twelve settled results (the thirteenth is unseen: it has no record yet).
    expect(report.records.kept + report.records.offloaded + report.records.compacted).toBe(12);

    // Recallable.
    const memId = out.decisions[0]!.mem_id!;
    const back = await recall({ store, session, mem_id: memId, query: "r0 5:" });
    expect(back.is_error).toBe(false);
    expect(back.content).toContain("r0 5: the quick brown fox");
  });

  it("measures against the model's window, or its long-context price threshold when lower", async () => {
    expect(pressureWindow(resolveModel("claude-opus-5-5"), null)).toBe(1_000_000);
    expect(pressureWindow(resolveModel("claude-sonnet-4-6"), null)).toBe(200_000);
    // GPT-6.2 Sol: a 1.05M window, its input rates doubled past 272K; Haiku 5.5: 1M, ×5 past 100K.
    expect(pressureWindow(resolveModel("gpt-6.2-sol"), null)).toBe(272_000);
    expect(pressureWindow(resolveModel("claude-haiku-5-5"), null)).toBe(100_000);
    expect(pressureWindow(resolveModel("gpt-6.2-sol"), 500_000)).toBe(500_000);
    expect(pressureWindow(null, null)).toBeNull();
    // ~66K estimated tokens of a Haiku 5.5 request pass half of its 100K (and a tenth of its 1M).
    const out = await compact({
      request: conversation(turns(22), { model: "claude-haiku-5-5" }),
      session: "long-context",
      store: new MemoryStore(),
      config: {
        tool_result_compaction_enabled: true,
        tool_result_offload_enabled: true,
        tool_result_context_pressure_share: 0.5,
        tool_result_context_pressure_target: 0.2,
      },
    });
    expect(out.report.pressure).toMatchObject({ window: 100_000 });
    expect(out.report.pressure!.share_after).toBeLessThanOrEqual(0.2);
  });

  it("is off with share null, and without offload", async () => {
    for (const extra of [
      { tool_result_context_pressure_share: null },
      { tool_result_offload_enabled: false },
    ]) {
      const out = await compact({
        request: conversation(turns(12), { model }),
        session: `off-${Object.keys(extra)[0]}`,
        store: new MemoryStore(),
        config: { ...config, ...extra },
      });
      expect(out.report.pressure ?? null).toBeNull();
    }
  });
});

describe('"free" recall-tool declaration', () => {
  it("declares on the session's first turn, where nothing is cached yet, and not later", async () => {
    const store = new MemoryStore();
    const free = { ...config, tool_result_recall_tool_declaration: "free" as const };
    const first = await compact({
      request: conversation(turns(1), { model }),
      session: "free",
      store,
      config: free,
    });
    expect(first.report.recall_tool).toBe("added");
    const lazy = await compact({
      request: conversation(turns(2), { model }),
      session: "lazy-second",
      store,
      config: free,
    });
    expect(lazy.report.recall_tool).toBe("added"); // its own first turn
    const second = await compact({
      request: conversation(turns(1), { model }),
      session: "lazy",
      store,
      config: { ...config, tool_result_recall_tool_declaration: "lazy" },
    });
    expect(second.report.recall_tool).toBe("none");
    // A later turn of a session that did not declare, with a warm cache: not free.
    const later = await compact({
      request: conversation(turns(2), { model }),
      session: "lazy",
      store,
      config: free,
    });
    expect(later.report.recall_tool).toBe("none");
  });
});
