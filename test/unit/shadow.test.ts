// Shadow mode in the core: decide, ledger and record exactly as a live turn would, return the request unchanged.
import { describe, expect, it } from "vitest";
import { compact } from "../../src/core/compact.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { startOf } from "../support/records.ts";
import {
  conversation,
  deepFreeze,
  faultyStore,
  jsonBody,
  ON,
  SIZE_ONLY,
  untouchableStore,
} from "../support/requests.ts";

const LARGE = jsonBody(80_000);
const SHADOW = { ...ON, tool_result_offload_shadow: true } as const;
const REF = { tenant: "default", session: "s" };

/** t1 large (settled), t2 small (hot); `more` appends further turns. */
function history(more: number[] = [], model = "claude-opus-4-5") {
  return conversation(
    [
      { id: "t1", result: LARGE },
      { id: "t2", result: "ok" },
      ...more.map((k) => ({ id: `t${k}`, result: `step ${k}` })),
    ],
    { model },
  );
}

describe("shadow mode", () => {
  it("returns the very same string, and the very same object, with the turn decided in full", async () => {
    const store = new MemoryStore();
    const text = JSON.stringify(history());
    const out = await compact({ request: text, session: "s", store, config: SHADOW });
    expect(out.request).toBe(text);
    expect(out.changed).toBe(false);
    const d = out.decisions.find((x) => x.tool_use_id === "t1")!;
    expect(d).toMatchObject({ tier: "large", action: "offloaded", sticky: false });
    expect(d.gate?.fire).toBe(true);
    expect(out.report).toMatchObject({ shadow: true, offloaded: 1, recall_tool: "none" });
    expect(out.report.tokens_after).toBeLessThan(out.report.tokens_before);
    expect(out.report.saved_usd).toBeGreaterThan(0);

    const obj = deepFreeze(history());
    const again = await compact({ request: obj, session: "s2", store, config: SHADOW });
    expect(again.request).toBe(obj);
    expect(again.report.offloaded).toBe(1);
  });

  it("ledgers the body and records the decision, and logs the turn as shadow with its would-be saving", async () => {
    const store = new MemoryStore();
    const out = await compact({
      request: JSON.stringify(history()),
      session: "s",
      store,
      config: SHADOW,
    });
    const memId = out.decisions[0]!.mem_id!;
    expect((await store.getBody(REF, memId))?.body).toBe(LARGE);
    const state = await startOf(store, REF, ["t1", "t2"]);
    expect(state.records.get("t1")).toMatchObject({ action: "offloaded", mem_id: memId });
    // Recorded as it would be declared, so the tool comes with the stubs once shadow is off (it is not sent now).
    expect(state.recall_declared).toBe(true);
    const [log] = (await store.describeSession(REF))!.turns;
    expect(log).toMatchObject({
      shadow: true,
      offloaded: 1,
      gate_fired: 1,
      gate_declined: 0,
      new_decisions: 1,
    });
    expect(log!.saved_usd).toBe(out.report.saved_usd);
    expect(log!.tokens_after).toBe(out.report.tokens_after);
  });

  it("declares no recall tool, even eagerly, and places no cache anchor", async () => {
    const text = JSON.stringify(history());
    const out = await compact({
      request: text,
      session: "s",
      store: new MemoryStore(),
      config: {
        ...SHADOW,
        tool_result_recall_tool_declaration: "eager",
        tool_result_medium_tier: "cache_anchor",
      },
    });
    expect(out.request).toBe(text);
    expect(out.report.recall_tool).toBe("none");
    expect(out.report.anchor?.placed ?? false).toBe(false);
  });

  it("replays its decisions on later turns: the same bytes back, the saving counted again", async () => {
    const store = new MemoryStore();
    await compact({ request: JSON.stringify(history()), session: "s", store, config: SHADOW });
    const text = JSON.stringify(history([3]));
    const out = await compact({ request: text, session: "s", store, config: SHADOW });
    expect(out.request).toBe(text);
    expect(out.decisions.find((d) => d.tool_use_id === "t1")).toMatchObject({
      action: "offloaded",
      sticky: true,
    });
    const turns = (await store.describeSession(REF))!.turns;
    expect(turns.map((t) => [t.shadow, t.offloaded, t.gate_fired])).toEqual([
      [true, 1, 1],
      [true, 1, 0],
    ]);
    expect(turns[1]!.saved_usd).toBeGreaterThan(0);
  });

  it("is sticky when turned off: the next live turn renders the shadow decisions, byte for byte as a live session would", async () => {
    // Two stores, the same session name and secret: one live from the start, one in shadow first.
    const live = new MemoryStore();
    const shadowed = new MemoryStore();
    await compact({ request: JSON.stringify(history()), session: "s", store: live, config: ON });
    await compact({
      request: JSON.stringify(history()),
      session: "s",
      store: shadowed,
      config: SHADOW,
    });
    const next = JSON.stringify(history([3]));
    const a = await compact({ request: next, session: "s", store: live, config: ON });
    const b = await compact({ request: next, session: "s", store: shadowed, config: ON });
    expect(b.changed).toBe(true);
    expect(b.request).toBe(a.request);
    expect(b.report).toMatchObject({ shadow: false, recall_tool: "added" });
    expect(b.decisions.find((d) => d.tool_use_id === "t1")).toMatchObject({
      action: "offloaded",
      sticky: true,
    });
    const turns = (await shadowed.describeSession(REF))!.turns;
    expect(turns.map((t) => t.shadow)).toEqual([true, false]);
  });

  it("turned on mid-session returns each request as sent, whatever the client holds", async () => {
    const store = new MemoryStore();
    const first = await compact({
      request: JSON.stringify(history()),
      session: "s",
      store,
      config: ON,
    });
    const compacted = JSON.parse(first.request as string) as { messages: unknown[] };
    compacted.messages.push(...(history([3]).messages as unknown[]).slice(-2));
    for (const text of [JSON.stringify(compacted), JSON.stringify(history([3]))]) {
      const out = await compact({ request: text, session: "s", store, config: SHADOW });
      expect(out.request).toBe(text);
      expect(out.report.shadow).toBe(true);
    }
  });

  it("also covers the size-only path: results recorded as compacted, the request unchanged", async () => {
    const store = new MemoryStore();
    const text = JSON.stringify(history());
    const out = await compact({
      request: text,
      session: "s",
      store,
      config: { ...SIZE_ONLY, tool_result_offload_shadow: true },
    });
    expect(out.request).toBe(text);
    expect(out.decisions[0]).toMatchObject({ action: "compacted" });
    expect((await startOf(store, REF, ["t1"])).records.get("t1")?.action).toBe("compacted");
  });

  it("counts the gate's declines (an unknown model never fires)", async () => {
    const store = new MemoryStore();
    const text = JSON.stringify(history([], "some-private-model"));
    const out = await compact({ request: text, session: "s", store, config: SHADOW });
    expect(out.request).toBe(text);
    expect((await store.describeSession(REF))!.turns[0]).toMatchObject({
      shadow: true,
      offloaded: 0,
      gate_fired: 0,
      gate_declined: 1,
      saved_usd: 0,
    });
  });

  it("does nothing with compaction off (off means off), and passes through when the state is unreadable", async () => {
    const text = JSON.stringify(history());
    const off = await compact({
      request: text,
      session: "s",
      store: untouchableStore(),
      config: { tool_result_offload_shadow: true },
    });
    expect(off.request).toBe(text);
    expect(off.report.shadow).toBe(false);
    const down = await compact({
      request: text,
      session: "s",
      store: faultyStore(new MemoryStore(), { beginTurn: true }),
      config: SHADOW,
    });
    expect(down.request).toBe(text);
    expect(down.report.errors[0]?.code).toBe("storage_error");
  });

  it("keeps a result full in the record when its body cannot be stored (nothing is recorded that a live turn would not)", async () => {
    const inner = new MemoryStore();
    const text = JSON.stringify(history());
    const out = await compact({
      request: text,
      session: "s",
      store: faultyStore(inner, { putBody: true }),
      config: SHADOW,
    });
    expect(out.request).toBe(text);
    expect(out.decisions[0]).toMatchObject({ action: "kept" });
    expect((await startOf(inner, REF, ["t1"])).records.has("t1")).toBe(false);
  });
});
