/** First delivery of medium results (tool_result_first_delivery_min_chars): the gate may stub them on arrival. */
import { describe, expect, it } from "vitest";
import { compact } from "../../src/core/compact.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { conversation, jsonBody, ON } from "../support/requests.ts";

type Req = { messages: { content: { content: unknown }[] }[] };
const FIRST = { ...ON, tool_result_first_delivery: "gated" };
const medium = jsonBody(30_000);
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
  it("is off by default: only large results are weighed on arrival", async () => {
    const out = await run(FIRST, "m1");
    expect(out.decisions.at(-1)).toMatchObject({ action: "kept", tier: "hot" });
    expect(out.decisions.at(-1)!.gate).toBeUndefined();
  });

  it("weighs a medium result on arrival once the threshold is lowered, and stubs it when it pays", async () => {
    const out = await run({ ...FIRST, tool_result_first_delivery_min_chars: 20_000 }, "m2");
    const d = out.decisions.at(-1)!;
    expect(d).toMatchObject({ action: "offloaded", tier: "medium" });
    expect(d.gate!.inputs.first_delivery).toBe(true);
    const stub = (JSON.parse(out.request as string) as Req).messages.at(-1)!.content[0]!
      .content as string;
    expect(stub).toContain("You have not seen this output");
    expect(stub).toContain("Index $.items[*].id");
    expect(stub.length).toBeLessThan(medium.length / 5);
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
