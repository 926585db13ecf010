// A steady turn's log line is held in its SessionDO's memory: its commit writes no storage, its seq is given
// at once (usage posted against it lands on it there), and the line is written by the next write or read of
// the turn log, the cap, the timer or the alarm; a purge drops it. Each test drives its own SessionDO over a fresh object's storage (inside
// runInDurableObject), with the window it needs, and counts the rows each call writes.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { TurnDecision } from "../../src/core/types.ts";
import { settingsOf } from "../../src/http/context.ts";
import type { ProxyMemo } from "../../src/proxy/port.ts";
import { HOLD_CAP, parseLineWindow } from "../../src/session/held-writes.ts";
import { estimate, first, inSession, log, steady, usage } from "../support/held-session.ts";
import { record } from "../support/records.ts";

const decision = (id: string): TurnDecision => ({
  tool_use_id: id,
  tool_name: "bash",
  path: "messages[2].content[0]",
  tier: "large",
  action: "offloaded",
  mem_id: `trm_${"a".repeat(24)}`,
  chars: 70_000,
  tokens: 20_000,
  sent_tokens: 200,
  sticky: true,
  reason: "large: test",
});

const HOUR = 3_600_000;
const LONG = 60_000;

describe("a steady turn's log line, held in memory", () => {
  it("costs no storage write; its seq is given at once; the report writes it with the others", async () => {
    await inSession(LONG, async (o, ref, probe) => {
      const one = await o.commit(ref, first);
      expect(one.turn_seq).toBe(1);
      const held = await probe.writes(() => o.commit(ref, steady(2)));
      expect(held).toMatchObject({ rows: 0, transactions: 0 });
      expect(held.value).toEqual({ records: [], index_due: false, offloads: {}, turn_seq: 2 });
      expect((await o.commit(ref, steady(3))).turn_seq).toBe(3);
      expect(probe.turnsStored()).toBe(1);

      const report = await probe.writes(() => o.report(ref));
      // One transaction: both lines, the row once (the log's trim deletes nothing yet).
      expect(report.transactions).toBe(1);
      expect(report.rows).toBeGreaterThan(0);
      expect(report.rows).toBeLessThanOrEqual(5);
      expect(report.value?.calls).toBe(3);
      expect(report.value?.turns.map((t) => t.turn)).toEqual([1, 2, 3]);
      expect(probe.turnsStored()).toBe(3);
      // Written: reading again writes nothing.
      expect((await probe.writes(() => o.report(ref))).rows).toBe(0);
    });
  });

  it("a commit with anything new writes at once, after the held lines (seq order kept)", async () => {
    await inSession(LONG, async (o, ref, probe) => {
      await o.commit(ref, first);
      await o.commit(ref, steady(2, { decisions: [decision("a")] }));
      expect(probe.turnsStored()).toBe(1);
      const next = await o.commit(ref, { ...steady(3), records: [record("b")] });
      expect(next.turn_seq).toBe(3);
      expect(probe.turnsStored()).toBe(3);
      expect(o.describe(ref)!.turns.map((t) => t.turn)).toEqual([1, 2, 3]);
      expect(o.report(ref)?.last_turn?.turn).toBe(2);
    });
  });

  it("a newly declared recall tool is written at once, and so is the session's first turn", async () => {
    await inSession(LONG, async (o, ref, probe) => {
      await o.commit(ref, { ...first, recall_declared: false });
      expect(probe.turnsStored()).toBe(1);
      await o.commit(ref, steady(2, { recall_declared: true }));
      expect(probe.turnsStored()).toBe(2);
      expect(o.describe(ref)?.recall_declared).toBe(true);
      await o.commit(ref, steady(3, { recall_declared: true }));
      expect(probe.turnsStored()).toBe(2);
    });
  });

  it("the lines held for the report's last turn: the newest that carried decisions", async () => {
    await inSession(LONG, async (o, ref) => {
      await o.commit(ref, first);
      await o.commit(ref, steady(2, { decisions: [decision("a")] }));
      await o.commit(ref, steady(3, { decisions: [decision("b")] }));
      await o.commit(ref, steady(4));
      const last = o.report(ref)?.last_turn;
      expect(last?.turn).toBe(3);
      expect(last?.decisions.map((d) => d.tool_use_id)).toEqual(["b"]);
    });
  });

  it("the cap: the line that would pass it writes those held first", async () => {
    await inSession(LONG, async (o, ref, probe) => {
      await o.commit(ref, first);
      for (let turn = 2; turn < 2 + HOLD_CAP; turn++) await o.commit(ref, steady(turn));
      expect(probe.turnsStored()).toBe(1);
      const over = await probe.writes(() => o.commit(ref, steady(2 + HOLD_CAP)));
      expect(over.transactions).toBe(1);
      expect(over.value.turn_seq).toBe(2 + HOLD_CAP);
      expect(probe.turnsStored()).toBe(1 + HOLD_CAP);
      expect(o.describe(ref)?.calls).toBe(2 + HOLD_CAP);
    });
  });

  it("the timer writes them a window after the first was held", async () => {
    await inSession(40, async (o, ref, probe) => {
      await o.commit(ref, first);
      await o.commit(ref, steady(2));
      await o.commit(ref, steady(3));
      expect(probe.turnsStored()).toBe(1);
      for (let i = 0; i < 100 && probe.turnsStored() < 3; i++) await sleep(20);
      expect(probe.turnsStored()).toBe(3);
      expect((await probe.writes(() => o.describe(ref))).rows).toBe(0);
    });
  });

  it("a window of 0 writes each line with its turn", async () => {
    await inSession(0, async (o, ref, probe) => {
      await o.commit(ref, first);
      const now = await probe.writes(() => o.commit(ref, steady(2)));
      expect(now.transactions).toBe(1);
      expect(probe.turnsStored()).toBe(2);
    });
  });

  it("usage posted against a held line's seq (or turn) finds it there: nothing is written", async () => {
    await inSession(LONG, async (o, ref, probe) => {
      await o.commit(ref, first);
      const { turn_seq } = await o.commit(ref, steady(2));
      await o.commit(ref, steady(3));
      const bySeq = await probe.writes(() => o.recordUsage(ref, { seq: turn_seq }, usage));
      expect(bySeq.value).toMatchObject({ status: "recorded", seq: turn_seq });
      expect(bySeq).toMatchObject({ rows: 0, transactions: 0 });
      expect(probe.turnsStored()).toBe(1);
      await o.commit(ref, steady(4));
      // A turn number names the newest line of that turn: held lines are the newest.
      const byTurn = await probe.writes(() => o.recordUsage(ref, { turn: 4 }, usage));
      expect(byTurn.value).toMatchObject({ status: "recorded" });
      expect(byTurn.rows).toBe(0);
      // The same report again changes nothing; other numbers are a conflict.
      expect(await o.recordUsage(ref, { turn: 4 }, usage)).toMatchObject({ status: "unchanged" });
      const other = { ...usage, calls: 2 };
      expect(await o.recordUsage(ref, { turn: 4 }, other)).toMatchObject({ status: "conflict" });
      // A written line's usage is written, with what is held first.
      expect(await o.recordUsage(ref, { turn: 1 }, usage)).toMatchObject({ status: "recorded" });
      expect(probe.turnsStored()).toBe(4);
      const turns = o.describe(ref)!.turns;
      expect(turns.map((t) => t.usage !== undefined)).toEqual([true, true, false, true]);
      expect(await o.recordUsage(ref, { seq: 99 }, usage)).toEqual({ status: "unknown_turn" });
    });
  });

  it("the proxy's note goes on the held line it names, which stays held", async () => {
    await inSession(LONG, async (o, ref, probe) => {
      await o.commit(ref, first);
      const bare = await o.commit(ref, steady(2));
      const measured = await o.commit(ref, steady(3, { log: log(3, { estimate }) }));
      const note = { hops: 1, recalls: 1, exhausted: false };
      // Nothing to learn (no estimate): nothing written at all.
      const quiet = await probe.writes(() =>
        o.finishProxyTurn(ref, { turn_seq: bare.turn_seq, note, memos: [], usage }),
      );
      expect(quiet).toMatchObject({ rows: 0, transactions: 0 });
      // A measured turn teaches the calibration: its sample is held with the line, nothing written.
      const taught = await probe.writes(() =>
        o.finishProxyTurn(ref, { turn_seq: measured.turn_seq, note, memos: [], usage, estimate }),
      );
      expect(taught).toMatchObject({ rows: 0, transactions: 0 });
      expect(probe.turnsStored()).toBe(1);
      const lines = o.describe(ref)!.turns;
      expect(lines.map((l) => l.proxy)).toEqual([undefined, note, note]);
      expect(lines.map((l) => l.usage?.calls)).toEqual([undefined, 1, 1]);
    });
  });

  it("the proxy's memos are written at once, the note staying on the held line", async () => {
    await inSession(LONG, async (o, ref, probe) => {
      await o.commit(ref, first);
      const held = await o.commit(ref, steady(2));
      const note = { hops: 1, recalls: 1, exhausted: false };
      const memo: ProxyMemo = {
        kind: "alias",
        format: "openai-responses",
        from: "resp_1",
        to: "resp_0",
        calls: [],
        params: { mode: "both", max_chars: 1000, window: 1 },
      };
      const wrote = await probe.writes(() =>
        o.finishProxyTurn(ref, { turn_seq: held.turn_seq, note, memos: [memo], usage }),
      );
      expect(wrote.transactions).toBe(1);
      expect(probe.count("memos")).toBe(1);
      expect(probe.turnsStored()).toBe(1);
      expect(o.describe(ref)!.turns.map((l) => l.proxy)).toEqual([undefined, note]);
    });
  });

  it("a recall counts on the latest line, held or not", async () => {
    await inSession(LONG, async (o, ref) => {
      await o.commit(ref, first);
      await o.commit(ref, steady(2));
      expect(await o.noteRecall(ref, `trm_${"a".repeat(24)}`)).toBe("bash");
      expect(o.report(ref)!.turns.map((t) => t.recalls)).toEqual([0, 1]);
    });
  });

  it("a turn's first read sees held lines as written: last activity, gaps, idle time (the cold cache)", async () => {
    await inSession(LONG, async (o, ref, probe) => {
      await o.commit(ref, first);
      // The first turn was an hour ago: past any provider cache's lifetime.
      probe.sql("UPDATE turns SET at = at - ?", HOUR);
      probe.sql("UPDATE session SET last_active = last_active - ?", HOUR);
      const cold = await o.load(ref, ["a"]);
      expect(cold.idle_seconds).toBeGreaterThanOrEqual(3600);
      await o.commit(ref, steady(2));
      const read = await probe.writes(() => o.load(ref, ["a"]));
      // Held, the line still counts: the session is warm, and the gap is the hour.
      expect(read.value.idle_seconds).toBeLessThan(60);
      expect(read.value.gap_seconds).toBeGreaterThanOrEqual(3600);
      // The begin stays a read.
      expect(read.rows).toBe(0);
      const begin = await probe.writes(() => o.begin(ref, { ids: ["a"], names: [], anchors: [] }));
      expect(begin.rows).toBe(0);
      expect(begin.value.state?.idle_seconds).toBeLessThan(60);
      const before = o.describe(ref)!;
      expect(Date.now() - before.last_active).toBeLessThan(60_000);
      // Written, the same answers.
      const after = await o.load(ref, ["a"]);
      expect(after.gap_seconds).toBe(read.value.gap_seconds);
    });
  });

  it("a delete drops the held lines: the session reads as unknown, its seqs are never given again", async () => {
    await inSession(LONG, async (o, ref, probe) => {
      await o.commit(ref, first);
      await o.commit(ref, steady(2));
      await o.commit(ref, steady(3));
      await o.destroy(ref);
      expect(o.describe(ref)).toBeNull();
      expect(o.report(ref)).toBeNull();
      await o.purged(ref);
      expect(o.describe(ref)).toBeNull();
      // The session written again starts afresh, past the deleted seqs.
      const again = await o.commit(ref, { records: [], recall_declared: false, log: log(1) });
      expect(again.turn_seq).toBeGreaterThan(3);
      expect(o.describe(ref)?.turns.map((t) => t.turn)).toEqual([1]);
      expect(probe.turnsStored()).toBe(1);
    });
  });

  it("the alarm writes them first (retention reads the last activity they moved)", async () => {
    await inSession(LONG, async (o, ref, probe) => {
      await o.commit(ref, first);
      // Idle past the 7-day retention, then a steady turn.
      probe.sql("UPDATE session SET last_active = last_active - ?", 604_800_001);
      await o.commit(ref, steady(2));
      await o.alarm();
      expect(probe.turnsStored()).toBe(2);
      expect(o.describe(ref)?.calls).toBe(2);
    });
  });

  it("a refused or late commit is never held", async () => {
    await inSession(LONG, async (o, ref, probe) => {
      await o.commit(ref, first);
      const lease = { epoch: 0, at: Date.now() - 10 * HOUR };
      const late = await o.commit(ref, steady(2, { lease }));
      expect(late.refused).toBeDefined();
      expect(probe.turnsStored()).toBe(1);
      expect(o.describe(ref)?.turns).toHaveLength(1);
    });
  });
});

describe("OFFLOAD_TURN_LOG_WINDOW_MS", () => {
  it("takes whole milliseconds up to a minute; anything else is the deployment's mistake", () => {
    expect(parseLineWindow(undefined)).toBe(5000);
    expect(parseLineWindow(" ")).toBe(5000);
    expect(parseLineWindow("0")).toBe(0);
    expect(parseLineWindow("60000")).toBe(60_000);
    for (const bad of ["60001", "-1", "1.5", "soon"])
      expect(() => parseLineWindow(bad)).toThrow(/OFFLOAD_TURN_LOG_WINDOW_MS/);
  });

  it("is checked by the Worker's settings too: a bad value is a clear error, not a storage error", () => {
    expect(settingsOf(env).turnLogWindowMs).toBe(parseLineWindow(env.OFFLOAD_TURN_LOG_WINDOW_MS));
    expect(() => settingsOf({ ...env, OFFLOAD_TURN_LOG_WINDOW_MS: "soon" })).toThrow(
      /OFFLOAD_TURN_LOG_WINDOW_MS/,
    );
  });
});

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
