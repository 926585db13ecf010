/** First delivery of medium results (tool_result_first_delivery_min_chars): the gate may stub them on arrival. */
import { describe, expect, it } from "vitest";
import { compact } from "../../src/core/compact.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { conversation, jsonBody, ON } from "../support/requests.ts";

type Req = { messages: { content: { content: unknown }[] }[] };
const FIRST = { ...ON, tool_result_first_delivery: "gated" };
// Sized so that the saving is thin: it pays without the recall margin, not with it (the margin's hop
// is what declines it at the defaults).
const medium = jsonBody(24_000);
// A long conversation before it: the fresh result would ride in many later prompts.
const req = conversation(
  [
    ...Array.from({ length: 12 }, (_, i) => ({ id: `s${i}`, result: jsonBody(7_000) })),
    { id: "fresh", result: medium },
  ],
  { model: "claude-sonnet-4-6" },
);
const run = (config: Record<string, unknown>, session: string) =>
  compact({ request: JSON.stringify(req), session, store: new MemoryStore(), config });

describe("first delivery of medium results", () => {
  it("is on by default: every result over the size floor is weighed on arrival", async () => {
    const out = await run(ON, "m1");
    const d = out.decisions.at(-1)!;
    expect(d.gate!.inputs.first_delivery).toBe(true);
    expect(d.tier).toBe("hot");
    // only large ones with the threshold raised to the large tier
    const large = await run({ ...ON, tool_result_first_delivery_min_chars: 60_000 }, "m1b");
    expect(large.decisions.at(-1)).toMatchObject({ action: "kept", tier: "hot" });
    expect(large.decisions.at(-1)!.gate).toBeUndefined();
    // and none with first delivery "full"
    const full = await run({ ...ON, tool_result_first_delivery: "full" }, "m1c");
    expect(full.decisions.at(-1)!.gate).toBeUndefined();
  });

  it("stubs a medium result on arrival when it pays, with its structural stub", async () => {
    const out = await run({ ...FIRST, tool_result_first_delivery_recall_margin: 0 }, "m2");
    const d = out.decisions.at(-1)!;
    expect(d).toMatchObject({ action: "offloaded", tier: "medium" });
    expect(d.gate!.inputs.first_delivery).toBe(true);
    const stub = (JSON.parse(out.request as string) as Req).messages.at(-1)!.content[0]!
      .content as string;
    expect(stub).toContain("You have not seen this output");
    expect(stub).toContain("Index $.items[*].id");
    expect(stub.length).toBeLessThan(medium.length / 5);
  });

  it("prices the margin's hop beyond the expected ones: a thin saving is declined", async () => {
    const out = await run(FIRST, "m2b");
    const d = out.decisions.at(-1)!;
    expect(d.action).toBe("kept");
    expect(d.reason).toMatch(/^first delivery declined: .*the expected recall hop/);
    expect(d.gate!.inputs.recall_probability).toBe(1.75);
    const bare = (
      await run({ ...FIRST, tool_result_first_delivery_recall_margin: 0 }, "m2c")
    ).decisions.at(-1)!.gate!;
    expect(d.gate!.expected_recall_hop_cost_usd).toBeCloseTo(
      (bare.expected_recall_hop_cost_usd * 1.75) / 0.75,
      9,
    );
  });

  it("never weighs a result below the threshold or at most the size floor", async () => {
    const above = await run({ ...FIRST, tool_result_first_delivery_min_chars: 40_000 }, "m3");
    expect(above.decisions.at(-1)!.gate).toBeUndefined();
    const floor = await run(
      {
        ...FIRST,
        tool_result_first_delivery_min_chars: 0,
        tool_result_compaction_size_chars: 40_000,
      },
      "m4",
    );
    expect(floor.decisions.at(-1)).toMatchObject({ action: "kept" });
  });
});
