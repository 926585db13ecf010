/**
 * The request rates the design puts on each Durable Object, simulated event by event for one tenant with N
 * active sessions (docs/scale.md reads its numbers from here), and what a day of turns costs at list prices.
 *
 * Each session runs turns as a Poisson process (one every `gap` seconds on average). Per turn, as the code
 * does it: one SessionDO call before the answer (`begin`) and one after it (the turn's line, with the
 * provider's usage when the proxy measured it); a first sight commits before the answer instead. A recall is
 * two more (its config, its count). The tenant's object hears, in the background, one addition per offload,
 * per recall of an offloaded result and per measured turn (its calibration sample), one per ended session (its
 * length, from the session's alarm), and one read per Worker isolate serving the tenant per
 * TENANT_CACHE_TTL_MS. Counted per object and per second of simulated time.
 *
 * `npm run bench -- scale` (add `--sessions 1000,100000` to choose N).
 */
import { TENANT_CACHE_TTL_MS } from "../src/store/tenant-cache.ts";
import { random } from "./lib/random.ts";

export interface SimOptions {
  sessions: number;
  /** Mean seconds between a session's turns. */
  gap: number;
  /** Simulated seconds. */
  seconds: number;
  /** Share of turns that offload a new result (first sight), and that recall one. */
  offloadRate: number;
  recallRate: number;
  /** Share of turns whose provider usage is measured (a calibration sample for the tenant). */
  measured: number;
  /**
   * Mean turns of a session (the corpus's medians: 34 on SWE, 11 on tau-bench): at steady state as many
   * sessions end as start, each ending one alarm in its object and one addition to the tenant's.
   */
  sessionTurns: number;
  /** Worker isolates serving the tenant (each reads the tenant's aggregate once per TTL). */
  isolates: number;
  seed: number;
}

export interface SimResult {
  options: SimOptions;
  turns: number;
  /** SessionDO requests: the busiest second of one object. */
  session: { peakPerObject: number; total: number };
  /** The tenant's object: requests per second, mean over the run and the busiest second. */
  tenant: { mean: number; peak: number; total: number };
}

export function simulate(options: Partial<SimOptions> = {}): SimResult {
  const o: SimOptions = {
    sessions: 1000,
    gap: 20,
    seconds: 600,
    offloadRate: 0.05,
    recallRate: 0.05,
    measured: 1,
    sessionTurns: 30,
    isolates: 50,
    seed: 7,
    ...options,
  };
  const rand = random(o.seed);
  const exp = (mean: number) => -Math.log(1 - rand()) * mean;
  const seconds = Math.ceil(o.seconds);
  const tenantCounts = new Uint32Array(seconds + 1);
  const perSecond = new Map<number, number>();
  let sessionPeak = 0;
  let sessionTotal = 0;
  let turns = 0;
  const sessionCall = (s: number, at: number, n = 1) => {
    sessionTotal += n;
    const key = Math.floor(at) * o.sessions + s;
    const v = (perSecond.get(key) ?? 0) + n;
    perSecond.set(key, v);
    if (v > sessionPeak) sessionPeak = v;
  };
  const tenantCall = (at: number) => {
    tenantCounts[Math.min(seconds, Math.floor(at))]!++;
  };
  // Turns: each session's own Poisson process (the sum of them all is the tenant's).
  for (let s = 0; s < o.sessions; s++) {
    for (let at = exp(o.gap); at < o.seconds; at += exp(o.gap)) {
      turns++;
      sessionCall(s, at, 2); // begin, then the line (and its usage) after the answer
      if (rand() < o.offloadRate) tenantCall(at); // the offload, added after the answer
      if (rand() < o.measured) tenantCall(at); // the calibration sample
      if (rand() < 1 / o.sessionTurns) tenantCall(at); // a session's length, as one ends (steady state)
      if (rand() < o.recallRate) {
        sessionCall(s, at, 2); // the recall's config read and its count
        tenantCall(at); // the recall, added after the answer
      }
    }
  }
  // Reads: each isolate refreshes its cached aggregate once per TTL, at a random phase.
  const ttl = TENANT_CACHE_TTL_MS / 1000;
  for (let i = 0; i < o.isolates; i++)
    for (let at = rand() * ttl; at < o.seconds; at += ttl) tenantCall(at);
  const tenantTotal = tenantCounts.reduce((a, b) => a + b, 0);
  return {
    options: o,
    turns,
    session: { peakPerObject: sessionPeak, total: sessionTotal },
    tenant: { mean: tenantTotal / o.seconds, peak: Math.max(...tenantCounts), total: tenantTotal },
  };
}

/**
 * SQLite rows a steady proxied turn with the provider's usage writes in its SessionDO, on a full turn log,
 * as `npm run bench -- rows` measures it (the session's row, the line with its usage, the oldest line
 * trimmed).
 */
export const ROWS_PER_TURN = 3;

/**
 * What a day of turns costs at list prices (docs/scale.md gives each price's source), per component. A turn:
 * one Worker request; two SessionDO requests (begin, the line with its usage) writing ROWS_PER_TURN rows and
 * reading a few dozen; a share of them offload one body (an R2 put, two KV writes) or recall one (an R2 get
 * and two more SessionDO requests); the tenant's object gets one request per offload, recall and measured
 * turn; a session's end (one per `sessionTurns` turns) is its object's alarm (one row, the session counted)
 * and one addition to the tenant's (two rows: the length's bucket, the count of ended sessions).
 */
export function dailyCost(
  turnsPerDay: number,
  o = {
    offloadRate: 0.05,
    recallRate: 0.05,
    measured: 1,
    rowsPerTurn: ROWS_PER_TURN,
    sessionTurns: 30,
  },
) {
  const month = 30;
  const m = (x: number) => (x * month) / 1e6; // per month, in millions
  const workerRequests = m(turnsPerDay * (1 + o.recallRate));
  const workerCpuMs = m(turnsPerDay * 8); // ~8 ms of CPU a turn (latency bench's profile, steady turns)
  const ends = 1 / o.sessionTurns;
  const doCalls =
    turnsPerDay * (2 + 2 * o.recallRate + o.offloadRate + o.recallRate + o.measured + 2 * ends);
  const doRequests = m(doCalls);
  const doGbSeconds = (doCalls * 0.003 * 0.128 * month) / 1e6; // ~3 ms a call
  // The tenant's object writes a row per offload and recall, one per measured turn (its calibration),
  // two per ended session (the session's object one more).
  const rowsWritten = m(
    turnsPerDay * (o.rowsPerTurn + o.offloadRate + o.recallRate + o.measured + 3 * ends),
  );
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
    "scale simulation: one tenant, a turn every 20 s per session, every turn measured, 5% offload, 5% recall, sessions of 30 turns on average, 50 Worker isolates, 10 simulated minutes",
  );
  console.log("  sessions   turns/s   SessionDO peak/object   tenant DO mean/peak rps");
  for (const sessions of sessionCounts) {
    const r = simulate({ sessions, seconds: sessions >= 100_000 ? 120 : 600 });
    console.log(
      `  ${String(sessions).padStart(8)}   ${(r.turns / r.options.seconds).toFixed(0).padStart(7)}   ${String(r.session.peakPerObject).padStart(21)}   ${`${r.tenant.mean.toFixed(1)} / ${r.tenant.peak}`.padStart(23)}`,
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
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const i = process.argv.indexOf("--sessions");
  benchScale(i === -1 ? undefined : process.argv[i + 1]!.split(",").map(Number));
}
