/**
 * The SQL classes (session state, ledger, index, the tenant's learning) on node:sqlite, through both hosts: a
 * synchronous SQLite connection (`syncSqliteSql`, what a Node or Bun store runs) and a Durable Object's
 * storage surface (`durableSql`, what the SessionDO, the TenantDO and `AgentStore` run; here over node:sqlite,
 * in workerd over the real objects). Every contract suite, and the store composed of them.
 */
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { runIndexContract } from "../../src/contract/index.contract.ts";
import { runLedgerContract } from "../../src/contract/ledger.contract.ts";
import { runSessionStateContract } from "../../src/contract/session-state.contract.ts";
import { runStoreContract } from "../../src/contract/store.contract.ts";
import { runTenantLearningContract } from "../../src/contract/tenant-learning.contract.ts";
import { AgentStore } from "../../src/store/agent.ts";
import { ComposedStore } from "../../src/store/composed.ts";
import { durableSql, syncSqliteSql } from "../../src/store/sql.ts";
import { SqlIndex } from "../../src/store/sql-index.ts";
import { CHUNK_CHARS, SqlLedger } from "../../src/store/sql-ledger.ts";
import { SqlSessionState } from "../../src/store/sql-session.ts";
import { SqlTenantLearning } from "../../src/store/sql-tenant.ts";
import { memoryBucket } from "../support/bucket.ts";
import { nodeSqliteStorage } from "../support/node-sqlite-storage.ts";
import {
  bodyMeta,
  clocked,
  clockHooks,
  commitTurn,
  putBody,
  record,
  turnLog,
} from "../support/records.ts";

/** A fresh node:sqlite database as the port. */
const sqlite = () => syncSqliteSql(new DatabaseSync(":memory:"));

runSessionStateContract(
  "SqlSessionState (node:sqlite)",
  () => clocked((now) => new SqlSessionState(sqlite(), { now })),
  clockHooks,
);
runSessionStateContract(
  "SqlSessionState (a Durable Object's storage over node:sqlite)",
  () => clocked((now) => new SqlSessionState(durableSql(nodeSqliteStorage()), { now })),
  clockHooks,
);
runTenantLearningContract("SqlTenantLearning (node:sqlite)", () => new SqlTenantLearning(sqlite()));
runLedgerContract("SqlLedger (node:sqlite)", () => new SqlLedger(sqlite()));
runLedgerContract(
  "SqlLedger (node:sqlite + bucket)",
  () => new SqlLedger(sqlite(), { bucket: memoryBucket(), inlineMaxChars: 100 }),
);
runIndexContract("SqlIndex (node:sqlite)", () => new SqlIndex(sqlite()));
runStoreContract("ComposedStore over SQL (node:sqlite)", () => {
  const sql = sqlite();
  return new ComposedStore({
    sessions: new SqlSessionState(sql),
    ledger: new SqlLedger(sql),
    index: new SqlIndex(sql),
    tenants: new SqlTenantLearning(sql),
    log: () => {},
  });
});
runStoreContract(
  "AgentStore (node:sqlite)",
  () => new AgentStore(nodeSqliteStorage(), { log: () => {} }),
);

describe("SQL session state", () => {
  const ref = { tenant: "t", session: "s" };

  it("creates no table for a read of a session nobody wrote, and its tables on the first write", async () => {
    const db = new DatabaseSync(":memory:");
    const state = new SqlSessionState(syncSqliteSql(db));
    const tables = () =>
      (
        db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as {
          name: string;
        }[]
      )
        .map((r) => r.name)
        .sort();
    await state.begin(ref, { ids: ["a"], names: ["bash"], anchors: ["x"] });
    await state.describe(ref);
    await state.getConfig(ref);
    await state.recordUsage(ref, { seq: 1 }, {} as never);
    expect(tables()).toEqual([]);
    await state.setConfig(ref, {});
    expect(tables()).toEqual(
      [
        "eo_memo_anchors",
        "eo_memos",
        "eo_orphans",
        "eo_recalls",
        "eo_records",
        "eo_sessions",
        "eo_tools",
        "eo_turns",
      ].sort(),
    );
  });

  it("rolls a failed transaction back whole: a commit that fails half way leaves nothing", async () => {
    const db = new DatabaseSync(":memory:");
    const port = syncSqliteSql(db);
    const state = new SqlSessionState(port);
    await commitTurn(
      new ComposedStore({
        sessions: state,
        ledger: new SqlLedger(port),
        index: new SqlIndex(port),
        log: () => {},
      }),
      ref,
      { records: [], recall_declared: false, log: turnLog(1) },
    );
    // The turn log refuses the next line: the records inserted before it in the same commit go too.
    db.exec(
      "CREATE TRIGGER no_lines BEFORE INSERT ON eo_turns BEGIN SELECT RAISE(ABORT, 'full'); END",
    );
    const lease = (await state.begin(ref, { ids: [], names: [] })).lease;
    await expect(
      state.commit(ref, {
        records: [record("x")],
        recall_declared: true,
        log: turnLog(2),
        lease,
      }),
    ).rejects.toThrow(/full/);
    db.exec("DROP TRIGGER no_lines");
    expect((await state.records(ref, ["x"])).records).toEqual([]);
    const d = (await state.describe(ref))!;
    expect(d.calls).toBe(1);
    expect(d.recall_declared).toBe(false);
  });

  it("lists sessions whose retention ran out", async () => {
    let now = 1_000_000;
    const state = new SqlSessionState(sqlite(), { now: () => now, retentionSeconds: 60 });
    const other = { tenant: "t", session: "fresh" };
    await state.setConfig(ref, {});
    now += 30_000;
    await state.setConfig(other, {});
    expect(await state.expired()).toEqual([]);
    now += 31_000;
    expect(await state.expired()).toEqual([ref]);
    now += 60_000;
    expect(await state.expired()).toEqual(
      [other, ref].sort((a, b) => (a.session < b.session ? -1 : 1)),
    );
  });
});

describe("SqlLedger's size rule", () => {
  const ref = { tenant: "t", session: "s" };
  const memId = `trm_${"a".repeat(24)}`;

  it("keeps every SQLite row under 1 MB, even for a body of escapes, and reads it back exactly", async () => {
    const storage = nodeSqliteStorage();
    const ledger = new SqlLedger(durableSql(storage));
    const body = `${"\u0001".repeat(CHUNK_CHARS + 10)}😀${"x".repeat(3 * CHUNK_CHARS)}`;
    await ledger.put(ref, body, bodyMeta(memId));
    const rows = storage.sql
      .exec<{ bytes: number }>("SELECT length(CAST(text AS BLOB)) AS bytes FROM eo_body_chunks")
      .toArray();
    expect(rows.length).toBeGreaterThan(4);
    expect(Math.max(...rows.map((r) => r.bytes))).toBeLessThan(1_000_000);
    expect((await ledger.get(ref, memId))?.body === body).toBe(true);
  });

  it("with a bucket, puts large bodies there and keeps only their metadata in SQLite", async () => {
    const storage = nodeSqliteStorage();
    const b = memoryBucket();
    const ledger = new SqlLedger(durableSql(storage), { bucket: b });
    await ledger.put(ref, "y".repeat(CHUNK_CHARS + 1), bodyMeta(memId));
    expect(b.objects.size).toBe(1);
    expect(storage.sql.exec("SELECT * FROM eo_body_chunks").toArray()).toEqual([]);
    expect((await ledger.get(ref, memId))?.body).toHaveLength(CHUNK_CHARS + 1);
    await ledger.delete(ref, [memId]);
    expect(b.objects.size).toBe(0);
    expect(await ledger.get(ref, memId)).toBeNull();
  });

  it("never touches tables that are not its own", async () => {
    const storage = nodeSqliteStorage();
    storage.sql.exec("CREATE TABLE cf_agents_state (id TEXT PRIMARY KEY, state TEXT)");
    storage.sql.exec("INSERT INTO cf_agents_state VALUES ('s', '{}')");
    const store = new AgentStore(storage, { log: () => {} });
    await putBody(store, ref, "z".repeat(10), bodyMeta(memId));
    await store.deleteSession(ref);
    expect(storage.sql.exec("SELECT * FROM cf_agents_state").toArray()).toHaveLength(1);
  });
});
