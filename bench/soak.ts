/**
 * The soak: many concurrent sessions doing realistic turns against the real `wrangler dev` on 127.0.0.1 for a
 * bounded time. Each session replays a corpus session turn by turn through POST …/compact with offload on
 * (the prompt the agent sent before each assistant message), recalls now and then a body one of its stubs
 * names, and some sessions are deleted half way (the client then starts a new one). At the end:
 * - zero 5xx over the whole run;
 * - zero lost bodies: every mem_id a live session was shown is recallable;
 * - every deleted session reads as unknown (404), and its mem_ids no longer recall;
 * - latency percentiles per kind of call, and the Worker isolate's heap sampled across the run (after a
 *   full collection each time, through the inspector): flat, not growing with the calls served.
 *
 * `npm run soak` (3 minutes, the shared corpus) or `npm run soak -- --seconds 25 --sessions 6` (the short
 * variant the smoke tests run, on the corpus sample that ships in test/fixtures).
 */
import { existsSync } from "node:fs";
import {
  assistantIndexes,
  type CorpusSession,
  promptAt,
  readSessions,
  SAMPLE,
} from "../test/support/corpus.ts";
import { CORPUS_DIR } from "./lib/corpus.ts";
import { KEY, ms, ON, percentile, type Rig, startRig, timed } from "./lib/loopback.ts";
import { random } from "./lib/random.ts";

export interface SoakOptions {
  seconds: number;
  /** Sessions running at once. */
  sessions: number;
  /** Share of turns followed by a recall, and of sessions deleted half way. */
  recallRate: number;
  deleteRate: number;
  /** Largest request replayed (bytes); longer prompts of a session end it. */
  maxRequestBytes: number;
  seed: number;
  /** Print progress lines. */
  verbose: boolean;
}

export interface SoakReport {
  seconds: number;
  calls: Record<string, number>;
  server_errors: number;
  failures: string[];
  sessions_run: number;
  sessions_deleted: number;
  mem_ids_checked: number;
  lost_bodies: number;
  deleted_still_known: number;
  latency_ms: Record<string, { p50: number; p90: number; p99: number; max: number }>;
  heap_mb: number[];
  heap_growth: number | null;
}

const DEFAULTS: SoakOptions = {
  seconds: 180,
  sessions: 12,
  recallRate: 0.15,
  deleteRate: 0.1,
  maxRequestBytes: 4_000_000,
  seed: 20261201,
  verbose: true,
};

function corpusSessions(): CorpusSession[] {
  const files = ["large", "swe", "api"].map((n) => `${CORPUS_DIR}/${n}-sessions.dev.jsonl.gz`);
  if (files.every(existsSync)) return files.flatMap((f) => readSessions(f));
  return readSessions(SAMPLE);
}

const MEM = /trm_[0-9a-f]{24}/g;
const auth = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };

export async function soak(options: Partial<SoakOptions> = {}, rig?: Rig): Promise<SoakReport> {
  const o = { ...DEFAULTS, ...options };
  const own = rig === undefined;
  const r = rig ?? (await startRig());
  const rand = random(o.seed);
  const corpus = corpusSessions().filter((s) => assistantIndexes(s).length > 0);
  const times: Record<string, number[]> = { compact: [], recall: [], delete: [] };
  const calls: Record<string, number> = { compact: 0, recall: 0, delete: 0 };
  const failures: string[] = [];
  let serverErrors = 0;
  const live = new Map<string, Set<string>>();
  const deleted = new Map<string, Set<string>>();
  let sessionsRun = 0;
  const deadline = Date.now() + o.seconds * 1000;
  const heap: number[] = [];
  const note = (what: string) => {
    if (failures.length < 50) failures.push(what);
  };

  const call = async (kind: string, path: string, init: RequestInit) => {
    const res = await timed(`${r.base}${path}`, init);
    calls[kind]!++;
    times[kind]!.push(res.ms);
    if (res.status >= 500) {
      serverErrors++;
      note(`${kind} ${path}: ${res.status} ${res.text.slice(0, 200)}`);
    }
    return res;
  };

  /** One client: sessions one after another until the deadline. */
  const client = async (n: number) => {
    for (let k = 0; Date.now() < deadline; k++) {
      const source = corpus[Math.floor(rand() * corpus.length)]!;
      const session = `soak-${o.seed}-${n}-${k}`;
      const shown = new Set<string>();
      live.set(session, shown);
      sessionsRun++;
      const turns = assistantIndexes(source);
      const deleteAt = rand() < o.deleteRate ? Math.floor(rand() * turns.length) : -1;
      for (const [t, at] of turns.entries()) {
        if (Date.now() >= deadline) break;
        const body = JSON.stringify(promptAt(source, at, "claude-opus-4-5"));
        if (body.length > o.maxRequestBytes) break;
        const res = await call("compact", `/v1/sessions/${session}/compact`, {
          method: "POST",
          headers: { ...auth, "x-offload-config": JSON.stringify(ON) },
          body,
        });
        if (res.status !== 200) {
          note(`compact ${session} turn ${t}: ${res.status} ${res.text.slice(0, 200)}`);
          break;
        }
        for (const m of res.text.match(MEM) ?? []) shown.add(m);
        if (shown.size > 0 && rand() < o.recallRate) {
          const mems = [...shown];
          const mem = mems[Math.floor(rand() * mems.length)]!;
          const rec = await call("recall", `/v1/sessions/${session}/recall`, {
            method: "POST",
            headers: auth,
            body: JSON.stringify({ mem_id: mem, offset: 0, max_chars: 400 }),
          });
          if (rec.status !== 200 || (JSON.parse(rec.text) as { is_error: boolean }).is_error)
            note(`recall ${session} ${mem}: ${rec.status} ${rec.text.slice(0, 200)}`);
        }
        if (t === deleteAt) {
          const del = await call("delete", `/v1/sessions/${session}`, {
            method: "DELETE",
            headers: auth,
          });
          if (del.status !== 204) note(`delete ${session}: ${del.status}`);
          live.delete(session);
          deleted.set(session, shown);
          break;
        }
      }
    }
  };

  const sampler = (async () => {
    while (Date.now() < deadline) {
      const h = await r.heap();
      if (h !== null) heap.push(h / 1e6);
      if (o.verbose)
        console.log(
          `  soak: ${Math.round((deadline - Date.now()) / 1000)} s left, ${calls.compact} turns, ${calls.recall} recalls, ${calls.delete} deletes, ${serverErrors} 5xx${h === null ? "" : `, heap ${(h / 1e6).toFixed(1)} MB`}`,
        );
      // A read the inspector did not answer (a loaded machine) is tried again soon, so a short run
      // still gets its samples.
      const wait = h === null ? 250 : Math.min(10_000, (o.seconds * 1000) / 8);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  })();

  try {
    await Promise.all(Array.from({ length: o.sessions }, (_, n) => client(n)));
    await sampler;
    const last = await r.heap();
    if (last !== null) heap.push(last / 1e6);

    // Nothing lost, nothing left: every live mem_id recalls; every deleted session is unknown.
    let checked = 0;
    let lost = 0;
    for (const [session, mems] of live)
      for (const mem of mems) {
        checked++;
        const rec = await timed(`${r.base}/v1/sessions/${session}/recall`, {
          method: "POST",
          headers: auth,
          body: JSON.stringify({ mem_id: mem, offset: 0, max_chars: 20 }),
        });
        if (rec.status !== 200 || (JSON.parse(rec.text) as { is_error: boolean }).is_error) {
          lost++;
          note(`lost ${session} ${mem}: ${rec.status} ${rec.text.slice(0, 120)}`);
        }
      }
    let stillKnown = 0;
    for (const [session, mems] of deleted) {
      const view = await timed(`${r.base}/v1/sessions/${session}`, { headers: auth });
      let known = view.status !== 404;
      for (const mem of mems) {
        const rec = await timed(`${r.base}/v1/sessions/${session}/recall`, {
          method: "POST",
          headers: auth,
          body: JSON.stringify({ mem_id: mem }),
        });
        if (rec.status === 200 && !(JSON.parse(rec.text) as { is_error: boolean }).is_error)
          known = true;
      }
      if (known) {
        stillKnown++;
        note(`deleted session ${session} still answers`);
      }
    }

    const third = Math.max(1, Math.floor(heap.length / 3));
    const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const report: SoakReport = {
      seconds: o.seconds,
      calls,
      server_errors: serverErrors,
      failures,
      sessions_run: sessionsRun,
      sessions_deleted: deleted.size,
      mem_ids_checked: checked,
      lost_bodies: lost,
      deleted_still_known: stillKnown,
      latency_ms: Object.fromEntries(
        Object.entries(times)
          .filter(([, xs]) => xs.length > 0)
          .map(([k, xs]) => [
            k,
            {
              p50: percentile(xs, 50),
              p90: percentile(xs, 90),
              p99: percentile(xs, 99),
              max: percentile(xs, 100),
            },
          ]),
      ),
      heap_mb: heap.map((h) => Math.round(h * 10) / 10),
      heap_growth:
        heap.length >= 3 ? avg(heap.slice(-third)) / avg(heap.slice(0, third)) - 1 : null,
    };
    return report;
  } finally {
    if (own) await r.stop();
  }
}

export function printReport(report: SoakReport): void {
  console.log(
    `soak: ${report.seconds} s, ${report.sessions_run} sessions (${report.sessions_deleted} deleted), ${report.calls.compact} turns, ${report.calls.recall} recalls, ${report.calls.delete} deletes`,
  );
  console.log(
    `  5xx: ${report.server_errors}; lost bodies: ${report.lost_bodies} of ${report.mem_ids_checked} mem_ids; deleted sessions still answering: ${report.deleted_still_known}`,
  );
  for (const [k, l] of Object.entries(report.latency_ms))
    console.log(
      `  ${k.padEnd(8)} p50 ${ms(l.p50)} ms   p90 ${ms(l.p90)} ms   p99 ${ms(l.p99)} ms   max ${ms(l.max)} ms`,
    );
  console.log(
    `  Worker heap after GC (MB): ${report.heap_mb.join(", ")}${report.heap_growth === null ? "" : `; last third vs first third ${(report.heap_growth * 100).toFixed(0)}%`}`,
  );
  for (const f of report.failures) console.log(`  ! ${f}`);
}

function arg(name: string): number | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? undefined : Number(process.argv[i + 1]);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const report = await soak({
    ...(arg("seconds") === undefined ? {} : { seconds: arg("seconds")! }),
    ...(arg("sessions") === undefined ? {} : { sessions: arg("sessions")! }),
  });
  printReport(report);
  const ok =
    report.server_errors === 0 && report.lost_bodies === 0 && report.deleted_still_known === 0;
  process.exit(ok ? 0 : 1);
}
