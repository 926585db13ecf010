/**
 * The storage port's contract (the core's `OffloadStore` and its `Turn`): one suite, run against every
 * store (the in-memory one in Node, the SQL one on node:sqlite, the Worker's DO/R2/KV store in workerd, the
 * Agent's). Each case gets a fresh store from the factory and uses its own session ids.
 */
import { describe, expect, it } from "vitest";
import type { OffloadStore, Turn, TurnCommit } from "../core/ports.ts";
import type { SessionRef, TurnLog } from "../core/types.ts";
import { bodyMeta, freshRef, putBody, record, startOf, turnLog } from "./records.ts";

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

/** One whole turn: begun (asking the commit's ids), committed, finished. */
async function turn(
  store: OffloadStore,
  r: SessionRef,
  commit: TurnCommit,
): Promise<{ records: ReadonlyMap<string, unknown>; turn: Turn }> {
  const t = await startOf(
    store,
    r,
    commit.records.map((x) => x.tool_use_id),
  );
  const { records } = await t.commit(commit);
  await t.finish();
  return { records, turn: t };
}

export interface StoreContractOptions {
  /**
   * Stores whose tenant-wide learning travels in the background: makes what the sessions added reach the
   * tenant, and the next turns read it fresh (tenant-wide counts are checked after it).
   */
  settle?: (refs: readonly SessionRef[]) => Promise<void>;
}

/**
 * The store's contract (the core's `OffloadStore` and its `Turn`), as vitest cases: a fresh store per case
 * from `make`; `settle` for a store whose tenant-wide learning travels in the background.
 */
export function runStoreContract(
  name: string,
  make: () => OffloadStore | Promise<OffloadStore>,
  options: StoreContractOptions = {},
): void {
  const settle = options.settle ?? (async () => {});
  describe(`store contract: ${name}`, () => {
    it("reads an unknown session as empty", async () => {
      const store = await make();
      const state = await startOf(store, ref(), ["a", "b"]);
      expect(state.records.size).toBe(0);
      expect(state.recall_declared).toBe(false);
      expect(state.config).toEqual({});
      expect(state.memos).toEqual([]);
      expect(state.gap_seconds).toBeNull();
      expect(state.idle_seconds).toBeNull();
      expect(await state.read(["a", "c"])).toEqual(new Map());
      expect(await store.describeSession(ref())).toBeNull();
      expect(await store.getBody(ref(), MEM("b"))).toBeNull();
    });

    it("returns committed records, only for the ids asked", async () => {
      const store = await make();
      const r = ref();
      const a = record("a");
      const b = record("b", { action: "kept", rendered: null, mem_id: null, tier: "small" });
      const result = await turn(store, r, { records: [a, b], recall_declared: true, log: log(1) });
      expect(result.records.get("a")).toEqual(a);
      expect(result.records.get("b")).toEqual(b);
      const state = await startOf(store, r, ["a", "zzz"]);
      expect([...state.records.keys()]).toEqual(["a"]);
      expect(state.records.get("a")).toEqual(a);
      expect(state.recall_declared).toBe(true);
      // Ids the begin was not asked are read when the turn needs them.
      expect([...(await state.read(["a", "b", "zzz"])).keys()].sort()).toEqual(["a", "b"]);
    });

    it("keeps the first decision for a tool_use_id (first writer wins)", async () => {
      const store = await make();
      const r = ref();
      const first = record("x", { rendered: "first" });
      await turn(store, r, { records: [first], recall_declared: false, log: log(1) });
      const result = await turn(store, r, {
        records: [record("x", { rendered: "second" })],
        recall_declared: false,
        log: log(2),
      });
      expect((result.records.get("x") as { rendered: string }).rendered).toBe("first");
      expect((await startOf(store, r, ["x"])).records.get("x")?.rendered).toBe("first");
    });

    it("serializes racing turns to one standing record, each with a line of its own", async () => {
      const store = await make();
      const r = ref();
      const [a, b] = [await startOf(store, r, ["race"]), await startOf(store, r, ["race"])];
      const [one, two] = await Promise.all([
        a.commit({
          records: [record("race", { rendered: "one" })],
          recall_declared: false,
          log: log(1),
        }),
        b.commit({
          records: [record("race", { rendered: "two" })],
          recall_declared: false,
          log: log(1),
        }),
      ]);
      expect(one.records.get("race")?.rendered).toBe(two.records.get("race")?.rendered);
      await Promise.all([a.finish(), b.finish()]);
      expect(a.seq).not.toBeNull();
      expect(b.seq).not.toBeNull();
      expect(a.seq).not.toBe(b.seq);
      expect((await store.describeSession(r))?.calls).toBe(2);
    });

    it("keeps recall_declared once true", async () => {
      const store = await make();
      const r = ref();
      await turn(store, r, { records: [], recall_declared: true, log: log(1) });
      await turn(store, r, { records: [], recall_declared: false, log: log(2) });
      expect((await startOf(store, r)).recall_declared).toBe(true);
    });

    it("writes a steady turn's line at its finish, with what the finish brings, and never reuses a seq", async () => {
      const store = await make();
      const r = ref();
      const first = await turn(store, r, {
        records: [record("s")],
        recall_declared: true,
        log: log(1),
      });
      // A commit with records is written at once: its line has a seq before the finish.
      expect(first.turn.seq).not.toBeNull();
      const steady = await startOf(store, r, ["s"]);
      const committed = await steady.commit({ records: [], recall_declared: true, log: log(2) });
      expect(committed.records.size).toBe(0);
      // Nothing new to save: the line waits for the finish.
      expect(steady.seq).toBeNull();
      expect((await store.describeSession(r))?.turns.map((t) => t.turn)).toEqual([1]);
      await steady.finish({ proxy: { hops: 1, recalls: 1, exhausted: false } });
      expect(steady.seq).toBeGreaterThan(first.turn.seq!);
      const turns = (await store.describeSession(r))!.turns;
      expect(turns.map((t) => t.turn)).toEqual([1, 2]);
      expect(turns[1]!.proxy).toEqual({ hops: 1, recalls: 1, exhausted: false });
      // A second finish writes nothing more.
      await steady.finish({ proxy: { hops: 9, recalls: 9, exhausted: true } });
      expect((await store.describeSession(r))!.turns).toHaveLength(2);
      // After a delete, the session starts afresh, and its seqs go on from where they were.
      await store.deleteSession(r);
      const after = await turn(store, r, { records: [], recall_declared: false, log: log(1) });
      expect(after.turn.seq).toBeGreaterThan(steady.seq!);
    });

    it("refuses a commit (and its bodies' records) of a turn the session's delete overtook", async () => {
      const store = await make();
      const r = ref();
      await turn(store, r, { records: [record("a")], recall_declared: true, log: log(1) });
      const late = await startOf(store, r, ["b"]);
      await store.deleteSession(r);
      await expect(
        late.commit({ records: [record("b")], recall_declared: true, log: log(2) }),
      ).rejects.toMatchObject({ type: "storage_error" });
      // The session stays gone: the late turn brought nothing back.
      expect(await store.describeSession(r)).toBeNull();
      // A steady turn that began before the delete logs nothing either.
      const steady = await startOf(store, r);
      await store.deleteSession(r);
      await steady.commit({ records: [], recall_declared: false, log: log(3) });
      await steady.finish();
      expect(await store.describeSession(r)).toBeNull();
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
      for (const [i, body] of bodies.entries())
        await putBody(store, r, body, meta(MEM(String(i)), { chars: body.length }));
      const t = await startOf(store, r);
      for (const [i, body] of bodies.entries()) {
        const got = await store.getBody(r, MEM(String(i)));
        expect(got?.body.length).toBe(body.length);
        expect(got?.body === body).toBe(true);
        expect(got?.meta).toEqual(meta(MEM(String(i)), { chars: body.length }));
        expect(await t.hasBody(MEM(String(i)))).toBe(true);
        expect((await t.getBody(MEM(String(i))))?.body === body).toBe(true);
      }
      expect(await t.hasBody(MEM("z"))).toBe(false);
      expect(await t.hasBody("not a mem_id")).toBe(false);
    });

    it("scopes everything by tenant and session", async () => {
      const store = await make();
      const mine = ref("tenant-a");
      const otherSession = { tenant: "tenant-a", session: `${mine.session}-other` };
      const otherTenant = { tenant: "tenant-b", session: mine.session };
      await putBody(store, mine, "secret body", meta(MEM("c")));
      await turn(store, mine, { records: [record("s")], recall_declared: true, log: log(1) });
      for (const other of [otherSession, otherTenant]) {
        expect(await store.getBody(other, MEM("c"))).toBeNull();
        const state = await startOf(store, other, ["s"]);
        expect(state.records.size).toBe(0);
        expect(state.recall_declared).toBe(false);
        expect(await state.hasBody(MEM("c"))).toBe(false);
        expect(await store.describeSession(other)).toBeNull();
      }
      expect((await store.getBody(mine, MEM("c")))?.body).toBe("secret body");
    });

    it("hands out copies", async () => {
      const store = await make();
      const r = ref();
      await turn(store, r, { records: [record("m")], recall_declared: false, log: log(1) });
      await putBody(store, r, "body", meta(MEM("d")));
      const got = (await startOf(store, r, ["m"])).records.get("m")!;
      (got as { rendered: string }).rendered = "mutated";
      const body = (await store.getBody(r, MEM("d")))!;
      body.meta.outline = "mutated";
      expect((await startOf(store, r, ["m"])).records.get("m")?.rendered).toBe("[stub]");
      expect((await store.getBody(r, MEM("d")))?.meta.outline).toBe("text: 1 line");
    });

    it("describes a session: calls, records, turn logs in order, recalls", async () => {
      const store = await make();
      const r = ref();
      await turn(store, r, { records: [record("p")], recall_declared: true, log: log(1) });
      await turn(store, r, {
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
      expect(summary.records.map((x) => x.tool_use_id)).toEqual(["p", "q"]);
      expect(summary.turns.map((t) => t.turn)).toEqual([1, 2]);
    });

    it("learns per tool: offloads when committed, recalls by mem_id, for the session and across the tenant", async () => {
      const store = await make();
      const a = ref("learning");
      const b = { tenant: a.tenant, session: `${a.session}-b` };
      const other = { tenant: "another-tenant", session: a.session };
      const bash = (id: string, mem: string) =>
        record(id, { tool_name: "bash", action: "offloaded", mem_id: MEM(mem) });
      await putBody(store, a, "body", meta(MEM("1"), { tool_name: "bash" }));
      await turn(store, a, {
        records: [
          bash("r1", "1"),
          record("r2", { tool_name: "grep", action: "kept", mem_id: null, rendered: null }),
        ],
        recall_declared: true,
        log: log(1),
      });
      // the same decision again (first writer wins) is not a second offload
      await turn(store, a, { records: [bash("r1", "1")], recall_declared: true, log: log(2) });
      await store.noteRecall(a, MEM("1"));
      await store.noteRecall(a, MEM("1"));
      await store.noteRecall(a, MEM("9")); // names no record: counted for no tool
      await turn(store, b, { records: [bash("r3", "2")], recall_declared: true, log: log(1) });
      await settle([a, b, other]);
      const sa = await startOf(store, a, [], ["bash", "grep", "never-used"]);
      expect(sa.session_tool_stats).toEqual({ bash: { offloaded: 1, recalls: 2 } });
      expect(sa.tool_stats).toEqual({ bash: { offloaded: 2, recalls: 2 } });
      expect((await startOf(store, b, [], ["bash"])).session_tool_stats).toEqual({
        bash: { offloaded: 1, recalls: 0 },
      });
      expect((await startOf(store, other, [], ["bash"])).tool_stats).toEqual({});
      expect((await startOf(store, a)).session_tool_stats).toEqual({});
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
      await turn(store, r, {
        records: [record("s1", { tool_name: "bash", mem_id: MEM("5") })],
        recall_declared: true,
        log: log(1, { shadow: true, gate_fired: 1 }),
        decisions,
      });
      await settle([r]);
      const state = await startOf(store, r, ["s1"], ["bash"]);
      expect(state.records.get("s1")?.action).toBe("offloaded"); // recorded exactly as a live turn would
      expect(state.tool_stats.bash?.offloaded ?? 0).toBe(0);
      expect(state.session_tool_stats.bash?.offloaded).toBe(1);
      // The same offload on a live turn does count.
      await turn(store, r, {
        records: [record("s2", { tool_name: "bash", mem_id: MEM("6") })],
        recall_declared: true,
        log: log(2),
      });
      await settle([r]);
      expect((await startOf(store, r, [], ["bash"])).tool_stats.bash?.offloaded).toBe(1);
      expect((await store.describeSession(r))?.turns.map((t) => t.shadow)).toEqual([true, false]);
    });

    it("measures the gap between a session's turns, and how long it has been idle", async () => {
      const store = await make();
      const r = ref();
      expect((await startOf(store, r)).gap_seconds).toBeNull();
      await turn(store, r, { records: [], recall_declared: false, log: log(1) });
      const one = await startOf(store, r);
      expect(one.gap_seconds).toBeNull();
      expect(one.idle_seconds).toBeGreaterThanOrEqual(0);
      await turn(store, r, { records: [], recall_declared: false, log: log(2) });
      const gap = (await startOf(store, r)).gap_seconds;
      expect(typeof gap).toBe("number");
      expect(gap).toBeGreaterThanOrEqual(0);
      expect(gap).toBeLessThan(60);
    });

    it("learns the tenant's ended sessions' lengths: a deleted session counts once, later turns start with them", async () => {
      const store = await make();
      const tenant = `lengths-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
      const [a, b, c] = [ref(tenant), ref(tenant), ref(tenant)] as const;
      for (let t = 1; t <= 3; t++)
        await turn(store, a, { records: [], recall_declared: false, log: log(t) });
      for (let t = 1; t <= 2; t++)
        await turn(store, b, { records: [], recall_declared: false, log: log(t) });
      await turn(store, c, { records: [], recall_declared: false, log: log(1) });
      await settle([c]);
      expect((await startOf(store, c)).session_lengths).toBeUndefined(); // none has ended
      await store.deleteSession(a);
      await store.deleteSession(b);
      await store.deleteSession(b); // deleted again: counted once
      await settle([c]);
      expect((await startOf(store, c)).session_lengths).toEqual({
        counts: [
          [2, 1],
          [3, 1],
        ],
      });
      expect((await startOf(store, ref(`${tenant}-other`))).session_lengths).toBeUndefined();
    });

    it("deletes a session's state and bodies, and nothing else", async () => {
      const store = await make();
      const r = ref();
      const keep = ref();
      for (const s of [r, keep]) {
        await turn(store, s, { records: [record("d")], recall_declared: true, log: log(1) });
        await putBody(store, s, "to be deleted", meta(MEM("e")));
      }
      await store.deleteSession(r);
      expect(await store.describeSession(r)).toBeNull();
      expect(await store.getBody(r, MEM("e"))).toBeNull();
      expect((await startOf(store, r, ["d"])).records.size).toBe(0);
      expect((await store.getBody(keep, MEM("e")))?.body).toBe("to be deleted");
      await expect(store.deleteSession(ref())).resolves.toBeUndefined();
    });
  });
}
