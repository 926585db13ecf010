/**
 * The request rates the design puts on each Durable Object, simulated event by event for one tenant with N
 * active sessions (docs/scale.md reads its numbers from here), and what a day of turns costs at list prices.
 *
 * Each session runs turns as a Poisson process (one every `gap` seconds on average). Per turn: one SessionDO
 * call before the answer (`begin`) and after it the turn's log line (`commit`) and, for a measured turn, the
 * provider's usage (`finishProxyTurn`); a first sight adds the ledger writes. Its learning statistics travel as
 * the code does it: deltas (an offload or a recall) wait in the session up to STATS_FLUSH_MS, calibration
 * samples up to STATS_REFRESH_MS, a copy read by an adaptive turn is refreshed once older than
 * STATS_REFRESH_MS, each exchange goes to one of the tenant's shards; a shard talks to the tenant's object when
 * its copy is older than SHARD_SYNC_MS at an exchange, or SHARD_SYNC_MS after a delta arrived. Counted per
 * object and per second of simulated time.
 *
 * `npm run bench -- scale` (add `--sessions 1000,100000` to choose N).
 */
import {
  DEFAULT_SHARDS,
  SHARD_SYNC_MS,
  STATS_FLUSH_MS,
  STATS_REFRESH_MS,
  shardOf,
} from "../src/session/stats-timing.ts";
import { random } from "./lib/random.ts";

export interface SimOptions {
  sessions: number;
  /** Mean seconds between a session's turns. */
  gap: number;
  /** Simulated seconds. */
  seconds: number;
  shards: number;
  /** Share of turns that offload a new result (first sight), and that recall one. */
  offloadRate: number;
  recallRate: number;
  /** Share of sessions with the learning gate on (they read the tenant's counts every turn). */
  adaptive: number;
  /**
   * Share of turns whose provider usage is measured (the proxy's, or posted back): one more session
   * call after the answer, and a calibration sample that leaves within STATS_REFRESH_MS.
   */
  measured: number;
  seed: number;
}

export interface SimResult {
  options: SimOptions;
  turns: number;
  /** Requests per second: mean over the run, and the busiest second. */
  session: { mean: number; peakPerObject: number; total: number };
  shard: { meanPerShard: number; peakPerShard: number; total: number };
  tenant: { mean: number; peak: number; total: number };
}

/** A binary heap of timed events. */
class Events<T> {
  readonly #items: { at: number; value: T }[] = [];
  push(at: number, value: T): void {
    const a = this.#items;
    a.push({ at, value });
    for (let i = a.length - 1; i > 0; ) {
      const p = (i - 1) >> 1;
      if (a[p]!.at <= a[i]!.at) break;
      [a[p], a[i]] = [a[i]!, a[p]!];
      i = p;
    }
  }
  pop(): { at: number; value: T } | undefined {
    const a = this.#items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last !== undefined) {
      a[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && a[l]!.at < a[m]!.at) m = l;
        if (r < a.length && a[r]!.at < a[m]!.at) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i]!, a[m]!];
        i = m;
      }
    }
    return top;
  }
}

type Ev =
  | { kind: "turn"; s: number }
  | { kind: "session-alarm"; s: number }
  | { kind: "shard-alarm"; k: number };

export function simulate(options: Partial<SimOptions> = {}): SimResult {
  const o: SimOptions = {
    sessions: 1000,
    gap: 20,
    seconds: 600,
    shards: DEFAULT_SHARDS,
    offloadRate: 0.05,
    recallRate: 0.05,
    adaptive: 1,
    measured: 1,
    seed: 7,
    ...options,
  };
  const rand = random(o.seed);
  const exp = (mean: number) => -Math.log(1 - rand()) * mean;
  const flush = STATS_FLUSH_MS / 1000;
  const refresh = STATS_REFRESH_MS / 1000;
  const shardSync = SHARD_SYNC_MS / 1000;

  const sessionShard = Array.from({ length: o.sessions }, (_, s) => shardOf(`s-${s}`, o.shards));
  const adaptive = Array.from({ length: o.sessions }, () => rand() < o.adaptive);
  const pendingSince = new Float64Array(o.sessions).fill(-1);
  const samplesSince = new Float64Array(o.sessions).fill(-1);
  const copyAt = new Float64Array(o.sessions).fill(-1);
  const alarmAt = new Float64Array(o.sessions).fill(-1);
  const shardPending = new Uint8Array(o.shards);
  const shardCopyAt = new Float64Array(o.shards).fill(-Infinity);
  const shardAlarm = new Float64Array(o.shards).fill(-1);

  const seconds = Math.ceil(o.seconds);
  const sessionPerSecond = new Map<number, number>(); // busiest object: counted per (second, session) below
  let sessionPeak = 0;
  let sessionTotal = 0;
  const shardCounts = Array.from({ length: o.shards }, () => new Uint32Array(seconds + 1));
  const tenantCounts = new Uint32Array(seconds + 1);
  let turns = 0;

  const ev = new Events<Ev>();
  for (let s = 0; s < o.sessions; s++) ev.push(exp(o.gap), { kind: "turn", s });

  const sessionCall = (s: number, at: number) => {
    sessionTotal++;
    const key = Math.floor(at) * o.sessions + s;
    const n = (sessionPerSecond.get(key) ?? 0) + 1;
    sessionPerSecond.set(key, n);
    if (n > sessionPeak) sessionPeak = n;
  };
  const tenantCall = (at: number) => {
    tenantCounts[Math.min(seconds, Math.floor(at))]!++;
  };
  /** The shard syncs with the tenant's object (deltas out, copy back). */
  const shardSyncs = (k: number, at: number) => {
    tenantCall(at);
    shardPending[k] = 0;
    shardCopyAt[k] = at;
  };
  /** A session's exchange with its shard. */
  const exchange = (s: number, at: number, deltas: boolean, names: boolean) => {
    const k = sessionShard[s]!;
    shardCounts[k]![Math.min(seconds, Math.floor(at))]!++;
    if (deltas) shardPending[k] = 1;
    if (at - shardCopyAt[k]! > shardSync) shardSyncs(k, at);
    else if (deltas && shardAlarm[k]! < 0) {
      shardAlarm[k] = at + shardSync;
      ev.push(at + shardSync, { kind: "shard-alarm", k });
    }
    if (deltas) pendingSince[s] = -1;
    samplesSince[s] = -1;
    if (names) copyAt[s] = at;
  };
  const arm = (s: number, at: number) => {
    if (alarmAt[s]! >= 0 && alarmAt[s]! <= at) return;
    alarmAt[s] = at;
    ev.push(at, { kind: "session-alarm", s });
  };

  for (let e = ev.pop(); e !== undefined && e.at < o.seconds; e = ev.pop()) {
    const { at, value } = e;
    if (value.kind === "turn") {
      const s = value.s;
      turns++;
      sessionCall(s, at); // begin
      sessionCall(s, at); // the turn's log line (after the answer)
      if (rand() < o.measured) {
        sessionCall(s, at); // the provider's usage on the line (after the answer)
        if (samplesSince[s]! < 0) {
          samplesSince[s] = at;
          arm(s, at + refresh);
        }
      }
      if (adaptive[s]) {
        // A new session fills its copy on its first read; later, a stale copy is refreshed after the turn.
        if (copyAt[s]! < 0) exchange(s, at, false, true);
        else if (at - copyAt[s]! > refresh) arm(s, at);
      }
      if (rand() < o.offloadRate && pendingSince[s]! < 0) {
        pendingSince[s] = at;
        arm(s, at + flush);
      }
      if (rand() < o.recallRate) {
        sessionCall(s, at); // the recall's count (its config read is one more call)
        sessionCall(s, at);
        if (pendingSince[s]! < 0) {
          pendingSince[s] = at;
          arm(s, at + flush);
        }
      }
      ev.push(at + exp(o.gap), { kind: "turn", s });
    } else if (value.kind === "session-alarm") {
      const s = value.s;
      if (alarmAt[s] !== at) continue;
      alarmAt[s] = -1;
      sessionCall(s, at); // the alarm is an invocation of the object
      const deltas = pendingSince[s]! >= 0 || samplesSince[s]! >= 0;
      const names = adaptive[s]! && copyAt[s]! >= 0 && at - copyAt[s]! > refresh;
      if (deltas || names) exchange(s, at, deltas, names || adaptive[s]!);
    } else {
      const k = value.k;
      shardAlarm[k] = -1;
      if (shardPending[k]) shardSyncs(k, at);
    }
  }

  const shardTotals = shardCounts.map((c) => c.reduce((a, b) => a + b, 0));
  const tenantTotal = tenantCounts.reduce((a, b) => a + b, 0);
  return {
    options: o,
    turns,
    session: {
      mean: sessionTotal / o.seconds,
      peakPerObject: sessionPeak,
      total: sessionTotal,
    },
    shard: {
      meanPerShard: shardTotals.reduce((a, b) => a + b, 0) / o.shards / o.seconds,
      peakPerShard: Math.max(...shardCounts.map((c) => Math.max(...c))),
      total: shardTotals.reduce((a, b) => a + b, 0),
    },
    tenant: {
      mean: tenantTotal / o.seconds,
      peak: Math.max(...tenantCounts),
      total: tenantTotal,
    },
  };
}

/**
 * SQLite rows a turn writes in its SessionDO: a steady proxied turn with the provider's usage, its log line
 * and calibration sample held and written alone (a turn every 20 s is slower than the 5 s window), on a
 * full turn log, as `npm run bench -- rows` measures it (8.1; 10.1 when each line and sample was written
 * with its turn; 2.25 for a busy session whose lines and samples go 32 at once).
 */
export const ROWS_PER_TURN = 8;

/**
 * What a day of turns costs at list prices (docs/scale.md gives each price's source), per component. A turn:
 * one Worker request; three SessionDO requests (begin, the log line, the provider's usage) writing
 * ROWS_PER_TURN rows and reading a few dozen; a share of them offload one body (an R2 put, two KV writes) or
 * recall one (an R2 get and two more SessionDO requests).
 */
export function dailyCost(
  turnsPerDay: number,
  o = { offloadRate: 0.05, recallRate: 0.05, rowsPerTurn: ROWS_PER_TURN },
) {
  const month = 30;
  const m = (x: number) => (x * month) / 1e6; // per month, in millions
  const workerRequests = m(turnsPerDay * (1 + o.recallRate));
  const workerCpuMs = m(turnsPerDay * 8); // ~8 ms of CPU a turn (latency bench's profile, steady turns)
  const doRequests = m(turnsPerDay * (3 + 2 * o.recallRate));
  const doGbSeconds = (turnsPerDay * (3 + 2 * o.recallRate) * 0.003 * 0.128 * month) / 1e6; // ~3 ms a call
  const rowsWritten = m(turnsPerDay * o.rowsPerTurn);
  const rowsRead = m(turnsPerDay * 40);
  const r2ClassA = m(turnsPerDay * o.offloadRate);
  const r2ClassB = m(turnsPerDay * o.recallRate);
  const kvWrites = m(turnsPerDay * o.offloadRate * 2);
  const usd = {
    workers: Math.max(0, workerRequests - 10) * 0.3 + Math.max(0, workerCpuMs - 30) * 0.02,
    durable_objects:
      Math.max(0, doRequests - 1) * 0.15 +
      Math.max(0, doGbSeconds - 0.4) * 12.5 +
      Math.max(0, rowsWritten - 50) * 1.0 +
      Math.max(0, rowsRead - 25_000) * 0.001,
    r2: Math.max(0, r2ClassA - 1) * 4.5 + Math.max(0, r2ClassB - 10) * 0.36,
    kv: Math.max(0, kvWrites - 1) * 5.0,
  };
  return {
    per_month: {
      workerRequests,
      doRequests,
      doGbSeconds,
      rowsWritten,
      r2ClassA,
      r2ClassB,
      kvWrites,
    },
    usd_per_month: usd,
    total_usd_per_month: 5 + Object.values(usd).reduce((a, b) => a + b, 0),
  };
}

export function benchScale(sessionCounts = [100, 1_000, 10_000, 100_000]): void {
  console.log(
    `scale simulation: one tenant, a turn every 20 s per session, ${DEFAULT_SHARDS} shards, 10 simulated minutes, every session adaptive`,
  );
  console.log(
    "  sessions   turns/s   SessionDO peak/object   shard mean/peak rps   tenant DO mean/peak rps",
  );
  for (const sessions of sessionCounts) {
    const r = simulate({ sessions, seconds: sessions >= 100_000 ? 120 : 600 });
    console.log(
      `  ${String(sessions).padStart(8)}   ${(r.turns / r.options.seconds).toFixed(0).padStart(7)}   ${String(r.session.peakPerObject).padStart(21)}   ${`${r.shard.meanPerShard.toFixed(2)} / ${r.shard.peakPerShard}`.padStart(19)}   ${`${r.tenant.mean.toFixed(2)} / ${r.tenant.peak}`.padStart(23)}`,
    );
  }
  console.log(
    `  cost of a day of turns, per month at list prices (the $5 Workers Paid base included), ${ROWS_PER_TURN} rows written a turn:`,
  );
  const line = (c: ReturnType<typeof dailyCost>) =>
    `$${c.total_usd_per_month.toFixed(2)} (${Object.entries(c.usd_per_month)
      .map(([k, v]) => `${k} $${v.toFixed(2)}`)
      .join(", ")})`;
  for (const perDay of [1_000, 100_000, 10_000_000])
    console.log(
      `  ${perDay.toLocaleString("en").padStart(12)} turns/day: ${line(dailyCost(perDay))}`,
    );
  // The same turns when every log line and sample was written with its turn (10 rows), and for busy
  // sessions whose held lines and samples go 32 at once (2.25 rows).
  for (const rowsPerTurn of [10, 2.25])
    console.log(
      `    10,000,000 turns/day at ${rowsPerTurn} rows a turn: ${line(dailyCost(10_000_000, { offloadRate: 0.05, recallRate: 0.05, rowsPerTurn }))}`,
    );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const i = process.argv.indexOf("--sessions");
  benchScale(i === -1 ? undefined : process.argv[i + 1]!.split(",").map(Number));
}
