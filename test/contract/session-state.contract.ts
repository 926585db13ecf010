/**
 * Contract of the session-state port (the SessionDO and its in-memory twin): first writer wins, counters,
 * config, scoping, and that destroy forgets everything and names the mem_ids it held.
 */
import { describe, expect, it } from "vitest";
import type { SessionRef, TurnLog } from "../../src/core/types.ts";
import type { ProxyMemo, SessionStatePort } from "../../src/store/parts.ts";
import { record } from "./store.contract.ts";

let n = 0;
function ref(tenant = "t1"): SessionRef {
  n++;
  return { tenant, session: `state-${Date.now().toString(36)}-${n}` };
}

function log(turn: number): TurnLog {
  return { turn, results: 1, kept: 1, compacted: 0, offloaded: 0, new_decisions: 1, tokens_before: 10, tokens_after: 10, saved_usd: 0, errors: 0 };
}

const MEM = (c: string) => `trm_${c.repeat(24)}`;

export function runSessionStateContract(name: string, make: () => SessionStatePort | Promise<SessionStatePort>): void {
  describe(`session-state contract: ${name}`, () => {
    it("reads an unknown session as empty, without creating it", async () => {
      const s = await make();
      const r = ref();
      expect(await s.load(r, ["a"])).toEqual({ records: [], recall_declared: false, session_tool_stats: {}, gap_seconds: null });
      expect(await s.getConfig(r)).toEqual({});
      expect(await s.describe(r)).toBeNull();
    });

    it("keeps the first record per id, within one commit and across commits", async () => {
      const s = await make();
      const r = ref();
      const first = await s.commit(r, { records: [record("a", { rendered: "one" }), record("a", { rendered: "two" })], recall_declared: false, log: log(1) });
      expect(first.records.map((x) => x.rendered)).toEqual(["one", "one"]);
      const second = await s.commit(r, { records: [record("a", { rendered: "three" }), record("b")], recall_declared: false, log: log(2) });
      expect(second.records.map((x) => [x.tool_use_id, x.rendered])).toEqual([
        ["a", "one"],
        ["b", "[stub]"],
      ]);
      expect((await s.load(r, ["a", "b", "c"])).records.map((x) => x.tool_use_id).sort()).toEqual(["a", "b"]);
    });

    it("loads any number of ids (more than SQLite's bound-parameter cap)", async () => {
      const s = await make();
      const r = ref();
      const many = Array.from({ length: 250 }, (_, i) => record(`id-${i}`, { mem_id: null, action: "kept", rendered: null }));
      await s.commit(r, { records: many, recall_declared: false, log: log(1) });
      const got = await s.load(r, many.map((m) => m.tool_use_id));
      expect(got.records).toHaveLength(250);
    });

    it("asks for the index entry on the first commit only (then about daily)", async () => {
      const s = await make();
      const r = ref();
      expect((await s.commit(r, { records: [], recall_declared: false, log: log(1) })).index_due).toBe(true);
      expect((await s.commit(r, { records: [], recall_declared: false, log: log(2) })).index_due).toBe(false);
    });

    it("stores and replaces the session's config layer", async () => {
      const s = await make();
      const r = ref();
      await s.setConfig(r, { tool_result_compaction_enabled: true, tool_result_recall_mode: "window" });
      expect(await s.getConfig(r)).toEqual({ tool_result_compaction_enabled: true, tool_result_recall_mode: "window" });
      await s.setConfig(r, {});
      expect(await s.getConfig(r)).toEqual({});
    });

    it("counts recalls per mem_id and describes the session", async () => {
      const s = await make();
      const r = ref();
      await s.commit(r, { records: [record("a", { mem_id: MEM("a") })], recall_declared: true, log: log(1) });
      await s.noteRecall(r, MEM("a"));
      await s.noteRecall(r, MEM("a"));
      await s.noteRecall(r, MEM("b"));
      const d = (await s.describe(r))!;
      expect(d.recalls).toBe(3);
      expect(d.recalls_by_mem_id).toEqual({ [MEM("a")]: 2, [MEM("b")]: 1 });
      expect(d.calls).toBe(1);
      expect(d.recall_declared).toBe(true);
      expect(d.turns).toEqual([log(1)]);
      expect(d.last_active).toBeGreaterThanOrEqual(d.created_at);
    });

    it("counts offloads per tool on commit, names a recalled mem_id's tool, and measures turn gaps", async () => {
      const s = await make();
      const r = ref();
      const off = (id: string, tool: string, mem: string) => record(id, { tool_name: tool, action: "offloaded", mem_id: MEM(mem) });
      const c1 = await s.commit(r, { records: [off("a", "bash", "a"), off("b", "bash", "b"), off("c", "read", "c"), record("d", { tool_name: "bash", action: "kept", mem_id: null, rendered: null })], recall_declared: true, log: log(1) });
      expect(c1.offloads).toEqual({ bash: 2, read: 1 });
      const c2 = await s.commit(r, { records: [off("a", "bash", "a")], recall_declared: true, log: log(2) });
      expect(c2.offloads).toEqual({});
      expect(await s.noteRecall(r, MEM("a"))).toBe("bash");
      expect(await s.noteRecall(r, MEM("z"))).toBeNull();
      const loaded = await s.load(r, ["a"], ["bash", "read", "nope"]);
      expect(loaded.session_tool_stats).toEqual({ bash: { offloaded: 2, recalls: 1 }, read: { offloaded: 1, recalls: 0 } });
      expect(loaded.gap_seconds).toBeGreaterThanOrEqual(0);
      expect((await s.describe(r))?.tool_stats).toEqual({ bash: { offloaded: 2, recalls: 1 }, read: { offloaded: 1, recalls: 0 } });
    });

    it("reads the proxy state of an unknown session as empty, without creating it", async () => {
      const s = await make();
      const r = ref();
      expect(await s.proxyState(r)).toEqual({ config: {}, memos: [] });
      expect(await s.describe(r)).toBeNull();
    });

    it("notes a proxied call's hops on its own turn line and keeps its memos in order", async () => {
      const s = await make();
      const r = ref();
      await s.setConfig(r, { tool_result_compaction_enabled: true });
      const first = await s.commit(r, { records: [], recall_declared: true, log: log(1) });
      const second = await s.commit(r, { records: [], recall_declared: true, log: log(2) });
      expect(second.turn_seq).toBeGreaterThan(first.turn_seq);
      const memo = (anchor: string): ProxyMemo => ({
        kind: "recall",
        format: "anthropic",
        anchors: [anchor],
        calls: [{ id: `r-${anchor}`, arguments: '{"mem_id":"trm_x"}' }],
        params: { mode: "both", max_chars: 50000, window: 300 },
      });
      await s.finishProxyTurn(r, { turn_seq: first.turn_seq, note: { hops: 2, recalls: 2, exhausted: false }, memos: [memo("a")] });
      await s.finishProxyTurn(r, { turn_seq: null, note: { hops: 0, recalls: 1, exhausted: false }, memos: [memo("b"), memo("c")] });
      const d = (await s.describe(r))!;
      expect(d.turns).toEqual([{ ...log(1), proxy: { hops: 2, recalls: 2, exhausted: false } }, log(2)]);
      const state = await s.proxyState(r);
      expect(state.config).toEqual({ tool_result_compaction_enabled: true });
      expect(state.memos.map((m) => (m.kind === "recall" ? m.anchors[0] : m.from))).toEqual(["a", "b", "c"]);
      expect(state.memos[0]).toEqual(memo("a"));
      // Another scope sees none of it; destroy forgets it.
      expect((await s.proxyState({ tenant: "other", session: r.session })).memos).toEqual([]);
      await s.destroy(r);
      expect(await s.proxyState(r)).toEqual({ config: {}, memos: [] });
    });

    it("scopes by tenant and session", async () => {
      const s = await make();
      const mine = ref("tenant-a");
      await s.commit(mine, { records: [record("x")], recall_declared: true, log: log(1) });
      await s.setConfig(mine, { tool_result_compaction_enabled: true });
      for (const other of [{ tenant: "tenant-b", session: mine.session }, { tenant: "tenant-a", session: `${mine.session}-2` }]) {
        expect((await s.load(other, ["x"])).records).toEqual([]);
        expect(await s.getConfig(other)).toEqual({});
        expect(await s.describe(other)).toBeNull();
      }
    });

    it("destroys a session and names the mem_ids its records held", async () => {
      const s = await make();
      const r = ref();
      const keep = ref();
      await s.commit(r, { records: [record("a", { mem_id: MEM("a") }), record("b", { mem_id: null, action: "kept", rendered: null }), record("c", { mem_id: MEM("a") })], recall_declared: true, log: log(1) });
      await s.commit(keep, { records: [record("a")], recall_declared: false, log: log(1) });
      expect(await s.destroy(r)).toEqual([MEM("a")]);
      expect(await s.describe(r)).toBeNull();
      expect((await s.load(r, ["a"])).records).toEqual([]);
      expect(await s.getConfig(r)).toEqual({});
      expect(await s.describe(keep)).not.toBeNull();
      expect(await s.destroy(ref())).toEqual([]);
      // A destroyed session starts afresh.
      await s.commit(r, { records: [record("a", { rendered: "new" })], recall_declared: false, log: log(1) });
      expect((await s.load(r, ["a"])).records[0]?.rendered).toBe("new");
    });
  });
}
