/**
 * `npm run bench -- extract-cache`: what the store's extraction cache saves a second `edge-offload serve`
 * process. Two serve processes on one store (a SQLite file, Postgres, Redis: Debian's servers started here
 * on 127.0.0.1, a missing one left out with a note); each round a fresh 50-page text PDF (its own bytes, so
 * its own key) goes to `/v1/extract` on A (a miss: parsed), then twice on B (the store's entry on B's first
 * sight of it, then B's in-process cache). Both processes are warmed first (pdf.js loaded, the HTTP path
 * taken), so the ratio is the cache's alone. Medians over the rounds; B ÷ A is the result.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { textPdf } from "../test/fixtures/pdf-writer.ts";
import { startServe } from "../test/support/serve.ts";
import { startPostgres, startRedis } from "../test/support/servers.ts";

const KEY = "sk-bench-extract-cache-01";
const VARS = {
  OFFLOAD_API_KEYS: `bench:${KEY}`,
  OFFLOAD_SECRET: "bench-extract-cache-secret-0123456789",
};
const ROUNDS = 7;
const PAGES = 50;

/** A text PDF of `PAGES` pages whose bytes differ per `seed`. */
const pdf = (seed: string) =>
  textPdf(
    Array.from({ length: PAGES }, (_, p) =>
      Array.from(
        { length: 40 },
        (_, l) =>
          `${seed} page ${p + 1} line ${l + 1}: item ${p * 40 + l}, ${(p * 40 + l) * 3} EUR`,
      ),
    ),
  );

async function extract(base: string, body: Uint8Array): Promise<{ ms: number; cache: string }> {
  const started = performance.now();
  const res = await fetch(`${base}/v1/extract`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/pdf" },
    body: new Blob([new Uint8Array(body)]),
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`/v1/extract answered ${res.status}`);
  return { ms: performance.now() - started, cache: res.headers.get("x-extract-cache") ?? "" };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function pair(name: string, store: string): Promise<void> {
  const [a, b] = await Promise.all([
    startServe({ store, vars: VARS }),
    startServe({ store, vars: VARS }),
  ]);
  try {
    await extract(a.base, pdf(`warm-a-${Date.now()}`));
    await extract(b.base, pdf(`warm-b-${Date.now()}`));
    const miss: number[] = [];
    const storeHit: number[] = [];
    const memoryHit: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const file = pdf(`${name}-${round}-${Date.now()}`);
      const first = await extract(a.base, file);
      const second = await extract(b.base, file);
      const third = await extract(b.base, file);
      if ([first.cache, second.cache, third.cache].join() !== "miss,hit,hit")
        throw new Error(
          `${name}: expected miss,hit,hit, got ${first.cache},${second.cache},${third.cache}`,
        );
      miss.push(first.ms);
      storeHit.push(second.ms);
      memoryHit.push(third.ms);
    }
    const m = median(miss);
    console.log(
      `| ${name} | ${m.toFixed(1)} ms | ${median(storeHit).toFixed(1)} ms (${(median(storeHit) / m).toFixed(3)}×) | ${median(memoryHit).toFixed(1)} ms (${(median(memoryHit) / m).toFixed(3)}×) |`,
    );
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
}

const dir = mkdtempSync(join(tmpdir(), "edge-offload-bench-xcache-"));
const [postgres, redis] = await Promise.all([startPostgres(), startRedis()]);
try {
  console.log(
    `extract-cache: /v1/extract of a fresh ${PAGES}-page PDF (${pdf("x").length} bytes), medians of ${ROUNDS} rounds\n` +
      "| store | A: miss (parsed) | B: the store's entry (÷ A) | B again: in-process (÷ A) |\n|---|---|---|---|",
  );
  await pair("SQLite file", `sqlite:${join(dir, "shared.db")}`);
  for (const [name, s] of [
    ["Postgres", postgres],
    ["Redis", redis],
  ] as const) {
    if ("missing" in s) console.log(`| ${name} | left out: ${s.missing} | | |`);
    else await pair(name, name === "Redis" ? `${s.url}/6` : s.url);
  }
} finally {
  await Promise.all([postgres, redis].map((s) => ("missing" in s ? null : s.stop())));
  rmSync(dir, { recursive: true, force: true });
}
