/**
 * `npm run bench -- stores`: what each store costs a turn and a recall, against MemoryStore in the same run
 * (rounds interleaved across the stores, so the machine's drift hits all alike; the ratios are the result).
 *
 * - A steady turn: `compact` of a session whose decisions are all taken (a warm-up turn took them): the
 *   session's state read, each decision replayed by its id, the turn's line written. Two requests: the ~1 MB,
 *   40-turn request of the transform bench, and a small turn with nothing to offload.
 * - A recall: `recall` of a slice of an offloaded body (a JSONPath into the catalog), p50 and p99.
 *
 * Stores: MemoryStore, SqliteStore on a file, PostgresStore and RedisStore on servers started here (Debian's
 * postgresql and redis-server on 127.0.0.1, throwaway directories; a missing one is left out with a note).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { OffloadStore } from "../src/core/ports.ts";
import { compact, recall } from "../src/lib.ts";
import { MemoryStore } from "../src/store/memory.ts";
import { PostgresStore } from "../src/store/postgres.ts";
import { RedisStore } from "../src/store/redis.ts";
import { SqliteStore } from "../src/store/sqlite.ts";
import { catalogTurn } from "../test/portable/catalog-turn.mjs";
import { anthropicRequest, ON } from "../test/support/providers.ts";
import { type RunningServer, startPostgres, startRedis } from "../test/support/servers.ts";
import { smallTurns } from "./lib/requests.ts";
import { fmt } from "./lib/stats.ts";
import { composeRequest } from "./transform.ts";

const SECRET = "bench-stores-secret-0123456789abcdef";

interface Entry {
  name: string;
  store: OffloadStore & { close?: () => Promise<void> };
  steady: Record<string, number[]>;
  recalls: number[];
  mem: string;
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

export async function benchStores(rounds = 30, recallsPerRound = 10): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "edge-offload-bench-stores-"));
  const servers: RunningServer[] = [];
  const entries: Entry[] = [];
  const add = (name: string, store: Entry["store"]) =>
    entries.push({ name, store, steady: {}, recalls: [], mem: "" });
  try {
    add("MemoryStore", new MemoryStore());
    add("SqliteStore (file)", await SqliteStore.open(join(dir, "bench.db"), { sweepEveryMs: 0 }));
    const [pg, redis] = await Promise.all([startPostgres(), startRedis()]);
    if ("missing" in pg) console.log(`PostgresStore: left out (${pg.missing})`);
    else {
      servers.push(pg);
      add("PostgresStore", await PostgresStore.connect(pg.url, { sweepEveryMs: 0 }));
    }
    if ("missing" in redis) console.log(`RedisStore: left out (${redis.missing})`);
    else {
      servers.push(redis);
      add("RedisStore", await RedisStore.connect(redis.url, { sweepEveryMs: 0 }));
    }
    const requests: [string, string][] = [
      [
        "1 MB, 40 turns",
        JSON.stringify({ ...(JSON.parse(composeRequest()) as object), model: "claude-sonnet-4-6" }),
      ],
      ["small turn", JSON.stringify(anthropicRequest({ messages: smallTurns() }))],
    ];
    const turn = (e: Entry, session: string, request: string) =>
      compact({ request, session, store: e.store, config: ON, secret: SECRET });
    // Warm-up: each session's decisions taken, the catalog offloaded for the recalls.
    for (const e of entries) {
      for (const [name, request] of requests) {
        await turn(e, slug(name), request);
        await turn(e, slug(name), request);
      }
      const out = await turn(e, "recall", JSON.stringify(catalogTurn()));
      e.mem = /trm_[0-9a-f]{24}/.exec(out.request)![0];
    }
    for (let r = 0; r < rounds; r++)
      for (const e of entries) {
        for (const [name, request] of requests) {
          const t0 = performance.now();
          await turn(e, slug(name), request);
          (e.steady[name] ??= []).push(performance.now() - t0);
        }
        for (let i = 0; i < recallsPerRound; i++) {
          const t0 = performance.now();
          const a = await recall({
            store: e.store,
            session: "recall",
            mem_id: e.mem,
            json_path: `items[${(r * 37 + i) % 1500}].name`,
          });
          e.recalls.push(performance.now() - t0);
          if (a.is_error) throw new Error(`${e.name}: ${a.content}`);
        }
      }
    const base = entries[0]!;
    for (const [name] of requests) {
      const b = quantile(base.steady[name]!, 0.5);
      console.log(`stores, steady turn (${name}): p50 per store, and ÷ MemoryStore in this run`);
      for (const e of entries) {
        const p50 = quantile(e.steady[name]!, 0.5);
        console.log(
          `  ${e.name.padEnd(20)} ${fmt(p50)} ms  ${(p50 / b).toFixed(2)}×  (+${fmt(Math.max(0, p50 - b))} ms)`,
        );
      }
    }
    const [b50, b99] = [quantile(base.recalls, 0.5), quantile(base.recalls, 0.99)];
    console.log(
      `stores, recall of a slice (${base.recalls.length} per store): p50, p99, and ÷ MemoryStore`,
    );
    for (const e of entries) {
      const [p50, p99] = [quantile(e.recalls, 0.5), quantile(e.recalls, 0.99)];
      console.log(
        `  ${e.name.padEnd(20)} p50 ${fmt(p50)} ms (${(p50 / b50).toFixed(2)}×), p99 ${fmt(p99)} ms (${(p99 / b99).toFixed(2)}×)`,
      );
    }
  } finally {
    for (const e of entries) await e.store.close?.();
    await Promise.all(servers.map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
}

const slug = (name: string) => name.replace(/\W+/g, "-");
