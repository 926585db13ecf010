// The agent store's adapters (the SQLite of an agent's own Durable Object) against the shared contracts, over
// Node's SQLite; test/agents/ runs the same suites inside a real SQLite-backed Durable Object in workerd.
import { describe, expect, it } from "vitest";
import { AgentStore } from "../../src/store/agent.ts";
import { AgentIndex, AgentTenantStats } from "../../src/store/agent-index.ts";
import { AgentLedger, CHUNK_CHARS } from "../../src/store/agent-ledger.ts";
import { AgentSessionState } from "../../src/store/agent-state.ts";
import { runIndexContract } from "../contract/index.contract.ts";
import { runLedgerContract } from "../contract/ledger.contract.ts";
import { runSessionStateContract } from "../contract/session-state.contract.ts";
import { runStoreContract } from "../contract/store.contract.ts";
import { runTenantStatsContract } from "../contract/tenant-stats.contract.ts";
import { nodeSqliteStorage } from "../support/node-sqlite-storage.ts";
import { bodyMeta } from "../support/records.ts";

/** An in-memory R2 bucket, with what it was asked. */
function bucket() {
  const objects = new Map<string, string>();
  return {
    objects,
    put: async (key: string, value: string) => void objects.set(key, value),
    get: async (key: string) => {
      const v = objects.get(key);
      return v === undefined ? null : { text: async () => v };
    },
    delete: async (keys: string[]) => {
      for (const k of keys) objects.delete(k);
    },
  };
}

runSessionStateContract(
  "AgentSessionState (node:sqlite)",
  () => new AgentSessionState(nodeSqliteStorage()),
);
runLedgerContract("AgentLedger (node:sqlite)", () => new AgentLedger(nodeSqliteStorage()));
runLedgerContract(
  "AgentLedger (node:sqlite + bucket)",
  () => new AgentLedger(nodeSqliteStorage(), { bucket: bucket(), inlineMaxChars: 100 }),
);
runIndexContract("AgentIndex (node:sqlite)", () => new AgentIndex(nodeSqliteStorage()));
runTenantStatsContract(
  "AgentTenantStats (node:sqlite)",
  () => new AgentTenantStats(nodeSqliteStorage()),
);
runStoreContract(
  "AgentStore (node:sqlite)",
  () => new AgentStore(nodeSqliteStorage(), { log: () => {} }),
);

describe("AgentLedger's size rule", () => {
  const ref = { tenant: "t", session: "s" };
  const memId = `trm_${"a".repeat(24)}`;

  it("keeps every SQLite row under 1 MB, even for a body of escapes, and reads it back exactly", async () => {
    const storage = nodeSqliteStorage();
    const ledger = new AgentLedger(storage);
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
    const b = bucket();
    const ledger = new AgentLedger(storage, { bucket: b });
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
    await store.putBody(ref, "z".repeat(10), bodyMeta(memId));
    await store.deleteSession(ref);
    expect(storage.sql.exec("SELECT * FROM cf_agents_state").toArray()).toHaveLength(1);
  });
});
