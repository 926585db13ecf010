/** The horizon learned from observed session lengths (src/core/horizon.ts), alone and in the transform. */
import { describe, expect, it } from "vitest";
import { compact } from "../../src/core/compact.ts";
import {
  expectedRemainingCalls,
  HORIZON_PRIOR_WEIGHT,
  MAX_LEARNED_HORIZON,
  SessionLengthLog,
  type SessionLengths,
} from "../../src/core/horizon.ts";
import type { OffloadStore } from "../../src/core/ports.ts";
import { turnOver } from "../../src/core/turn/over.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { SESSION_END_MS } from "../../src/store/session-lengths.ts";
import { commitTurn, turnLog } from "../support/records.ts";
import { conversation, jsonBody, ON } from "../support/requests.ts";

const W = HORIZON_PRIOR_WEIGHT;

describe("expectedRemainingCalls", () => {
  it("is the prior without evidence", () => {
    expect(expectedRemainingCalls(undefined, 3, 5)).toBe(5);
    expect(expectedRemainingCalls(null, 3, 5)).toBe(5);
    expect(expectedRemainingCalls({ counts: [] }, 3, 5)).toBe(5);
  });

  it("is the mean residual length of the sessions that got this far, leaning on the prior where few did", () => {
    // 10 sessions of 40 calls, 10 of 4: at call 3 all 20 are still running.
    const lengths: SessionLengths = {
      counts: [
        [40, 10],
        [4, 10],
      ],
    };
    expect(expectedRemainingCalls(lengths, 3, 5)).toBeCloseTo(
      (10 * 37 + 10 * 1 + W * 5) / (20 + W),
      10,
    );
    // At call 5 the short ones have ended: only the long ones tell what is left.
    expect(expectedRemainingCalls(lengths, 5, 5)).toBeCloseTo((10 * 35 + W * 5) / (10 + W), 10);
    // Past every session seen: the prior again.
    expect(expectedRemainingCalls(lengths, 41, 5)).toBe(5);
    // A session at its last observed call expects none more, but the prior still weighs.
    expect(expectedRemainingCalls(lengths, 40, 5)).toBeCloseTo((W * 5) / (10 + W), 10);
  });

  it("conditions on the length so far: a long session is not promised the average again", () => {
    const lengths: SessionLengths = {
      counts: Array.from({ length: 50 }, (_, i) => [i + 1, 4] as const),
    };
    const early = expectedRemainingCalls(lengths, 2, 5);
    const late = expectedRemainingCalls(lengths, 45, 5);
    expect(early).toBeGreaterThan(20);
    expect(late).toBeLessThan(5);
  });

  it("is capped, and reads a malformed histogram as far as it is valid", () => {
    expect(expectedRemainingCalls({ counts: [[100_000, 1000]] }, 1, 5)).toBe(MAX_LEARNED_HORIZON);
    const hostile = {
      counts: [
        [10, 2],
        [-1, 5],
        [7.5, 3],
        [Number.NaN, 1],
        [20, -4],
        [30, Number.POSITIVE_INFINITY],
        "x",
        null,
        [12],
      ],
    } as unknown as SessionLengths;
    expect(expectedRemainingCalls(hostile, 1, 5)).toBeCloseTo((2 * 9 + W * 5) / (2 + W), 10);
    // a call number below 1 is call 1
    expect(expectedRemainingCalls({ counts: [[10, 2]] }, -3, 5)).toBe(
      expectedRemainingCalls({ counts: [[10, 2]] }, 1, 5),
    );
  });
});

describe("SessionLengthLog", () => {
  it("counts ended sessions by length, ignoring empty ones, and gives snapshots", () => {
    const log = new SessionLengthLog();
    log.add(3);
    log.add(0);
    log.add(3);
    log.add(12);
    log.add(2.5);
    const snap = log.lengths();
    expect(snap.counts).toEqual([
      [3, 2],
      [12, 1],
    ]);
    log.add(12);
    expect(snap.counts).toEqual([
      [3, 2],
      [12, 1],
    ]);
  });
});

/** A store whose turns also start with the tenant's session lengths, as a deployment's store does. */
function withLengths(store: MemoryStore, lengths: SessionLengths): OffloadStore {
  return {
    beginTurn: async (ref, ask) =>
      turnOver(await store.beginTurn(ref, ask), { session_lengths: lengths }),
    getBody: (ref, memId) => store.getBody(ref, memId),
    noteRecall: (ref, memId) => store.noteRecall(ref, memId),
    describeSession: (ref) => store.describeSession(ref),
    deleteSession: (ref) => store.deleteSession(ref),
  };
}

describe("the learned horizon in the transform", () => {
  // Three turns: a large result settles on the third call (two assistant messages before it).
  const request = JSON.stringify(
    conversation(
      [
        { id: "big", result: jsonBody(90_000) },
        { id: "next", result: "ok" },
      ],
      { model: "claude-sonnet-4-6" },
    ),
  );
  const lengths: SessionLengths = { counts: [[30, 8]] };

  it("prices the gate over the calls sessions that got this far still made", async () => {
    const store = withLengths(new MemoryStore(), lengths);
    const out = await compact({ request, session: "h", store, config: ON });
    const gate = out.decisions.find((d) => d.tool_use_id === "big")!.gate!;
    // call 3 of sessions that all ran 30 calls: 27 more, with the prior's weight
    // Eight sessions of 30 calls ("h" made one: it never reached call 3, so it does not count here).
    expect(gate.inputs.horizon).toBeCloseTo((8 * 27 + W * 5) / (8 + W), 10);
    expect(gate.reason).toContain("over 19.7 turns");
  });

  it("keeps the configured horizon when learning is off or the store supplies nothing", async () => {
    const off = await compact({
      request,
      session: "h",
      store: withLengths(new MemoryStore(), lengths),
      config: { ...ON, tool_result_offload_horizon_learned: false },
    });
    expect(off.decisions.find((d) => d.tool_use_id === "big")!.gate!.inputs.horizon).toBe(5);
    const plain = await compact({ request, session: "h", store: new MemoryStore(), config: ON });
    expect(plain.decisions.find((d) => d.tool_use_id === "big")!.gate!.inputs.horizon).toBe(5);
  });

  it("learns the lengths from the tenant's ended sessions in the store itself, counted once each", async () => {
    let now = Date.UTC(2026, 0, 1);
    const store = new MemoryStore({ now: () => now });
    // Eight sessions of the tenant ran 30 calls each; four ended idle, four were deleted.
    for (let i = 0; i < 8; i++) {
      const ref = { tenant: "default", session: `ended-${i}` };
      for (let t = 1; t <= 30; t++)
        await commitTurn(store, ref, { records: [], recall_declared: false, log: turnLog(t) });
      if (i >= 4) await store.deleteSession(ref);
    }
    // The four deleted have ended; the other four are not idle for an hour yet.
    const fresh = await compact({ request, session: "h", store, config: ON });
    now += SESSION_END_MS;
    // ended-0..3 and "h" (one call) are idle for an hour now; the deleted ones were counted.
    expect(await store.endIdleSessions()).toBe(5);
    await store.endSession({ tenant: "default", session: "ended-0" }); // once
    expect(await store.endIdleSessions()).toBe(0);
    const out = await compact({ request, session: "h2", store, config: ON });
    const gate = out.decisions.find((d) => d.tool_use_id === "big")!.gate!;
    // Eight sessions of 30 calls ("h" made one: it never reached call 3, so it does not count here).
    expect(gate.inputs.horizon).toBeCloseTo((8 * 27 + W * 5) / (8 + W), 10);
    expect(fresh.decisions.find((d) => d.tool_use_id === "big")!.gate!.inputs.horizon).toBeCloseTo(
      (4 * 27 + W * 5) / (4 + W),
      10,
    );
  });

  it("declines where sessions end soon after this point (the stub would not pay back)", async () => {
    // Every session of the tenant ended at call 3: nothing is left to save over.
    const short = withLengths(new MemoryStore(), { counts: [[3, 500]] });
    const out = await compact({ request, session: "h", store: short, config: ON });
    const d = out.decisions.find((x) => x.tool_use_id === "big")!;
    expect(d.gate!.inputs.horizon).toBeLessThan(0.1);
    expect(d.action).toBe("kept");
  });
});
