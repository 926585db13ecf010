/**
 * The extraction cache in SQL on node:sqlite (SqlExtractionCache, SqliteStore's own) and a cache in the
 * process in front of a store's (TieredExtractionCache, what `serve` runs): the contract, the value cap,
 * an unreadable row read as a miss, the lifetime and the sweep, the tenant's bounds, two stores on one
 * file, and the extraction answering whatever the cache does. Postgres and Redis run the same contract in
 * test/stores.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { runExtractionCacheContract } from "../../src/contract/extraction-cache.contract.ts";
import type { CachedExtraction, ExtractionCache } from "../../src/core/ports.ts";
import { extractCached } from "../../src/extract/cache.ts";
import { EXTRACTION_VALUE_MAX_BYTES, TieredExtractionCache } from "../../src/store/extractions.ts";
import { MemoryExtractionCache } from "../../src/store/memory-extractions.ts";
import { openStore } from "../../src/store/open.ts";
import { syncSqliteSql } from "../../src/store/sql.ts";
import { SqlExtractionCache } from "../../src/store/sql-extractions.ts";
import { SqliteStore } from "../../src/store/sqlite.ts";

const dir = mkdtempSync(join(tmpdir(), "edge-offload-xcache-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = () => join(dir, `x-${++files}.db`);
const quiet = { log: () => {}, sweepEveryMs: 0 };
const enc = new TextEncoder();

const ok = (text: string): CachedExtraction => ({
  ok: true,
  result: { text, format: "txt", pages: 1, pages_extracted: 1, truncated: false },
});

/** A row's value overwritten with what is not JSON. */
const corrupter = (db: DatabaseSync) => async (tenant: string, key: string) => {
  db.prepare("UPDATE eo_extractions SET value = ? WHERE tenant = ? AND key = ?").run(
    '{"ok":true,"result":{"te',
    tenant,
    key,
  );
};

const rows = (db: DatabaseSync, tenant?: string) =>
  Number(
    (
      db
        .prepare(
          `SELECT count(*) AS n FROM eo_extractions${tenant === undefined ? "" : " WHERE tenant = ?"}`,
        )
        .get(...(tenant === undefined ? [] : [tenant])) as { n: number }
    ).n,
  );

{
  let db: DatabaseSync;
  runExtractionCacheContract(
    "SqlExtractionCache (node:sqlite)",
    () => new SqlExtractionCache(syncSqliteSql((db = new DatabaseSync(":memory:")))),
    { capBytes: EXTRACTION_VALUE_MAX_BYTES, corrupt: (t, k) => corrupter(db)(t, k) },
  );
}
{
  let db: DatabaseSync;
  runExtractionCacheContract(
    "SqliteStore (its own cache)",
    () => new SqliteStore((db = new DatabaseSync(file())), quiet),
    { capBytes: EXTRACTION_VALUE_MAX_BYTES, corrupt: (t, k) => corrupter(db)(t, k) },
  );
}
runExtractionCacheContract(
  "TieredExtractionCache (memory over SQL)",
  () =>
    new TieredExtractionCache(
      new MemoryExtractionCache(),
      new SqlExtractionCache(syncSqliteSql(new DatabaseSync(":memory:"))),
    ),
);

describe("the extraction cache in SQL", () => {
  it("reads nothing past the lifetime, and the store's sweep deletes it", async () => {
    let now = 1_000_000_000;
    const db = new DatabaseSync(file());
    const store = new SqliteStore(db, { ...quiet, retentionSeconds: 60, now: () => now });
    await store.putExtraction("t", "old", ok("old"));
    now += 30_000;
    await store.putExtraction("t", "new", ok("new"));
    expect(await store.sweep()).toMatchObject({ extractions: 0 });
    now += 31_000; // old is 61 s old, new 31 s
    expect(await store.getExtraction("t", "old")).toBeNull();
    expect(await store.getExtraction("t", "new")).toEqual(ok("new"));
    expect(rows(db)).toBe(2);
    expect(await store.sweep()).toMatchObject({ extractions: 1 });
    expect(rows(db)).toBe(1);
    now += 30_000;
    expect(await store.sweep()).toMatchObject({ extractions: 1 });
    expect(rows(db)).toBe(0);
    await store.close();
  });

  it("ages entries out after 7 days when sessions are kept until deleted (retention 0)", async () => {
    let now = 1_000_000_000;
    const cache = new SqlExtractionCache(syncSqliteSql(new DatabaseSync(":memory:")), {
      retentionSeconds: 0,
      now: () => now,
    });
    await cache.putExtraction("t", "k", ok("a"));
    now += 7 * 86_400_000 - 1;
    expect(await cache.getExtraction("t", "k")).toEqual(ok("a"));
    expect(await cache.expire(10)).toBe(0);
    now += 1;
    expect(await cache.getExtraction("t", "k")).toBeNull();
    expect(await cache.expire(10)).toBe(1);
  });

  it("deletes a tenant's expired entries on its next put, for a host that never sweeps", async () => {
    let now = 1_000_000_000;
    const db = new DatabaseSync(":memory:");
    const cache = new SqlExtractionCache(syncSqliteSql(db), {
      retentionSeconds: 60,
      now: () => now,
    });
    await cache.putExtraction("t", "old", ok("old"));
    await cache.putExtraction("u", "other", ok("other"));
    now += 60_000;
    await cache.putExtraction("t", "new", ok("new"));
    expect(rows(db, "t")).toBe(1);
    expect(rows(db, "u")).toBe(1); // another tenant's: the sweep's
  });

  it("keeps a tenant within its entries and bytes, the oldest out first, other tenants untouched", async () => {
    let now = 0;
    const db = new DatabaseSync(":memory:");
    const byCount = new SqlExtractionCache(syncSqliteSql(db), {
      maxTenantEntries: 3,
      now: () => ++now,
    });
    await byCount.putExtraction("other", "o", ok("o"));
    for (const k of ["a", "b", "c", "d", "e"]) await byCount.putExtraction("t", k, ok(k));
    expect(rows(db, "t")).toBe(3);
    for (const k of ["a", "b"]) expect(await byCount.getExtraction("t", k)).toBeNull();
    for (const k of ["c", "d", "e"]) expect(await byCount.getExtraction("t", k)).toEqual(ok(k));
    expect(await byCount.getExtraction("other", "o")).toEqual(ok("o"));
    // Rewriting an old key makes it the newest.
    await byCount.putExtraction("t", "c", ok("c2"));
    await byCount.putExtraction("t", "f", ok("f"));
    expect(await byCount.getExtraction("t", "d")).toBeNull();
    expect(await byCount.getExtraction("t", "c")).toEqual(ok("c2"));

    const size = JSON.stringify(ok("x".repeat(1000))).length;
    const byBytes = new SqlExtractionCache(syncSqliteSql(new DatabaseSync(":memory:")), {
      maxTenantBytes: 3 * size,
      now: () => ++now,
    });
    for (let i = 0; i < 5; i++) await byBytes.putExtraction("t", `k${i}`, ok("x".repeat(1000)));
    expect(await byBytes.getExtraction("t", "k1")).toBeNull();
    for (const k of ["k2", "k3", "k4"]) expect(await byBytes.getExtraction("t", k)).not.toBeNull();
    // A value over the tenant's whole bound is not stored (it would empty the tenant for itself).
    await byBytes.putExtraction("t", "huge", ok("x".repeat(4 * size)));
    expect(await byBytes.getExtraction("t", "huge")).toBeNull();
    expect(await byBytes.getExtraction("t", "k4")).not.toBeNull();
  });

  it("reads nothing and creates no table before the first write", async () => {
    const db = new DatabaseSync(":memory:");
    const cache = new SqlExtractionCache(syncSqliteSql(db));
    expect(await cache.getExtraction("t", "k")).toBeNull();
    expect(await cache.expire(10)).toBe(0);
    expect(
      db.prepare("SELECT name FROM sqlite_master WHERE name = 'eo_extractions'").all(),
    ).toEqual([]);
  });

  it("is shared by two stores on one file: the second reads what the first extracted", async () => {
    const path = file();
    const [a, b] = [await SqliteStore.open(path, quiet), await SqliteStore.open(path, quiet)];
    const attachment = { data: enc.encode("Invoice 42\nTotal: 1,250 €"), media_type: "text/plain" };
    const first = await extractCached({ attachment, tenant: "t", cache: a });
    const second = await extractCached({ attachment, tenant: "t", cache: b });
    expect([first.cached, second.cached]).toEqual([false, true]);
    expect(second.outcome).toEqual(first.outcome);
    expect((await extractCached({ attachment, tenant: "u", cache: b })).cached).toBe(false);
    await Promise.all([a.close(), b.close()]);
  });

  it("answers the extraction when the value is over the cap (not stored) or the row is unreadable", async () => {
    const db = new DatabaseSync(":memory:");
    const cache = new SqlExtractionCache(syncSqliteSql(db), { maxValueBytes: 1000 });
    const big = { data: enc.encode("word ".repeat(1000)), media_type: "text/plain" };
    for (let i = 0; i < 2; i++) {
      const out = await extractCached({ attachment: big, tenant: "t", cache });
      expect(out).toMatchObject({ cached: false, outcome: { ok: true } });
      expect(out.cache_error).toBeUndefined();
      expect((out.outcome as { result: { text: string } }).result.text).toHaveLength(5000);
      expect(await cache.getExtraction("t", out.key!)).toBeNull();
    }

    const db2 = new DatabaseSync(file());
    const store = new SqliteStore(db2, quiet);
    const small = { data: enc.encode("small file"), media_type: "text/plain" };
    const first = await extractCached({ attachment: small, tenant: "t", cache: store });
    await corrupter(db2)("t", first.key!);
    const again = await extractCached({ attachment: small, tenant: "t", cache: store });
    expect(again).toMatchObject({ cached: false, outcome: first.outcome });
    expect(again.cache_error).toBeUndefined();
    // The miss wrote the entry again.
    expect((await extractCached({ attachment: small, tenant: "t", cache: store })).cached).toBe(
      true,
    );
    await store.close();
  });
});

describe("a cache in the process in front of the store's (serve)", () => {
  it("answers from memory first, fills it from the store, and writes both", async () => {
    const front = new MemoryExtractionCache();
    const back = new MemoryExtractionCache();
    const tiered = new TieredExtractionCache(front, back);
    await back.putExtraction("t", "k", ok("from the store"));
    expect(await tiered.getExtraction("t", "k")).toEqual(ok("from the store"));
    expect(front.size).toBe(1);
    await tiered.putExtraction("t", "p", ok("both"));
    expect(await front.getExtraction("t", "p")).toEqual(ok("both"));
    expect(await back.getExtraction("t", "p")).toEqual(ok("both"));
    // The store's write failing: the caller hears of it, the process still keeps the entry.
    const failing: ExtractionCache = {
      getExtraction: async () => null,
      putExtraction: async () => Promise.reject(new Error("database down")),
    };
    const degraded = new TieredExtractionCache(new MemoryExtractionCache(), failing);
    await expect(degraded.putExtraction("t", "k", ok("x"))).rejects.toThrow("database down");
    expect(await degraded.getExtraction("t", "k")).toEqual(ok("x"));
  });

  it("openStore: serve's SQLite store keeps extractions in its file, read again after a restart", async () => {
    const url = `sqlite:${file()}`;
    const attachment = { data: enc.encode("kept across restarts"), media_type: "text/plain" };
    const before = await openStore(url, { log: () => {} });
    expect((await extractCached({ attachment, tenant: "t", cache: before.store })).cached).toBe(
      false,
    );
    await before.close();
    const after = await openStore(url, { log: () => {} });
    expect((await extractCached({ attachment, tenant: "t", cache: after.store })).cached).toBe(
      true,
    );
    await after.close();
  });
});
