/**
 * The storage port's contract: one suite, run against every adapter (the in-memory twin in Node, the Worker's
 * DO/R2/KV store in workerd). Each case gets a fresh store from the factory and uses its own session ids.
 */
import { describe, expect, it } from "vitest";
import type { OffloadStore } from "../../src/core/ports.ts";
import type { SessionRef, TurnLog } from "../../src/core/types.ts";
import { bodyMeta, freshRef, record, turnLog } from "../support/records.ts";

const ref = (tenant = "t1"): SessionRef => freshRef("contract", tenant);

/** A turn that offloaded one result. */
function log(turn: number, over: Partial<TurnLog> = {}): TurnLog {
  return turnLog(turn, {
    results: 1,
    offloaded: 1,
    new_decisions: 1,
    tokens_before: 100,
    tokens_after: 10,
    saved_usd: 0.01,
    ...over,
  });
}

const meta = bodyMeta;

const MEM = (c: string) => `trm_${c.repeat(24)}`;

export interface StoreContractOptions {
  /**
   * Stores whose tenant-wide statistics travel in the background: makes the sessions' deltas
   * reach the tenant and every copy read fresh (tenant-wide counts are checked after it).
   */
  settle?: (refs: readonly SessionRef[]) => Promise<void>;
}

export function runStoreContract(
  name: string,
  make: () => OffloadStore | Promise<OffloadStore>,
  options: StoreContractOptions = {},
): void {
  const settle = options.settle ?? (async () => {});
  describe(`store contract: ${name}`, () => {
    it("reads an unknown session as empty", async () => {
      const store = await make();
      const state = await store.load(ref(), ["a", "b"]);
      expect(state.records.size).toBe(0);
      expect(state.recall_declared).toBe(false);
      expect(await store.describeSession(ref())).toBeNull();
      expect(await store.getBody(ref(), MEM("b"))).toBeNull();
    });

    it("returns committed records, only for the ids asked", async () => {
      const store = await make();
      const r = ref();
      const a = record("a");
      const b = record("b", { action: "kept", rendered: null, mem_id: null, tier: "small" });
      const result = await store.commit(r, { records: [a, b], recall_declared: true, log: log(1) });
      expect(result.records.get("a")).toEqual(a);
      expect(result.records.get("b")).toEqual(b);
      const state = await store.load(r, ["a", "zzz"]);
      expect([...state.records.keys()]).toEqual(["a"]);
      expect(state.records.get("a")).toEqual(a);
      expect(state.recall_declared).toBe(true);
    });

    it("keeps the first decision for a tool_use_id (first writer wins)", async () => {
      const store = await make();
      const r = ref();
      const first = record("x", { rendered: "first" });
      await store.commit(r, { records: [first], recall_declared: false, log: log(1) });
      const result = await store.commit(r, {
        records: [record("x", { rendered: "second" })],
        recall_declared: false,
        log: log(2),
      });
      expect(result.records.get("x")?.rendered).toBe("first");
      expect((await store.load(r, ["x"])).records.get("x")?.rendered).toBe("first");
    });

    it("serializes racing commits to one standing record", async () => {
      const store = await make();
      const r = ref();
      const [one, two] = await Promise.all([
        store.commit(r, {
          records: [record("race", { rendered: "one" })],
          recall_declared: false,
          log: log(1),
        }),
        store.commit(r, {
          records: [record("race", { rendered: "two" })],
          recall_declared: false,
          log: log(1),
        }),
      ]);
      expect(one.records.get("race")?.rendered).toBe(two.records.get("race")?.rendered);
      const summary = await store.describeSession(r);
      expect(summary?.calls).toBe(2);
    });

    it("keeps recall_declared once true", async () => {
      const store = await make();
      const r = ref();
      await store.commit(r, { records: [], recall_declared: true, log: log(1) });
      await store.commit(r, { records: [], recall_declared: false, log: log(2) });
      expect((await store.load(r, [])).recall_declared).toBe(true);
    });

    it("stores bodies exactly, including astral characters and megabytes", async () => {
      const store = await make();
      const r = ref();
      const bodies = [
        "",
        "plain",
        'é😀 mixed \u0000 nul and "quotes"\n',
        `${"x".repeat(3_000_000)}😀`,
      ];
      for (const [i, body] of bodies.entries()) {
        await store.putBody(r, body, meta(MEM(String(i)), { chars: body.length }));
      }
      for (const [i, body] of bodies.entries()) {
        const got = await store.getBody(r, MEM(String(i)));
        expect(got?.body.length).toBe(body.length);
        expect(got?.body === body).toBe(true);
        expect(got?.meta).toEqual(meta(MEM(String(i)), { chars: body.length }));
      }
    });

    it("scopes everything by tenant and session", async () => {
      const store = await make();
      const mine = ref("tenant-a");
      const otherSession = { tenant: "tenant-a", session: `${mine.session}-other` };
      const otherTenant = { tenant: "tenant-b", session: mine.session };
      await store.putBody(mine, "secret body", meta(MEM("c")));
      await store.commit(mine, { records: [record("s")], recall_declared: true, log: log(1) });
      for (const other of [otherSession, otherTenant]) {
        expect(await store.getBody(other, MEM("c"))).toBeNull();
        const state = await store.load(other, ["s"]);
        expect(state.records.size).toBe(0);
        expect(state.recall_declared).toBe(false);
        expect(await store.describeSession(other)).toBeNull();
      }
      expect((await store.getBody(mine, MEM("c")))?.body).toBe("secret body");
    });

    it("hands out copies", async () => {
      const store = await make();
      const r = ref();
      await store.commit(r, { records: [record("m")], recall_declared: false, log: log(1) });
      await store.putBody(r, "body", meta(MEM("d")));
      const got = (await store.load(r, ["m"])).records.get("m")!;
      got.rendered = "mutated";
      const body = (await store.getBody(r, MEM("d")))!;
      body.meta.outline = "mutated";
      expect((await store.load(r, ["m"])).records.get("m")?.rendered).toBe("[stub]");
      expect((await store.getBody(r, MEM("d")))?.meta.outline).toBe("text: 1 line");
    });

    it("describes a session: calls, records, turn logs in order, recalls", async () => {
      const store = await make();
      const r = ref();
      await store.commit(r, { records: [record("p")], recall_declared: true, log: log(1) });
      await store.commit(r, {
        records: [record("q", { action: "kept", rendered: null, mem_id: null })],
        recall_declared: true,
        log: log(2),
      });
      await store.noteRecall(r, MEM("a"));
      await store.noteRecall(r, MEM("a"));
      const summary = (await store.describeSession(r))!;
      expect(summary.tenant).toBe(r.tenant);
      expect(summary.session).toBe(r.session);
      expect(summary.calls).toBe(2);
      expect(summary.recalls).toBe(2);
      expect(summary.recall_declared).toBe(true);
      expect(summary.records.map((x) => x.tool_use_id).sort()).toEqual(["p", "q"]);
      expect(summary.turns.map((t) => t.turn)).toEqual([1, 2]);
    });

    it("learns per tool: offloads when committed, recalls by mem_id, for the session and across the tenant", async () => {
      const store = await make();
      const a = ref("learning");
      const b = { tenant: a.tenant, session: `${a.session}-b` };
      const other = { tenant: "another-tenant", session: a.session };
      const bash = (id: string, mem: string) =>
        record(id, { tool_name: "bash", action: "offloaded", mem_id: MEM(mem) });
      await store.putBody(a, "body", meta(MEM("1"), { tool_name: "bash" }));
      await store.commit(a, {
        records: [
          bash("r1", "1"),
          record("r2", { tool_name: "grep", action: "kept", mem_id: null, rendered: null }),
        ],
        recall_declared: true,
        log: log(1),
      });
      // the same decision again (first writer wins) is not a second offload
      await store.commit(a, { records: [bash("r1", "1")], recall_declared: true, log: log(2) });
      await store.noteRecall(a, MEM("1"));
      await store.noteRecall(a, MEM("1"));
      await store.noteRecall(a, MEM("9")); // names no record: counted for no tool
      await store.commit(b, { records: [bash("r3", "2")], recall_declared: true, log: log(1) });
      await settle([a, b, other]);
      const sa = await store.load(a, [], ["bash", "grep", "never-used"]);
      expect(sa.session_tool_stats).toEqual({ bash: { offloaded: 1, recalls: 2 } });
      expect(sa.tool_stats).toEqual({ bash: { offloaded: 2, recalls: 2 } });
      expect((await store.load(b, [], ["bash"])).session_tool_stats).toEqual({
        bash: { offloaded: 1, recalls: 0 },
      });
      expect((await store.load(other, [], ["bash"])).tool_stats).toEqual({});
      expect((await store.load(a, [])).session_tool_stats).toEqual({});
      expect((await store.describeSession(a))?.tool_stats).toEqual({
        bash: { offloaded: 1, recalls: 2 },
      });
    });

    it("keeps a shadow turn's offloads out of the tenant's learning statistics, and takes the turn's decisions", async () => {
      const store = await make();
      const r = ref("shadow-learning");
      const decisions = [
        {
          tool_use_id: "s1",
          tool_name: "bash",
          path: "messages[2].content[0]",
          tier: "large" as const,
          action: "offloaded" as const,
          mem_id: MEM("5"),
          chars: 70_000,
          tokens: 20_000,
          sent_tokens: 200,
          sticky: false,
          reason: "large: test",
        },
      ];
      await store.commit(r, {
        records: [record("s1", { tool_name: "bash", mem_id: MEM("5") })],
        recall_declared: true,
        log: log(1, { shadow: true, gate_fired: 1 }),
        decisions,
      });
      await settle([r]);
      const state = await store.load(r, ["s1"], ["bash"]);
      expect(state.records.get("s1")?.action).toBe("offloaded"); // recorded exactly as a live turn would
      expect(state.tool_stats?.bash?.offloaded ?? 0).toBe(0);
      expect(state.session_tool_stats?.bash?.offloaded).toBe(1);
      // The same offload on a live turn does count.
      await store.commit(r, {
        records: [record("s2", { tool_name: "bash", mem_id: MEM("6") })],
        recall_declared: true,
        log: log(2),
      });
      await settle([r]);
      expect((await store.load(r, [], ["bash"])).tool_stats?.bash?.offloaded).toBe(1);
      expect((await store.describeSession(r))?.turns.map((t) => t.shadow)).toEqual([true, false]);
    });

    it("measures the gap between a session's turns", async () => {
      const store = await make();
      const r = ref();
      expect((await store.load(r, [])).gap_seconds ?? null).toBeNull();
      await store.commit(r, { records: [], recall_declared: false, log: log(1) });
      expect((await store.load(r, [])).gap_seconds ?? null).toBeNull();
      await store.commit(r, { records: [], recall_declared: false, log: log(2) });
      const gap = (await store.load(r, [])).gap_seconds;
      expect(typeof gap).toBe("number");
      expect(gap).toBeGreaterThanOrEqual(0);
      expect(gap).toBeLessThan(60);
    });

    it("deletes a session's state and bodies, and nothing else", async () => {
      const store = await make();
      const r = ref();
      const keep = ref();
      for (const s of [r, keep]) {
        await store.commit(s, { records: [record("d")], recall_declared: true, log: log(1) });
        await store.putBody(s, "to be deleted", meta(MEM("e")));
      }
      await store.deleteSession(r);
      expect(await store.describeSession(r)).toBeNull();
      expect(await store.getBody(r, MEM("e"))).toBeNull();
      expect((await store.load(r, ["d"])).records.size).toBe(0);
      expect((await store.getBody(keep, MEM("e")))?.body).toBe("to be deleted");
      await expect(store.deleteSession(ref())).resolves.toBeUndefined();
    });
  });
}
