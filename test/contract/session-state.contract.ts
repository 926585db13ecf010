/**
 * Contract of the session-state port (the SessionDO and its in-memory twin): first writer wins, counters,
 * config, scoping, and that destroy forgets everything and names the mem_ids it held.
 */
import { describe, expect, it } from "vitest";
import type { TurnUsage } from "../../src/core/billing.ts";
import type { GateResult, SessionRef, TurnDecision, TurnLog } from "../../src/core/types.ts";
import type { ProxyMemo } from "../../src/proxy/port.ts";
import { LAST_DECISIONS_LIMIT } from "../../src/session/report.ts";
import type { SessionStatePort } from "../../src/store/ports.ts";
import { freshRef, record, turnLog } from "../support/records.ts";

const ref = (tenant = "t1"): SessionRef => freshRef("state", tenant);

/** A turn that kept its one result. */
function log(turn: number, over: Partial<TurnLog> = {}): TurnLog {
  return turnLog(turn, {
    results: 1,
    kept: 1,
    new_decisions: 1,
    tokens_before: 10,
    tokens_after: 10,
    ...over,
  });
}

function decision(id: string, over: Partial<TurnDecision> = {}): TurnDecision {
  return {
    tool_use_id: id,
    tool_name: "bash",
    path: "messages[2].content[0]",
    tier: "large",
    action: "offloaded",
    mem_id: MEM("a"),
    chars: 70_000,
    tokens: 20_000,
    sent_tokens: 200,
    sticky: false,
    reason: "large: test",
    ...over,
  };
}

const MEM = (c: string) => `trm_${c.repeat(24)}`;

export function runSessionStateContract(
  name: string,
  make: () => SessionStatePort | Promise<SessionStatePort>,
): void {
  describe(`session-state contract: ${name}`, () => {
    it("reads an unknown session as empty, without creating it", async () => {
      const s = await make();
      const r = ref();
      expect(await s.load(r, ["a"])).toMatchObject({
        records: [],
        recall_declared: false,
        session_tool_stats: {},
        gap_seconds: null,
      });
      expect(await s.getConfig(r)).toEqual({});
      expect(await s.describe(r)).toBeNull();
    });

    it("keeps the first record per id, within one commit and across commits", async () => {
      const s = await make();
      const r = ref();
      const first = await s.commit(r, {
        records: [record("a", { rendered: "one" }), record("a", { rendered: "two" })],
        recall_declared: false,
        log: log(1),
      });
      expect(first.records.map((x) => x.rendered)).toEqual(["one", "one"]);
      const second = await s.commit(r, {
        records: [record("a", { rendered: "three" }), record("b")],
        recall_declared: false,
        log: log(2),
      });
      expect(second.records.map((x) => [x.tool_use_id, x.rendered])).toEqual([
        ["a", "one"],
        ["b", "[stub]"],
      ]);
      expect((await s.load(r, ["a", "b", "c"])).records.map((x) => x.tool_use_id).sort()).toEqual([
        "a",
        "b",
      ]);
    });

    it("loads any number of ids (more than SQLite's bound-parameter cap)", async () => {
      const s = await make();
      const r = ref();
      const many = Array.from({ length: 250 }, (_, i) =>
        record(`id-${i}`, { mem_id: null, action: "kept", rendered: null }),
      );
      await s.commit(r, { records: many, recall_declared: false, log: log(1) });
      const got = await s.load(
        r,
        many.map((m) => m.tool_use_id),
      );
      expect(got.records).toHaveLength(250);
    });

    it("asks for the index entry on the first commit only (then about daily)", async () => {
      const s = await make();
      const r = ref();
      expect(
        (await s.commit(r, { records: [], recall_declared: false, log: log(1) })).index_due,
      ).toBe(true);
      expect(
        (await s.commit(r, { records: [], recall_declared: false, log: log(2) })).index_due,
      ).toBe(false);
    });

    it("stores and replaces the session's config layer", async () => {
      const s = await make();
      const r = ref();
      await s.setConfig(r, {
        tool_result_compaction_enabled: true,
        tool_result_recall_mode: "window",
      });
      expect(await s.getConfig(r)).toEqual({
        tool_result_compaction_enabled: true,
        tool_result_recall_mode: "window",
      });
      await s.setConfig(r, {});
      expect(await s.getConfig(r)).toEqual({});
    });

    it("counts recalls per mem_id and describes the session", async () => {
      const s = await make();
      const r = ref();
      await s.commit(r, {
        records: [record("a", { mem_id: MEM("a") })],
        recall_declared: true,
        log: log(1),
      });
      await s.noteRecall(r, MEM("a"));
      await s.noteRecall(r, MEM("a"));
      await s.noteRecall(r, MEM("b"));
      const d = (await s.describe(r))!;
      expect(d.recalls).toBe(3);
      expect(d.recalls_by_mem_id).toEqual({ [MEM("a")]: 2, [MEM("b")]: 1 });
      expect(d.calls).toBe(1);
      expect(d.recall_declared).toBe(true);
      expect(d.turns).toEqual([{ ...log(1), at: expect.any(Number), recalls: 3 }]);
      expect(d.last_active).toBeGreaterThanOrEqual(d.created_at);
    });

    it("counts offloads per tool on commit, names a recalled mem_id's tool, and measures turn gaps", async () => {
      const s = await make();
      const r = ref();
      const off = (id: string, tool: string, mem: string) =>
        record(id, { tool_name: tool, action: "offloaded", mem_id: MEM(mem) });
      const c1 = await s.commit(r, {
        records: [
          off("a", "bash", "a"),
          off("b", "bash", "b"),
          off("c", "read", "c"),
          record("d", { tool_name: "bash", action: "kept", mem_id: null, rendered: null }),
        ],
        recall_declared: true,
        log: log(1),
      });
      expect(c1.offloads).toEqual({ bash: 2, read: 1 });
      const c2 = await s.commit(r, {
        records: [off("a", "bash", "a")],
        recall_declared: true,
        log: log(2),
      });
      expect(c2.offloads).toEqual({});
      expect(await s.noteRecall(r, MEM("a"))).toBe("bash");
      expect(await s.noteRecall(r, MEM("z"))).toBeNull();
      const loaded = await s.load(r, ["a"], ["bash", "read", "nope"]);
      expect(loaded.session_tool_stats).toEqual({
        bash: { offloaded: 2, recalls: 1 },
        read: { offloaded: 1, recalls: 0 },
      });
      expect(loaded.gap_seconds).toBeGreaterThanOrEqual(0);
      expect((await s.describe(r))?.tool_stats).toEqual({
        bash: { offloaded: 2, recalls: 1 },
        read: { offloaded: 1, recalls: 0 },
      });
    });

    it("reports per turn: commit time, the recalls that followed, live and shadow savings apart, gate verdicts", async () => {
      const s = await make();
      const r = ref();
      expect(await s.report(r)).toBeNull();
      await s.commit(r, {
        records: [
          record("a", { mem_id: MEM("a") }),
          record("k", { action: "kept", mem_id: null, rendered: null }),
        ],
        recall_declared: true,
        log: log(1, { tokens_before: 100, tokens_after: 10, saved_usd: 0.01, gate_fired: 1 }),
      });
      await s.noteRecall(r, MEM("a"));
      await s.noteRecall(r, MEM("a"));
      await s.commit(r, {
        records: [record("b", { mem_id: MEM("b") })],
        recall_declared: true,
        log: log(2, {
          tokens_before: 200,
          tokens_after: 50,
          saved_usd: 0.02,
          shadow: true,
          gate_fired: 1,
          gate_declined: 2,
        }),
      });
      await s.noteRecall(r, MEM("z"));
      const rep = (await s.report(r))!;
      expect(rep).toMatchObject({
        tenant: r.tenant,
        session: r.session,
        calls: 2,
        recall_declared: true,
        config: {},
        recalls: 3,
      });
      expect(
        rep.turns.map((t) => [t.turn, t.shadow, t.recalls, t.gate_fired, t.gate_declined]),
      ).toEqual([
        [1, false, 2, 1, 0],
        [2, true, 1, 1, 2],
      ]);
      expect(rep.turns[1]!.at).toBeGreaterThanOrEqual(rep.turns[0]!.at);
      expect(rep.totals).toEqual({
        turns_logged: 2,
        shadow_turns: 1,
        tokens_before: 300,
        tokens_after: 60,
        saved_tokens: 90,
        saved_usd: 0.01,
        would_save_tokens: 150,
        would_save_usd: 0.02,
        gate_fired: 2,
        gate_declined: 2,
        // No usage was measured on these turns: nothing billed yet.
        billed: expect.objectContaining({ turns_measured: 0, usd: 0, saved_usd: 0 }),
      });
      expect(rep.records).toEqual({ kept: 1, compacted: 0, offloaded: 2, offloaded_recalled: 1 });
      expect(rep.latest).toEqual({ turn: 2, at: rep.turns[1]!.at, shadow: true });
      expect(rep.last_turn).toBeNull(); // no commit sent decisions
      const lean = (await s.report(r, { turns: false }))!;
      expect(lean.turns).toEqual([]);
      expect(lean.totals).toEqual(rep.totals);
    });

    it("keeps the latest turn's decisions with their gate breakdown, replaced by each commit that sends them", async () => {
      const s = await make();
      const r = ref();
      const gate = {
        fire: true,
        net_usd: 0.12,
        reprefill_saving_usd: 0.2,
        stub_carry_cost_usd: 0.01,
        invalidation_cost_usd: 0,
        expected_recall_hop_cost_usd: 0.07,
        tool_declaration_cost_usd: 0,
        reason: "net +$0.12",
        model: "claude-opus-4-5",
      } as GateResult;
      await s.commit(r, {
        records: [],
        recall_declared: false,
        log: log(1),
        decisions: [decision("a", { gate })],
      });
      await s.commit(r, {
        records: [],
        recall_declared: false,
        log: log(2, { shadow: true }),
        decisions: [
          decision("a", { sticky: true, gate }),
          decision("b", { action: "kept", mem_id: null, tier: "hot" }),
        ],
      });
      const last = (await s.report(r))!.last_turn!;
      expect(last).toMatchObject({ turn: 2, shadow: true, decisions_total: 2 });
      expect(last.at).toBeGreaterThan(0);
      expect(last.decisions).toEqual([
        decision("a", { sticky: true, gate }),
        decision("b", { action: "kept", mem_id: null, tier: "hot" }),
      ]);
      // A commit without decisions leaves them; a huge turn keeps the last LAST_DECISIONS_LIMIT.
      await s.commit(r, { records: [], recall_declared: false, log: log(3) });
      expect((await s.report(r))!.last_turn?.turn).toBe(2);
      const many = Array.from({ length: LAST_DECISIONS_LIMIT + 5 }, (_, i) => decision(`m${i}`));
      await s.commit(r, { records: [], recall_declared: false, log: log(4), decisions: many });
      const big = (await s.report(r))!.last_turn!;
      expect(big.decisions_total).toBe(LAST_DECISIONS_LIMIT + 5);
      expect(big.decisions.map((d) => d.tool_use_id)).toEqual(
        many.slice(5).map((d) => d.tool_use_id),
      );
    });

    it("keeps a turn's measured usage once: by seq or turn, idempotent, first report stands", async () => {
      const s = await make();
      const r = ref();
      const usage = (output: number): TurnUsage => ({
        source: "client",
        model: null,
        calls: 1,
        tokens: { input: 10, cache_read: 20, cache_write_5m: 5, cache_write_1h: 0, output },
        first: { input: 10, cache_read: 20, cache_write_5m: 5, cache_write_1h: 0, output },
        answer_output: output,
      });
      expect(await s.recordUsage(r, { seq: 1 }, usage(1))).toBeNull();
      const one = await s.commit(r, { records: [], recall_declared: false, log: log(1) });
      const two = await s.commit(r, { records: [], recall_declared: false, log: log(2) });
      expect(await s.recordUsage(r, { seq: two.turn_seq + 5 }, usage(1))).toEqual({
        status: "unknown_turn",
      });
      expect(await s.recordUsage(r, { turn: 9 }, usage(1))).toEqual({ status: "unknown_turn" });
      expect(await s.recordUsage(r, { turn: 1 }, usage(7))).toMatchObject({
        status: "recorded",
        seq: one.turn_seq,
      });
      expect(await s.recordUsage(r, { seq: one.turn_seq }, usage(7))).toMatchObject({
        status: "unchanged",
      });
      expect(await s.recordUsage(r, { seq: one.turn_seq }, usage(8))).toEqual({
        status: "conflict",
        seq: one.turn_seq,
      });
      // The proxy's usage goes on its own line, and does not overwrite one already there.
      await s.finishProxyTurn(r, {
        turn_seq: two.turn_seq,
        note: { hops: 0, recalls: 0, exhausted: false },
        memos: [],
        usage: { ...usage(3), source: "proxy" },
      });
      await s.finishProxyTurn(r, {
        turn_seq: one.turn_seq,
        note: { hops: 1, recalls: 1, exhausted: false },
        memos: [],
        usage: usage(99),
      });
      const turns = (await s.report(r))!.turns;
      expect(turns[0]!.usage).toMatchObject({ source: "client", answer_output: 7 });
      expect(turns[0]!.proxy).toEqual({ hops: 1, recalls: 1, exhausted: false });
      expect(turns[1]!.usage).toMatchObject({ source: "proxy", answer_output: 3 });
      // Another scope cannot write it.
      expect(
        await s.recordUsage({ tenant: "other", session: r.session }, { turn: 1 }, usage(7)),
      ).toBeNull();
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
      await s.finishProxyTurn(r, {
        turn_seq: first.turn_seq,
        note: { hops: 2, recalls: 2, exhausted: false },
        memos: [memo("a")],
      });
      await s.finishProxyTurn(r, {
        turn_seq: null,
        note: { hops: 0, recalls: 1, exhausted: false },
        memos: [memo("b"), memo("c")],
      });
      const d = (await s.describe(r))!;
      expect(d.turns).toMatchObject([
        { ...log(1), proxy: { hops: 2, recalls: 2, exhausted: false } },
        log(2),
      ]);
      expect(d.turns[1]).not.toHaveProperty("proxy");
      const state = await s.proxyState(r);
      expect(state.config).toEqual({ tool_result_compaction_enabled: true });
      expect(state.memos.map((m) => (m.kind === "recall" ? m.anchors[0] : m.from))).toEqual([
        "a",
        "b",
        "c",
      ]);
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
      for (const other of [
        { tenant: "tenant-b", session: mine.session },
        { tenant: "tenant-a", session: `${mine.session}-2` },
      ]) {
        expect((await s.load(other, ["x"])).records).toEqual([]);
        expect(await s.getConfig(other)).toEqual({});
        expect(await s.describe(other)).toBeNull();
        expect(await s.report(other)).toBeNull();
      }
    });

    it("destroys a session and names the mem_ids its records held", async () => {
      const s = await make();
      const r = ref();
      const keep = ref();
      await s.commit(r, {
        records: [
          record("a", { mem_id: MEM("a") }),
          record("b", { mem_id: null, action: "kept", rendered: null }),
          record("c", { mem_id: MEM("a") }),
        ],
        recall_declared: true,
        log: log(1),
      });
      await s.commit(keep, { records: [record("a")], recall_declared: false, log: log(1) });
      expect(await s.destroy(r)).toEqual([MEM("a")]);
      expect(await s.describe(r)).toBeNull();
      expect(await s.report(r)).toBeNull();
      expect((await s.load(r, ["a"])).records).toEqual([]);
      expect(await s.getConfig(r)).toEqual({});
      expect(await s.describe(keep)).not.toBeNull();
      expect(await s.destroy(ref())).toEqual([]);
      // A destroyed session starts afresh.
      await s.commit(r, {
        records: [record("a", { rendered: "new" })],
        recall_declared: false,
        log: log(1),
      });
      expect((await s.load(r, ["a"])).records[0]?.rendered).toBe("new");
    });
  });
}
