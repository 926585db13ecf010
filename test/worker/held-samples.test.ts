// A measured turn's calibration sample is held in its SessionDO's memory with the turn lines: the session's
// calibration copy is refined at once (the next turn reads it refined), the sample and the refined state are
// written with the held lines (one transaction, the samples as one row), the alarm's exchange sends them,
// and a purge writes them (the tenant's statistics outlive a session's purge). Each test drives its own
// SessionDO over a fresh object's storage and counts the rows each call writes.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { promptOf } from "../../src/core/billing.ts";
import { type Calibration, type CalibrationSample, calibrate } from "../../src/core/calibration.ts";
import type { SessionRef } from "../../src/core/types.ts";
import { HeldWrites } from "../../src/session/held-writes.ts";
import type { SessionDO } from "../../src/session/session-do.ts";
import { SessionTables } from "../../src/session/session-tables.ts";
import { TenantCopy } from "../../src/session/tenant-copy.ts";
import {
  estimate,
  first,
  inSession,
  log,
  type Probe,
  sessionObject,
  usage as small,
  steady,
} from "../support/held-session.ts";
import { freshRef } from "../support/records.ts";

const LONG = 60_000;
const MODEL = "claude-sonnet-4-6";
const measured = (turn: number) => steady(turn, { log: log(turn, { estimate }) });
const note = { hops: 0, recalls: 0, exhausted: false };
/** The provider's usage for the estimate's 1,000 tokens: a sample the calibration learns from. */
const usage = { ...small, first: { ...small.first, input: 1100 } };

/** `n` proxied steady turns after the first, each with the provider's usage (a sample each). */
async function proxiedTurns(o: SessionDO, ref: SessionRef, n: number): Promise<void> {
  for (let turn = 2; turn < 2 + n; turn++) {
    const { turn_seq } = await o.commit(ref, measured(turn));
    await o.finishProxyTurn(ref, { turn_seq, note, memos: [], usage, estimate });
  }
}

/** The copy as a turn's first read answers it. */
async function copyRead(o: SessionDO, ref: SessionRef): Promise<Record<string, Calibration>> {
  const begin = await o.begin(ref, { ids: ["a"], names: [], anchors: [] });
  return begin.state?.calibrations ?? {};
}

/** The samples written (pending rows may hold a batch each). */
function written(probe: Probe): CalibrationSample[] {
  return probe.state.storage.sql
    .exec<{ sample: string }>("SELECT sample FROM calibration_pending ORDER BY seq")
    .toArray()
    .flatMap((r) => [JSON.parse(r.sample) as CalibrationSample | CalibrationSample[]].flat());
}

/** The tenant's calibration turns for MODEL, at its own object. */
async function tenantTurns(tenant: string): Promise<number> {
  const stub = env.TENANTS.get(env.TENANTS.idFromName(tenant));
  const all = (await stub.calibrations()) as Record<string, Calibration>;
  return all[MODEL]?.turns ?? 0;
}

describe("a measured turn's calibration sample, held with the lines", () => {
  it("costs no write on its call; the next turn reads the copy refined, as if written", async () => {
    // The same turns with every line and sample written at once: what the held copy must equal.
    const reference = await inSession(0, async (o, ref) => {
      await o.commit(ref, first);
      await proxiedTurns(o, ref, 3);
      return copyRead(o, ref);
    });
    expect(reference[MODEL]?.turns).toBe(3);
    await inSession(LONG, async (o, ref, probe) => {
      await o.commit(ref, first);
      await proxiedTurns(o, ref, 2);
      // The copy was never filled from the tenant: the first read asks for a refresh (a write).
      await copyRead(o, ref);
      const { turn_seq } = await o.commit(ref, measured(4));
      const call = await probe.writes(() =>
        o.finishProxyTurn(ref, { turn_seq, note, memos: [], usage, estimate }),
      );
      expect(call).toMatchObject({ rows: 0, transactions: 0 });
      expect(probe.count("tenant_calibration")).toBe(0);
      expect(written(probe)).toEqual([]);
      const read = await probe.writes(() => copyRead(o, ref));
      expect(read.rows).toBe(0);
      expect(read.value).toEqual(reference);
      // Written with the lines, in one transaction: the samples as one row, the state once.
      const flush = await probe.writes(() => o.report(ref, { turns: false }));
      expect(flush.transactions).toBe(1);
      expect(probe.count("calibration_pending")).toBe(1);
      expect(written(probe)).toHaveLength(3);
      expect(probe.turnsStored()).toBe(4);
      expect(await copyRead(o, ref)).toEqual(reference);
    });
  });

  it("a client's usage on a held line teaches the same, writing nothing", async () => {
    await inSession(LONG, async (o, ref, probe) => {
      await o.commit(ref, first);
      const { turn_seq } = await o.commit(ref, measured(2));
      const call = await probe.writes(() => o.recordUsage(ref, { seq: turn_seq }, usage));
      expect(call.value).toMatchObject({ status: "recorded" });
      expect(call.rows).toBe(0);
      expect((await copyRead(o, ref))[MODEL]?.turns).toBe(1);
      const line = o.describe(ref)!.turns.at(-1)!;
      expect(line.usage?.calls).toBe(1);
      expect(written(probe)).toHaveLength(1);
    });
  });

  it("the timer writes the samples with the lines, a window after the first was held", async () => {
    await inSession(40, async (o, ref, probe) => {
      await o.commit(ref, first);
      await proxiedTurns(o, ref, 2);
      expect(written(probe)).toEqual([]);
      for (let i = 0; i < 100 && written(probe).length < 2; i++) await sleep(20);
      expect(written(probe)).toHaveLength(2);
      expect(probe.turnsStored()).toBe(3);
      expect((await probe.writes(() => o.describe(ref))).rows).toBe(0);
    });
  });

  it("the alarm's exchange sends the held samples, and the copy stays refined", async () => {
    const ref = freshRef("held-x", `held-x-${Date.now().toString(36)}`);
    await inSession(
      LONG,
      async (o, ref, probe) => {
        await o.commit(ref, first);
        await proxiedTurns(o, ref, 3);
        expect(await tenantTurns(ref.tenant)).toBe(0);
        await o.alarm();
        expect(await tenantTurns(ref.tenant)).toBe(3);
        expect(written(probe)).toEqual([]);
        expect(probe.turnsStored()).toBe(4);
        expect((await copyRead(o, ref))[MODEL]?.turns).toBe(3);
      },
      ref,
    );
  });

  it("a sample learned while the exchange is out stays held, refined again on the tenant's answer", async () => {
    await inSession(LONG, async (_o, ref, probe) => {
      const t = new SessionTables(probe.state.storage);
      const stats = new TenantCopy(t);
      const held = new HeldWrites(t, probe.state.storage, () => LONG, stats.calibration);
      t.ensure(ref, Date.now());
      const sample = (measured: number): CalibrationSample => ({
        model: MODEL,
        estimate: { text: 1000 },
        measured,
      });
      held.learn(sample(1100), Date.now());
      held.flush();
      const tenant = calibrate(null, { text: 2000 }, 2400);
      await stats.sync(async (_deltas, _names, samples) => {
        expect(samples).toEqual([sample(1100)]);
        held.learn(sample(900), Date.now());
        return { counts: {}, calibrations: { [MODEL]: tenant } };
      }, Date.now);
      expect(written(probe)).toEqual([]);
      expect(stats.calibration.held()).toBe(1);
      expect(stats.calibration.pendingSince()).not.toBeNull();
      const expected = calibrate(tenant, { text: 1000 }, 900);
      expect(stats.calibration.read()).toEqual({ [MODEL]: expected });
      held.flush();
      expect(written(probe)).toEqual([sample(900)]);
      expect(stats.calibration.read()).toEqual({ [MODEL]: expected });
    });
  });

  it("a delete drops the lines and writes the samples (the tenant's), which the alarm then sends", async () => {
    const ref = freshRef("held-d", `held-d-${Date.now().toString(36)}`);
    await inSession(
      LONG,
      async (o, ref, probe) => {
        await o.commit(ref, first);
        await proxiedTurns(o, ref, 2);
        await o.destroy(ref);
        expect(o.describe(ref)).toBeNull();
        expect(written(probe)).toHaveLength(2);
        await o.alarm();
        expect(await tenantTurns(ref.tenant)).toBe(2);
        expect(written(probe)).toEqual([]);
      },
      ref,
    );
  });

  it("a restart loses what is held: the copy reads as last written", async () => {
    await inSession(LONG, async (o, ref, probe) => {
      await o.commit(ref, first);
      await proxiedTurns(o, ref, 1);
      o.report(ref);
      await proxiedTurns(o, ref, 2);
      expect((await copyRead(o, ref))[MODEL]?.turns).toBe(3);
      const restarted = sessionObject(probe.state, LONG);
      expect((await copyRead(restarted, ref))[MODEL]?.turns).toBe(1);
      expect(written(probe)).toHaveLength(1);
      expect(restarted.describe(ref)?.calls).toBe(2);
    });
  });

  it("the pending samples stay bounded: whole rows go, oldest first", async () => {
    await inSession(0, async (o, ref, probe) => {
      await o.commit(ref, first);
      // Rows an earlier version wrote (one sample each), then batches.
      const one = JSON.stringify({ model: MODEL, estimate: { text: 1 }, measured: 1 });
      for (let i = 0; i < 250; i++)
        probe.sql("INSERT INTO calibration_pending (sample) VALUES (?)", one);
      await proxiedTurns(o, ref, 10);
      const samples = written(probe);
      expect(samples).toHaveLength(256);
      expect(samples.at(-1)?.measured).toBe(promptOf(usage.first));
    });
  });

  it("a flush that rolls back holds its lines and samples again, and a later read writes them", async () => {
    await inSession(LONG, async (o, ref, probe) => {
      await o.commit(ref, first);
      await proxiedTurns(o, ref, 2);
      // A storage fault on the turn log's insert, after the samples' statements ran in the same
      // transaction: the whole flush rolls back.
      probe.sql(
        "CREATE TRIGGER eo_test_fault BEFORE INSERT ON turns BEGIN SELECT RAISE(ABORT, 'injected fault'); END",
      );
      await expect(Promise.resolve().then(() => o.report(ref))).rejects.toThrow(/injected fault/);
      expect(written(probe)).toEqual([]);
      expect(probe.turnsStored()).toBe(1);
      probe.sql("DROP TRIGGER eo_test_fault");
      const report = await o.report(ref);
      expect(report?.turns.map((t) => t.turn)).toEqual([1, 2, 3]);
      expect(written(probe)).toHaveLength(2);
    });
  });
});

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
