/** The gate that learns (tool_result_offload_adaptive) and first-delivery offload (tool_result_first_delivery). */
import { describe, expect, it } from "vitest";
import {
  learnedHorizon,
  learnedRecallProbability,
  PRIOR_WEIGHT,
  unseenRecallProbability,
} from "../../src/core/adaptive.ts";
import { compact } from "../../src/core/compact.ts";
import { recall } from "../../src/core/recall.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { putBody } from "../support/records.ts";
import { conversation, jsonBody, ON, textBody } from "../support/requests.ts";

type Req = Record<string, any>;
const ADAPTIVE = { ...ON, tool_result_offload_adaptive: true };

describe("learned recall probability and horizon", () => {
  it("starts at the configured prior and moves to the observed rate", () => {
    expect(learnedRecallProbability(0.5, 5, undefined, undefined)).toBe(0.5);
    // tenant: 20 offloads, none recalled → (0.5·4 + 0) / (4 + 20)
    expect(learnedRecallProbability(0.5, 5, { offloaded: 20, recalls: 0 }, undefined)).toBeCloseTo(
      2 / 24,
      10,
    );
    // and the session's own counts update that posterior in turn
    const tenant = (0.5 * PRIOR_WEIGHT) / (PRIOR_WEIGHT + 20);
    expect(
      learnedRecallProbability(0.5, 5, { offloaded: 20, recalls: 0 }, { offloaded: 2, recalls: 4 }),
    ).toBeCloseTo((tenant * 4 + 4) / 6, 10);
    // more recalls than offloads: an expected number of hops, capped by the horizon
    expect(learnedRecallProbability(0.5, 3, { offloaded: 1, recalls: 100 }, undefined)).toBe(3);
  });

  it("estimates the horizon from the session's length, never below the configured default", () => {
    expect(learnedHorizon(1, 5)).toBe(5);
    expect(learnedHorizon(5, 5)).toBe(5);
    expect(learnedHorizon(40, 5)).toBe(40);
    expect(learnedHorizon(10_000, 5)).toBe(200);
    expect(unseenRecallProbability(0.5)).toBe(0.75);
    expect(unseenRecallProbability(0)).toBe(0.5);
  });
});

describe("adaptive gate in the transform", () => {
  const medium = (i: number) => ({ id: `m${i}`, result: textBody(20_000, `m${i}`) });
  // A long session (the learned horizon grows with it), a medium result up for decision at the end.
  const session = (n: number) =>
    conversation(
      [
        ...Array.from({ length: n }, (_, i) => ({ id: `f${i}`, result: `small ${i}` })),
        medium(n),
        { id: "last", result: "x" },
      ],
      { model: "claude-sonnet-4-6" },
    );

  it("reports the p and H it used, and considers medium results", async () => {
    const out = await compact({
      request: JSON.stringify(session(30)),
      session: "a",
      store: new MemoryStore(),
      config: ADAPTIVE,
    });
    const d = out.decisions.find((x) => x.tool_use_id === "m30")!;
    expect(d.gate).toBeDefined();
    // 32 assistant turns in the request: a session that long is expected to run about as long again
    expect(d.gate!.inputs.horizon).toBe(32);
    expect(d.gate!.inputs.recall_probability).toBe(0.5);
    const fixed = await compact({
      request: JSON.stringify(session(30)),
      session: "b",
      store: new MemoryStore(),
      config: ON,
    });
    expect(fixed.decisions.find((x) => x.tool_use_id === "m30")).toMatchObject({
      tier: "medium",
      action: "kept",
    });
    expect(fixed.decisions.find((x) => x.tool_use_id === "m30")!.gate).toBeUndefined();
  });

  it("learns from recall histories: a tool that is recalled often is priced with more recall hops", async () => {
    const store = new MemoryStore();
    const big = (i: number) => ({ id: `b${i}`, name: "fetch", result: jsonBody(70_000 + i) });
    // Session 1: fetch results are offloaded, and the model recalls each one three times.
    const first = await compact({
      request: JSON.stringify(conversation([big(1), big(2), { id: "z", result: "z" }])),
      session: "s1",
      store,
      config: ADAPTIVE,
    });
    const memIds = first.decisions.filter((d) => d.action === "offloaded").map((d) => d.mem_id!);
    expect(memIds).toHaveLength(2);
    for (const mem_id of memIds)
      for (let k = 0; k < 3; k++)
        await recall({ store, session: "s1", mem_id, offset: k * 10, max_chars: 10 });
    // Session 2 of the same tenant: p for "fetch" has moved from 0.5 towards 3 recalls per offload.
    const request = JSON.stringify(conversation([big(3), { id: "z", result: "z" }]));
    const second = await compact({ request, session: "s2", store, config: ADAPTIVE });
    const g = second.decisions[0]!.gate!;
    expect(g.inputs.recall_probability).toBeCloseTo(
      (0.5 * PRIOR_WEIGHT + 6) / (PRIOR_WEIGHT + 2),
      10,
    );
    const naive = (
      await compact({ request, session: "s2", store: new MemoryStore(), config: ADAPTIVE })
    ).decisions[0]!.gate!;
    expect(naive.inputs.recall_probability).toBe(0.5);
    expect(g.expected_recall_hop_cost_usd).toBeCloseTo(
      (naive.expected_recall_hop_cost_usd * g.inputs.recall_probability) / 0.5,
      9,
    );
    expect(g.net_usd).toBeLessThan(naive.net_usd);
    // a different tool of the tenant is unaffected
    const other = await compact({
      request: JSON.stringify(
        conversation([
          { id: "o", name: "read", result: jsonBody(70_000) },
          { id: "z", result: "z" },
        ]),
      ),
      session: "s3",
      store,
      config: ADAPTIVE,
    });
    expect(other.decisions[0]!.gate!.inputs.recall_probability).toBe(0.5);
  });

  it("is deterministic for a given state, and never revisits a decision", async () => {
    const storeA = new MemoryStore();
    const storeB = new MemoryStore();
    const req = JSON.stringify(session(30));
    const a = await compact({ request: req, session: "x", store: storeA, config: ADAPTIVE });
    const b = await compact({ request: req, session: "x", store: storeB, config: ADAPTIVE });
    expect(a.request).toBe(b.request);
    const again = await compact({ request: req, session: "x", store: storeA, config: ADAPTIVE });
    expect(again.request).toBe(a.request);
    expect(again.decisions.find((d) => d.tool_use_id === "m30")!.sticky).toBe(true);
  });
});

describe("first-delivery offload (on by default)", () => {
  const FIRST = { ...ON, tool_result_first_delivery: "gated" };
  const huge = jsonBody(400_000);

  it("may stub the freshest large result on the turn it arrives, saying the model has not seen it", async () => {
    const req = conversation(
      [
        { id: "a", result: "x" },
        { id: "fresh", result: huge },
      ],
      { model: "claude-sonnet-4-6" },
    );
    const out = await compact({
      request: JSON.stringify(req),
      session: "f",
      store: new MemoryStore(),
      config: FIRST,
    });
    const d = out.decisions.find((x) => x.tool_use_id === "fresh")!;
    expect(d).toMatchObject({ action: "offloaded", tier: "large" });
    expect(d.gate!.inputs.first_delivery).toBe(true);
    // halfway from the prior to certainty, plus the margin's hop (tool_result_first_delivery_recall_margin)
    expect(d.gate!.inputs.recall_probability).toBe(1.75);
    const stub = (JSON.parse(out.request as string) as Req).messages.at(-1).content[0]
      .content as string;
    expect(stub).toContain("You have not seen this output");
    expect(stub).toContain("$.items: array(");
  });

  it('sends every result in full once with first delivery "full", and never first-delivers a recall answer', async () => {
    const req = conversation([
      { id: "a", result: "x" },
      { id: "fresh", result: huge },
    ]);
    const def = await compact({
      request: JSON.stringify(req),
      session: "d",
      store: new MemoryStore(),
      config: { ...ON, tool_result_first_delivery: "full" },
    });
    expect(def.decisions[1]).toMatchObject({ action: "kept", tier: "hot" });
    const recallAnswer = conversation([
      { id: "a", result: "x" },
      {
        id: "r",
        name: "recall_tool_result",
        input: { mem_id: "trm_000000000000000000000000" },
        result: huge,
      },
    ]);
    // A recall answer: its mem_id is one this session issued.
    const store = new MemoryStore();
    await putBody(store, { tenant: "default", session: "r" }, huge, {
      mem_id: "trm_000000000000000000000000",
      tool_use_id: "earlier",
      tool_name: "bash",
      chars: huge.length,
      tokens: 1,
      kind: "json",
      outline: "",
      turn: 1,
    });
    const r = await compact({
      request: JSON.stringify(recallAnswer),
      session: "r",
      store,
      config: FIRST,
    });
    expect(r.decisions[1]!.action).toBe("kept");
  });

  it("when the gate declines on arrival, decides again normally once settled (the decline stands for its arrival only)", async () => {
    const store = new MemoryStore();
    const mid = jsonBody(61_000);
    // priced as an unknown model on arrival (the gate declines), as Haiku once settled
    const arriving = conversation(
      [
        { id: "a", result: "x" },
        { id: "m", result: mid },
      ],
      { model: "claude-haiku-4-5" },
    );
    const first = await compact({
      request: JSON.stringify(arriving),
      session: "g",
      store,
      config: { ...FIRST, tool_result_pricing_model: "unpriced" },
    });
    expect(first.decisions[1]!.action).toBe("kept");
    expect(first.decisions[1]!.reason).toContain("first delivery declined");
    expect(first.decisions[1]!.gate!.inputs.first_delivery).toBe(true);
    const settled = conversation(
      [
        { id: "a", result: "x" },
        { id: "m", result: mid },
        { id: "b", result: "y" },
      ],
      { model: "claude-haiku-4-5" },
    );
    const later = await compact({
      request: JSON.stringify(settled),
      session: "g",
      store,
      config: FIRST,
    });
    expect(later.decisions[1]!.sticky).toBe(false);
    expect(later.decisions[1]!.action).toBe("offloaded");
    expect(later.decisions[1]!.gate!.inputs.first_delivery).toBe(false);
  });
});
