/**
 * PostgresStore against a real Postgres (servers.setup.ts): every contract suite over the SQL classes on
 * the Postgres port, the composed store, the schema's migration, and what only a shared engine shows
 * (transactions of one port running at once, a deadlock run again).
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runExtractionCacheContract } from "../../src/contract/extraction-cache.contract.ts";
import { runIndexContract } from "../../src/contract/index.contract.ts";
import { runLedgerContract } from "../../src/contract/ledger.contract.ts";
import { runSessionStateContract } from "../../src/contract/session-state.contract.ts";
import { runStoreContract } from "../../src/contract/store.contract.ts";
import { runTenantLearningContract } from "../../src/contract/tenant-learning.contract.ts";
import { EXTRACTION_VALUE_MAX_BYTES } from "../../src/store/extractions.ts";
import {
  migratePostgres,
  POSTGRES_SCHEMA_VERSION,
  PostgresStore,
  postgresSql,
} from "../../src/store/postgres.ts";
import { POSTGRES } from "../../src/store/sql.ts";
import { SqlExtractionCache } from "../../src/store/sql-extractions.ts";
import { SqlIndex } from "../../src/store/sql-index.ts";
import { SqlLedger } from "../../src/store/sql-ledger.ts";
import { SqlSessionState } from "../../src/store/sql-session.ts";
import { SqlTenantLearning } from "../../src/store/sql-tenant.ts";
import { memoryBucket } from "../support/bucket.ts";
import { clocked, clockHooks } from "../support/records.ts";
import { uniquePrefix } from "../support/servers.ts";
import { need, settle } from "./need.ts";

const server = need("postgres");
let pool: pg.Pool;

beforeAll(() => {
  if (server.url !== undefined) pool = new pg.Pool({ connectionString: server.url, max: 8 });
});
afterAll(async () => {
  await pool?.end();
});

/** A fresh schema (tables of their own prefix) on the shared server. */
async function port() {
  const sql = postgresSql(pool);
  const prefix = uniquePrefix("pg");
  await migratePostgres(sql, prefix);
  return { sql, prefix, dialect: POSTGRES };
}

describe.skipIf(server.url === undefined)("Postgres", () => {
  runSessionStateContract(
    "SqlSessionState (Postgres)",
    async () => {
      const p = await port();
      return clocked((now) => new SqlSessionState(p.sql, { ...p, now }));
    },
    clockHooks,
  );
  runTenantLearningContract("SqlTenantLearning (Postgres)", async () => {
    const p = await port();
    return new SqlTenantLearning(p.sql, p);
  });
  runLedgerContract("SqlLedger (Postgres)", async () => {
    const p = await port();
    return new SqlLedger(p.sql, p);
  });
  runLedgerContract("SqlLedger (Postgres + bucket)", async () => {
    const p = await port();
    return new SqlLedger(p.sql, { ...p, bucket: memoryBucket(), inlineMaxChars: 100 });
  });
  runIndexContract("SqlIndex (Postgres)", async () => {
    const p = await port();
    return new SqlIndex(p.sql, p);
  });
  let last: PostgresStore | undefined;
  runStoreContract(
    "PostgresStore",
    async () =>
      (last = await PostgresStore.connect(pool, {
        prefix: uniquePrefix("pg"),
        log: () => {},
        sweepEveryMs: 0,
      })),
    { settle: (refs) => settle(last!, refs) },
  );

  let xprefix = "";
  const xhooks = {
    capBytes: EXTRACTION_VALUE_MAX_BYTES,
    corrupt: async (tenant: string, key: string) => {
      await pool.query(
        `UPDATE ${xprefix}extractions SET value = $1 WHERE tenant = $2 AND key = $3`,
        ["not json", tenant, key],
      );
    },
  };
  runExtractionCacheContract(
    "SqlExtractionCache (Postgres)",
    async () => {
      const p = await port();
      xprefix = p.prefix;
      return new SqlExtractionCache(p.sql, p);
    },
    xhooks,
  );
  runExtractionCacheContract(
    "PostgresStore (its own cache)",
    () =>
      PostgresStore.connect(pool, {
        prefix: (xprefix = uniquePrefix("pg")),
        log: () => {},
        sweepEveryMs: 0,
      }),
    xhooks,
  );

  it("shares cached extractions between two stores, and its sweep deletes the expired ones", async () => {
    let now = 1_000_000_000;
    const prefix = uniquePrefix("pg");
    const options = {
      prefix,
      log: () => {},
      sweepEveryMs: 0,
      retentionSeconds: 60,
      now: () => now,
    };
    const [a, b] = [
      await PostgresStore.connect(pool, options),
      await PostgresStore.connect(pool, options),
    ];
    const value = {
      ok: true as const,
      result: { text: "shared", format: "pdf" as const, truncated: false },
    };
    await a.putExtraction("t", "k", value);
    expect(await b.getExtraction("t", "k")).toEqual(value);
    now += 61_000;
    expect(await b.getExtraction("t", "k")).toBeNull();
    expect(await b.sweep()).toMatchObject({ extractions: 1 });
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${prefix}extractions`);
    expect(rows[0].n).toBe(0);
  });

  describe("schema", () => {
    it("migrates a version-1 database: the extraction cache's table is added", async () => {
      const prefix = uniquePrefix("pg");
      await migratePostgres(postgresSql(pool), prefix);
      await pool.query(`DROP TABLE ${prefix}extractions`);
      await pool.query(`DELETE FROM ${prefix}schema WHERE version > 1`);
      expect(await migratePostgres(postgresSql(pool), prefix)).toBe(1);
      const { rows } = await pool.query(`SELECT max(version) AS v FROM ${prefix}schema`);
      expect(Number(rows[0].v)).toBe(POSTGRES_SCHEMA_VERSION);
      expect(POSTGRES_SCHEMA_VERSION).toBe(2);
      const store = await PostgresStore.connect(pool, { prefix, log: () => {}, sweepEveryMs: 0 });
      const value = {
        ok: true as const,
        result: { text: "x", format: "txt" as const, truncated: false },
      };
      await store.putExtraction("t", "k", value);
      expect(await store.getExtraction("t", "k")).toEqual(value);
    });

    it("is created once and migrated by whichever process comes first, others wait and find it done", async () => {
      const prefix = uniquePrefix("pg");
      const found = await Promise.all(
        Array.from({ length: 4 }, () => migratePostgres(postgresSql(pool), prefix)),
      );
      expect(found.sort()).toEqual(
        [0, 1, 1, 1].map((v) => (v === 0 ? 0 : POSTGRES_SCHEMA_VERSION)),
      );
      const { rows } = await pool.query(`SELECT version FROM ${prefix}schema`);
      // One row per version step, each written once.
      expect(rows.map((r) => Number(r.version)).sort()).toEqual(
        Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, i) => i + 1),
      );
    });

    it("refuses a schema newer than the build, and a prefix that is not a plain name", async () => {
      const prefix = uniquePrefix("pg");
      await migratePostgres(postgresSql(pool), prefix);
      await pool.query(`INSERT INTO ${prefix}schema (version) VALUES (99)`);
      await expect(PostgresStore.connect(pool, { prefix })).rejects.toThrow(/version 99, newer/);
      await expect(migratePostgres(postgresSql(pool), "x; DROP TABLE y")).rejects.toThrow(/prefix/);
    });
  });

  describe("the port", () => {
    it("rolls a failed transaction back whole and keeps the pool usable", async () => {
      const sql = postgresSql(pool);
      const table = `${uniquePrefix("pg")}t`;
      await sql.transaction((tx) => tx.all(`CREATE TABLE ${table} (k TEXT PRIMARY KEY)`));
      await expect(
        sql.transaction(async (tx) => {
          await tx.all(`INSERT INTO ${table} (k) VALUES (?)`, "a");
          await tx.all(`INSERT INTO ${table} (k) VALUES (?)`, "a");
        }),
      ).rejects.toThrow();
      expect(await sql.transaction((tx) => tx.all(`SELECT k FROM ${table}`))).toEqual([]);
      expect(await sql.hasTable(table)).toBe(true);
      expect(await sql.hasTable(`${table}_none`)).toBe(false);
    });

    it("runs a transaction again after a deadlock", async () => {
      const sql = postgresSql(pool);
      const table = `${uniquePrefix("pg")}t`;
      await sql.transaction(async (tx) => {
        await tx.all(`CREATE TABLE ${table} (k TEXT PRIMARY KEY, v BIGINT NOT NULL)`);
        await tx.all(`INSERT INTO ${table} (k, v) VALUES ('a', 0), ('b', 0)`);
      });
      // Two transactions lock a and b in opposite orders: Postgres aborts one, which runs again.
      const both = (first: string, second: string) =>
        sql.transaction(async (tx) => {
          await tx.all(`UPDATE ${table} SET v = v + 1 WHERE k = ?`, first);
          await new Promise((r) => setTimeout(r, 100));
          await tx.all(`UPDATE ${table} SET v = v + 1 WHERE k = ?`, second);
        });
      await Promise.all([both("a", "b"), both("b", "a")]);
      const rows = await sql.transaction((tx) =>
        tx.all<{ v: string }>(`SELECT v FROM ${table} ORDER BY k`),
      );
      expect(rows.map((r) => Number(r.v))).toEqual([2, 2]);
    });
  });
});
