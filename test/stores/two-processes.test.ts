/**
 * Two processes on one shared store (Postgres, Redis, a SQLite file): a body one offloads, the other
 * recalls; concurrent turns of one session, one process offloading and the other keeping results full,
 * render identical bytes (the first decision to land stands, and the other process renders it); a file
 * one process extracted, the other reads from the store's extraction cache.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { catalogTurn } from "../portable/catalog-turn.mjs";
import { need } from "./need.ts";
import { type Peer, startPeer } from "./peers.ts";

const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };
const KEEP = { tool_result_compaction_enabled: true, tool_result_offload_enabled: false };
const postgres = need("postgres");
const redis = need("redis");
const dir = mkdtempSync(join(tmpdir(), "edge-offload-two-"));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A fresh database on the shared server, for the processes' default tables. */
async function freshDatabase(url: string): Promise<string> {
  const name = `eo_two_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.href;
}

/** A large settled tool result, then `n` more of them, each its own tool call. */
function turnWith(n: number): string {
  const extra = Array.from({ length: n }, (_, i) => [
    {
      role: "assistant",
      content: [{ type: "tool_use", id: `toolu_x${i}`, name: "dump", input: { page: i } }],
    },
    {
      role: "user",
      content: [
        {
          type: "tool_result",
          tool_use_id: `toolu_x${i}`,
          content: JSON.stringify({
            rows: Array.from({ length: 800 }, (_, j) => ({ j, page: i, v: `value-${i}-${j}` })),
          }),
        },
      ],
    },
  ]).flat();
  return JSON.stringify(catalogTurn([...extra, { role: "assistant", content: "Done." }]));
}

const memIds = (text: string) => [...new Set(text.match(/trm_[A-Za-z0-9_-]{20,}/g) ?? [])];

function suite(name: string, url: () => Promise<string> | string, skip: boolean) {
  describe.skipIf(skip)(`two processes on one ${name}`, () => {
    it("recall across processes, and concurrent turns of one session render identical bytes", async () => {
      const store = await url();
      const a: Peer = startPeer(store);
      const b: Peer = startPeer(store);
      try {
        const session = `two-${name.replace(/\W/g, "")}-${Date.now().toString(36)}`;
        const first = await a.send({ op: "compact", session, request: turnWith(0), config: ON });
        expect(first.offloaded).toBe(1);
        const [mem] = memIds(first.request as string);
        expect(mem).toBeDefined();
        const read = await b.send({
          op: "recall",
          session,
          mem_id: mem,
          json_path: "items[1499].name",
        });
        expect(read).toMatchObject({ is_error: false });
        expect(read.content).toContain("item-1499");
        // Rounds of one session's next turn in both processes at once: a offloads, b keeps full; the
        // decision that lands first stands, and both render it.
        for (let round = 1; round <= 3; round++) {
          const request = turnWith(round * 2);
          const [x, y] = await Promise.all([
            a.send({ op: "compact", session, request, config: ON }),
            b.send({ op: "compact", session, request, config: KEEP }),
          ]);
          expect(x.errors, "a's problems").toEqual([]);
          expect(y.errors, "b's problems").toEqual([]);
          expect(x.request, `round ${round}`).toBe(y.request);
        }
        // Every stub either process rendered is recalled by the other.
        const last = await a.send({ op: "compact", session, request: turnWith(6), config: ON });
        for (const id of memIds(last.request as string)) {
          const r = await b.send({ op: "recall", session, mem_id: id, json_path: "$..v" });
          expect(r.is_error, id).toBe(false);
        }
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it("a file one process extracted, the other reads from the store's cache", async () => {
      const store = await url();
      const a: Peer = startPeer(store);
      const b: Peer = startPeer(store);
      try {
        const pdf = { op: "extract", file: "multipage.pdf", media_type: "application/pdf" };
        const first = await a.send(pdf);
        expect(first).toMatchObject({ cached: false, outcome: { ok: true }, cache_error: null });
        const second = await b.send(pdf);
        expect(second).toMatchObject({ cached: true, cache_error: null });
        expect(second.outcome).toEqual(first.outcome);
        // Extracted again in b (a miss there), for the ratio: what the cache saves a second process.
        const other = await b.send({ ...pdf, file: "text.pdf" });
        expect(other.cached).toBe(false);
        console.log(
          `[two processes on one ${name}] a PDF's extraction: the second process's hit ${second.ms.toFixed(1)} ms, ` +
            `the first's miss ${first.ms.toFixed(1)} ms (${(second.ms / first.ms).toFixed(3)}×); ` +
            `another PDF's miss in the second ${other.ms.toFixed(1)} ms`,
        );
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });
  });
}

suite("Postgres", () => freshDatabase(postgres.url!), postgres.url === undefined);
suite("Redis", () => `${redis.url}/1`, redis.url === undefined);
suite("SQLite file", () => `sqlite:${join(dir, "shared.db")}`, false);
