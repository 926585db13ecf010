/**
 * Contract of the session state (`SessionState`: the SQL class on node:sqlite, the SessionDO that hosts it,
 * the in-memory twin): first writer wins, the lease, turn lines with a seq never issued twice, usage kept
 * once and learned into the session's calibration, the session's own statistics, memos, config, scoping,
 * and a destroy that forgets everything and names the mem_ids it held.
 */
import { describe, expect, it } from "vitest";
import type { TurnUsage } from "../core/billing.ts";
import { CALIBRATION_MIN_TURNS } from "../core/calibration.ts";
import type { TurnAsk } from "../core/ports.ts";
import type { GateResult, ProxyMemo, SessionRef, TurnDecision, TurnLog } from "../core/types.ts";
import type { SessionCommit, SessionState, TurnLease } from "../store/ports.ts";
import { LAST_DECISIONS_LIMIT } from "../store/report.ts";
import { SESSION_END_MS } from "../store/session-lengths.ts";
import { freshRef, record, turnLog } from "./records.ts";

const ref = (tenant = "t1"): SessionRef => freshRef("state", tenant);

/** A turn that kept its one result, with an estimate the calibration can learn from. */
function log(turn: number, over: Partial<TurnLog> = {}): TurnLog {
  return turnLog(turn, {
    results: 1,
    kept: 1,
    new_decisions: 1,
    tokens_before: 10,
    tokens_after: 10,
    estimate: {
      sent: { request: 1000 },
      removed: {},
      cached_share: 0,
      ttl: "5m",
      calibrated: false,
      model: "claude-sonnet-4-6",
    },
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

const usage = (output: number, input = 10): TurnUsage => ({
  source: "client",
  model: null,
  calls: 1,
  tokens: { input, cache_read: 20, cache_write_5m: 5, cache_write_1h: 0, output },
  first: { input, cache_read: 20, cache_write_5m: 5, cache_write_1h: 0, output },
  answer_output: output,
});

const MEM = (c: string) => `trm_${c.repeat(24)}`;

const ASK: TurnAsk = { ids: [], names: [] };

export interface SessionStateHooks {
  /** Makes the session look idle for `ms` more (its last activity moved back, or the clock on). */
  idle(s: SessionState, r: SessionRef, ms: number): Promise<void>;
}

/**
 * The session state's contract (`SessionState`: first writer wins, leases, seqs never reused, usage, memos,
 * the lifecycle), as vitest cases: a fresh session state per case from `make`.
 */
export function runSessionStateContract(
  name: string,
  make: () => SessionState | Promise<SessionState>,
  hooks: SessionStateHooks,
): void {
  describe(`session-state contract: ${name}`, () => {
    /** A turn's lease, as its begin gives it. */
    const lease = async (s: SessionState, r: SessionRef): Promise<TurnLease> =>
      (await s.begin(r, ASK)).lease!;
    /** A whole turn's commit under a fresh lease. */
    const commit = async (
      s: SessionState,
      r: SessionRef,
      c: Partial<Omit<SessionCommit, "lease">> & { log: TurnLog },
    ) => s.commit(r, { records: [], recall_declared: false, ...c, lease: await lease(s, r) });

    it("reads an unknown session as empty, without creating it", async () => {
      const s = await make();
      const r = ref();
      const start = await s.begin(r, { ids: ["a"], names: ["bash"], anchors: ["x"] });
      expect(start).toMatchObject({
        config: {},
        records: [],
        answered: 1,
        recall_declared: false,
        memos: [],
        session_tool_stats: {},
        calibrations: {},
        gap_seconds: null,
        idle_seconds: null,
      });
      expect(start.lease).toEqual({ epoch: 0, at: expect.any(Number) });
      expect(await s.getConfig(r)).toEqual({});
      expect(await s.describe(r)).toBeNull();
      expect(await s.report(r)).toBeNull();
      expect(await s.records(r, ["a"])).toEqual({ records: [], answered: 1 });
    });

    it("keeps the first record per id, within one commit and across commits", async () => {
      const s = await make();
      const r = ref();
      const first = await commit(s, r, {
        records: [record("a", { rendered: "one" }), record("a", { rendered: "two" })],
        log: log(1),
      });
      expect(first.records.map((x) => x.rendered)).toEqual(["one", "one"]);
      const second = await commit(s, r, {
        records: [record("a", { rendered: "three" }), record("b")],
        log: log(2),
      });
      expect(second.records.map((x) => [x.tool_use_id, x.rendered])).toEqual([
        ["a", "one"],
        ["b", "[stub]"],
      ]);
      const start = await s.begin(r, { ids: ["a", "b", "c"], names: [] });
      expect(start.records.map((x) => x.tool_use_id).sort()).toEqual(["a", "b"]);
    });

    it("gives each line a seq never issued before in the session, across a destroy too", async () => {
      const s = await make();
      const r = ref();
      const seqs: number[] = [];
      for (let t = 1; t <= 3; t++) seqs.push((await commit(s, r, { log: log(t) })).seq);
      await s.destroy(r);
      await s.purged(r);
      seqs.push((await commit(s, r, { log: log(1) })).seq);
      for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBeGreaterThan(seqs[i - 1]!);
    });

    it("reads any number of ids (more than SQLite's bound-parameter cap)", async () => {
      const s = await make();
      const r = ref();
      const many = Array.from({ length: 250 }, (_, i) =>
        record(`id-${i}`, { mem_id: null, action: "kept", rendered: null }),
      );
      await commit(s, r, { records: many, log: log(1) });
      const ids = many.map((m) => m.tool_use_id);
      const start = await s.begin(r, { ids, names: [] });
      expect(start.records).toHaveLength(250);
      expect(start.answered).toBe(250);
      expect((await s.records(r, [...ids, "nope"])).records).toHaveLength(250);
    });

    it("refuses a commit under a lease a destroy overtook, and notes its bodies for deletion", async () => {
      const s = await make();
      const r = ref();
      await commit(s, r, { records: [record("a", { mem_id: MEM("a") })], log: log(1) });
      const old = await lease(s, r);
      expect(await s.destroy(r)).toEqual([MEM("a")]);
      // While the purge runs, a turn gets no lease.
      expect((await s.begin(r, ASK)).lease).toBeNull();
      const refused = await s.commit(r, {
        records: [record("b", { mem_id: MEM("b") })],
        recall_declared: true,
        log: log(2),
        lease: old,
      });
      expect(refused).toMatchObject({ records: [], refused: "deleted" });
      expect(
        await s.addRecords(r, { records: [record("c", { mem_id: MEM("c") })], lease: old }),
      ).toMatchObject({ records: [], refused: "deleted" });
      await s.purged(r);
      expect(await s.describe(r)).toBeNull();
      // The refused turn's body is noted: a record naming it does not stand until it is deleted.
      const fresh = await commit(s, r, {
        records: [record("d", { mem_id: MEM("b") }), record("e", { mem_id: MEM("e") })],
        log: log(1),
      });
      expect(fresh.records.map((x) => x.tool_use_id)).toEqual(["e"]);
      // A lease from a begin that ran too long is refused as expired.
      const now = await lease(s, r);
      expect(
        await s.commit(r, {
          records: [],
          recall_declared: false,
          log: log(2),
          lease: { ...now, at: now.at - 6 * 60 * 1000 },
        }),
      ).toMatchObject({ refused: "expired" });
    });

    it("asks for the index entry on the first commit only (then about daily)", async () => {
      const s = await make();
      const r = ref();
      expect((await commit(s, r, { log: log(1) })).index_due).toBe(true);
      expect((await commit(s, r, { log: log(2) })).index_due).toBe(false);
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
      expect((await s.begin(r, ASK)).config).toEqual({
        tool_result_compaction_enabled: true,
        tool_result_recall_mode: "window",
      });
      await s.setConfig(r, {});
      expect(await s.getConfig(r)).toEqual({});
    });

    it("counts recalls per mem_id and per tool, and measures turn gaps", async () => {
      const s = await make();
      const r = ref();
      const off = (id: string, tool: string, mem: string) =>
        record(id, { tool_name: tool, action: "offloaded", mem_id: MEM(mem) });
      const c1 = await commit(s, r, {
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
      const c2 = await commit(s, r, { records: [off("a", "bash", "a")], log: log(2) });
      expect(c2.offloads).toEqual({});
      expect(await s.noteRecall(r, MEM("a"))).toBe("bash");
      expect(await s.noteRecall(r, MEM("z"))).toBeNull();
      const start = await s.begin(r, { ids: ["a"], names: ["bash", "read", "nope"] });
      expect(start.session_tool_stats).toEqual({
        bash: { offloaded: 2, recalls: 1 },
        read: { offloaded: 1, recalls: 0 },
      });
      expect(start.gap_seconds).toBeGreaterThanOrEqual(0);
      expect(start.idle_seconds).toBeGreaterThanOrEqual(0);
      const d = (await s.describe(r))!;
      expect(d.tool_stats).toEqual({
        bash: { offloaded: 2, recalls: 1 },
        read: { offloaded: 1, recalls: 0 },
      });
      expect(d.recalls).toBe(2);
      expect(d.recalls_by_mem_id).toEqual({ [MEM("a")]: 1, [MEM("z")]: 1 });
      expect(d.calls).toBe(2);
      expect(d.recall_declared).toBe(true);
      // Recalls count on the latest logged turn.
      expect(d.turns.map((t) => (t as { recalls?: number }).recalls)).toEqual([0, 2]);
      expect(d.last_active).toBeGreaterThanOrEqual(d.created_at);
    });

    it("reports per turn: commit time, the recalls that followed, live and shadow savings apart, gate verdicts", async () => {
      const s = await make();
      const r = ref();
      await commit(s, r, {
        records: [
          record("a", { mem_id: MEM("a") }),
          record("k", { action: "kept", mem_id: null, rendered: null }),
        ],
        recall_declared: true,
        log: log(1, { tokens_before: 100, tokens_after: 10, saved_usd: 0.01, gate_fired: 1 }),
      });
      await s.noteRecall(r, MEM("a"));
      await s.noteRecall(r, MEM("a"));
      await commit(s, r, {
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
      expect(rep.totals).toMatchObject({
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
      await commit(s, r, { log: log(1), decisions: [decision("a", { gate })] });
      await commit(s, r, {
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
      // A commit without decisions leaves them; the caller sends at most the last ones, and the total.
      await commit(s, r, { log: log(3) });
      expect((await s.report(r))!.last_turn?.turn).toBe(2);
      const many = Array.from({ length: LAST_DECISIONS_LIMIT }, (_, i) => decision(`m${i}`));
      await commit(s, r, {
        log: log(4),
        decisions: many,
        decisions_total: LAST_DECISIONS_LIMIT + 5,
      });
      const big = (await s.report(r))!.last_turn!;
      expect(big.decisions_total).toBe(LAST_DECISIONS_LIMIT + 5);
      expect(big.decisions.map((d) => d.tool_use_id)).toEqual(many.map((d) => d.tool_use_id));
    });

    it("keeps a turn's measured usage once: by seq or turn, idempotent, first report stands", async () => {
      const s = await make();
      const r = ref();
      expect(await s.recordUsage(r, { seq: 1 }, usage(1))).toBeNull();
      const one = await commit(s, r, { log: log(1) });
      const two = await commit(s, r, { log: log(2) });
      expect(await s.recordUsage(r, { seq: two.seq + 5 }, usage(1))).toEqual({
        status: "unknown_turn",
      });
      expect(await s.recordUsage(r, { turn: 9 }, usage(1))).toEqual({ status: "unknown_turn" });
      expect(await s.recordUsage(r, { turn: 1 }, usage(7))).toMatchObject({
        status: "recorded",
        seq: one.seq,
      });
      expect(await s.recordUsage(r, { seq: one.seq }, usage(7))).toMatchObject({
        status: "unchanged",
      });
      expect(await s.recordUsage(r, { seq: one.seq }, usage(8))).toEqual({
        status: "conflict",
        seq: one.seq,
      });
      // The proxy's usage goes on its own line, and does not overwrite one already there.
      await s.finish(r, two.seq, {
        proxy: { hops: 0, recalls: 0, exhausted: false },
        usage: { ...usage(3), source: "proxy" },
      });
      await s.finish(r, one.seq, {
        proxy: { hops: 1, recalls: 1, exhausted: false },
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

    it("writes a line with what its finish brings in one commit, and learns the session's calibration", async () => {
      const s = await make();
      const r = ref();
      const lines: number[] = [];
      for (let t = 1; t <= CALIBRATION_MIN_TURNS + 1; t++) {
        const done = await commit(s, r, {
          log: log(t),
          finish: { proxy: { hops: 0, recalls: 0, exhausted: false }, usage: usage(5, 1300) },
        });
        lines.push(done.seq);
      }
      const turns = (await s.report(r))!.turns;
      expect(turns).toHaveLength(CALIBRATION_MIN_TURNS + 1);
      expect(turns.every((t) => t.usage?.first.input === 1300 && t.proxy?.hops === 0)).toBe(true);
      // Once ready, the line keeps the removed tokens at the calibration it refined.
      expect(turns.at(-1)!.usage!.removed_calibrated).toBe(0);
      const cal = (await s.begin(r, ASK)).calibrations["claude-sonnet-4-6"]!;
      expect(cal.turns).toBe(CALIBRATION_MIN_TURNS + 1);
      expect(cal.ratios.request).toBeGreaterThan(1.2);
      // Usage a client posts teaches it too (once).
      const more = await commit(s, r, { log: log(99) });
      await s.recordUsage(r, { seq: more.seq }, usage(5, 1300));
      await s.recordUsage(r, { seq: more.seq }, usage(5, 1300));
      expect((await s.begin(r, ASK)).calibrations["claude-sonnet-4-6"]!.turns).toBe(
        CALIBRATION_MIN_TURNS + 2,
      );
    });

    it("notes a finished turn's hops on its own line and keeps its memos; a begin answers those anchored on its request", async () => {
      const s = await make();
      const r = ref();
      await s.setConfig(r, { tool_result_compaction_enabled: true });
      const first = await commit(s, r, {
        records: [record("r-a", { mem_id: null, action: "kept", rendered: null })],
        recall_declared: true,
        log: log(1),
      });
      const second = await commit(s, r, { recall_declared: true, log: log(2) });
      expect(second.seq).toBeGreaterThan(first.seq);
      const memo = (anchor: string): ProxyMemo => ({
        kind: "recall",
        format: "anthropic",
        anchors: [anchor],
        calls: [{ id: `r-${anchor}`, arguments: '{"mem_id":"trm_x"}' }],
        params: { mode: "both", max_chars: 50000, window: 300 },
      });
      const alias: ProxyMemo = {
        kind: "alias",
        format: "openai-responses",
        from: "resp_1",
        to: "resp_2",
        calls: [],
        params: { mode: "both", max_chars: 50000, window: 300 },
      };
      await s.finish(r, first.seq, {
        proxy: { hops: 2, recalls: 2, exhausted: false },
        memos: [memo("a")],
      });
      await s.finish(r, null, {
        proxy: { hops: 0, recalls: 1, exhausted: false },
        memos: [memo("b"), memo("c"), alias],
      });
      const d = (await s.describe(r))!;
      expect(d.turns).toMatchObject([
        { turn: 1, proxy: { hops: 2, recalls: 2, exhausted: false } },
        { turn: 2 },
      ]);
      expect(d.turns[1]).not.toHaveProperty("proxy");
      const start = await s.begin(r, { ids: [], names: [], anchors: ["c", "a", "resp_1", "zz"] });
      expect(start.config).toEqual({ tool_result_compaction_enabled: true });
      expect(start.memos).toEqual([memo("a"), memo("c"), alias]);
      // With the records of the memos' recall calls.
      expect(start.records.map((x) => x.tool_use_id)).toEqual(["r-a"]);
      expect((await s.begin(r, ASK)).memos).toEqual([]);
      // Another scope sees none of it; destroy forgets it.
      expect(
        (await s.begin({ tenant: "other", session: r.session }, { ...ASK, anchors: ["a"] })).memos,
      ).toEqual([]);
      await s.destroy(r);
      await s.purged(r);
      expect((await s.begin(r, { ...ASK, anchors: ["a"] })).memos).toEqual([]);
    });

    it("scopes by tenant and session", async () => {
      const s = await make();
      const mine = ref("tenant-a");
      await commit(s, mine, { records: [record("x")], recall_declared: true, log: log(1) });
      await s.setConfig(mine, { tool_result_compaction_enabled: true });
      for (const other of [
        { tenant: "tenant-b", session: mine.session },
        { tenant: "tenant-a", session: `${mine.session}-2` },
      ]) {
        expect((await s.begin(other, { ids: ["x"], names: [] })).records).toEqual([]);
        expect(await s.getConfig(other)).toEqual({});
        expect(await s.describe(other)).toBeNull();
        expect(await s.report(other)).toBeNull();
      }
    });

    it("destroys a session and names the mem_ids its records held", async () => {
      const s = await make();
      const r = ref();
      const keep = ref();
      await commit(s, r, {
        records: [
          record("a", { mem_id: MEM("a") }),
          record("b", { mem_id: null, action: "kept", rendered: null }),
          record("c", { mem_id: MEM("a") }),
        ],
        recall_declared: true,
        log: log(1),
      });
      await commit(s, keep, { records: [record("a")], log: log(1) });
      expect(await s.destroy(r)).toEqual([MEM("a")]);
      await s.purged(r);
      expect(await s.describe(r)).toBeNull();
      expect(await s.report(r)).toBeNull();
      expect((await s.begin(r, { ids: ["a"], names: [] })).records).toEqual([]);
      expect(await s.getConfig(r)).toEqual({});
      expect(await s.describe(keep)).not.toBeNull();
      expect(await s.destroy(ref())).toEqual([]);
      // A destroyed session starts afresh.
      await commit(s, r, { records: [record("a", { rendered: "new" })], log: log(1) });
      expect((await s.begin(r, { ids: ["a"], names: [] })).records[0]?.rendered).toBe("new");
    });

    it("counts a session's length once, when it ends: idle for an hour, or deleted", async () => {
      const s = await make();
      const r = ref();
      expect(await s.end(r)).toBeNull(); // unknown
      await s.setConfig(r, { tool_result_offload_enabled: true });
      expect(await s.end(r)).toBeNull(); // live, but no call yet
      for (let t = 1; t <= 3; t++)
        await commit(s, r, { log: log(t, t === 2 ? { shadow: true } : {}) });
      // Active: not ended. Idle for just under an hour: still not.
      expect(await s.end(r, { idle: true })).toBeNull();
      await hooks.idle(s, r, SESSION_END_MS - 60_000);
      expect(await s.end(r, { idle: true })).toBeNull();
      await hooks.idle(s, r, 60_000);
      expect(await s.end(r, { idle: true })).toBe(3); // shadow turns count
      expect(await s.end(r, { idle: true })).toBeNull(); // once
      // A session that comes back is not counted again, nor when it is then deleted.
      await commit(s, r, { log: log(4) });
      expect(await s.end(r)).toBeNull();
      expect((await s.describe(r))!.calls).toBe(4);
      // Deleted: counted at once, whatever its activity; after the delete it is another session.
      const d = ref();
      await commit(s, d, { log: log(1) });
      await commit(s, d, { log: log(2) });
      expect(await s.end(d)).toBe(2);
      await s.destroy(d);
      await s.purged(d);
      expect(await s.end(d)).toBeNull();
      await commit(s, d, { log: log(1) });
      expect(await s.end(d)).toBe(1);
      // Concurrent ends of one session: one of them counts it.
      const c = ref();
      await commit(s, c, { log: log(1) });
      const ends = await Promise.all([s.end(c), s.end(c), s.end(c)]);
      expect(ends.filter((x) => x !== null)).toEqual([1]);
    });
  });
}
