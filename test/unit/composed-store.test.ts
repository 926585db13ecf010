import { describe, expect, it } from "vitest";
import { MemoryCalibration } from "../../src/session/memory-calibration.ts";
import { MemorySessionState } from "../../src/session/memory-state.ts";
import { MemoryTenantStats } from "../../src/session/memory-tenant-stats.ts";
import { ComposedStore } from "../../src/store/composed.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { MemoryExtractionCache } from "../../src/store/memory-extractions.ts";
import { MemoryIndex } from "../../src/store/memory-index.ts";
import { MemoryLedger } from "../../src/store/memory-ledger.ts";
import type { BodyLedgerPort, IndexPort } from "../../src/store/ports.ts";
import { runCalibrationContract } from "../contract/calibration.contract.ts";
import { runExtractionCacheContract } from "../contract/extraction-cache.contract.ts";
import { runIndexContract } from "../contract/index.contract.ts";
import { runLedgerContract } from "../contract/ledger.contract.ts";
import { runSessionStateContract } from "../contract/session-state.contract.ts";
import { runStoreContract } from "../contract/store.contract.ts";
import { runTenantStatsContract } from "../contract/tenant-stats.contract.ts";
import { turnLog } from "../support/records.ts";

const quiet = () => {};

runSessionStateContract("MemorySessionState", () => new MemorySessionState());
runTenantStatsContract("MemoryTenantStats", () => new MemoryTenantStats());
runCalibrationContract("MemoryCalibration", () => new MemoryCalibration());
runLedgerContract("MemoryLedger", () => new MemoryLedger());
runIndexContract("MemoryIndex", () => new MemoryIndex());
runExtractionCacheContract("MemoryExtractionCache", () => new MemoryExtractionCache());
runExtractionCacheContract("MemoryStore", () => new MemoryStore());
runExtractionCacheContract(
  "ComposedStore over the in-memory twins",
  () =>
    new ComposedStore({
      sessions: new MemorySessionState(),
      ledger: new MemoryLedger(),
      index: new MemoryIndex(),
      extractions: new MemoryExtractionCache(),
      log: quiet,
    }),
);
runStoreContract(
  "ComposedStore over the in-memory twins",
  () =>
    new ComposedStore({
      sessions: new MemorySessionState(),
      ledger: new MemoryLedger(),
      index: new MemoryIndex(),
      tenants: new MemoryTenantStats(),
      log: quiet,
    }),
);
// KV may not show a write for about a minute: nothing in the store may depend on reading one back.
runStoreContract(
  "ComposedStore with an index that never shows a write",
  () =>
    new ComposedStore({
      sessions: new MemorySessionState(),
      ledger: new MemoryLedger(),
      index: new MemoryIndex({ lagging: true }),
      tenants: new MemoryTenantStats(),
      log: quiet,
    }),
);

const ref = { tenant: "acme", session: "s1" };
const MEM = `trm_${"a".repeat(24)}`;
const meta = {
  mem_id: MEM,
  tool_use_id: "t1",
  tool_name: "dump",
  chars: 4,
  tokens: 1,
  kind: "text" as const,
  outline: "text: 1 line",
  turn: 1,
};

function failingIndex(): IndexPort {
  const fail = async () => {
    throw new Error("KV is down");
  };
  return {
    putBody: fail,
    getBody: fail,
    putSession: fail,
    listSessions: fail,
    deleteBodies: fail,
    deleteSession: fail,
  };
}

describe("ComposedStore", () => {
  it("stores a body even when the index write fails, and notes it for the summary", async () => {
    const ledger = new MemoryLedger();
    const store = new ComposedStore({
      sessions: new MemorySessionState(),
      ledger,
      index: failingIndex(),
      log: quiet,
    });
    await store.putBody(ref, "body", meta);
    expect((await store.getBody(ref, MEM))?.body).toBe("body");
    expect(store.notes).toEqual([
      {
        code: "index_error",
        mem_id: MEM,
        message: expect.stringContaining("mem_id index write failed"),
      },
    ]);
  });

  it("answers statBody from the index, and from the ledger on a miss or an index failure", async () => {
    const ledger = new MemoryLedger();
    const index = new MemoryIndex();
    const store = new ComposedStore({
      sessions: new MemorySessionState(),
      ledger,
      index,
      log: quiet,
    });
    await store.putBody(ref, "body", meta);
    expect((await store.statBody(ref, MEM))?.source).toBe("index");
    const lagging = new ComposedStore({
      sessions: new MemorySessionState(),
      ledger,
      index: new MemoryIndex({ lagging: true }),
      log: quiet,
    });
    expect(await lagging.statBody(ref, MEM)).toEqual({ meta, source: "ledger" });
    const broken = new ComposedStore({
      sessions: new MemorySessionState(),
      ledger,
      index: failingIndex(),
      log: quiet,
    });
    expect(await broken.statBody(ref, MEM)).toEqual({ meta, source: "ledger" });
    expect(await store.statBody(ref, "trm_nothex")).toBeNull();
  });

  it("turns a backend failure into one storage_error naming what failed", async () => {
    const ledger: BodyLedgerPort = {
      put: async () => {
        throw new TypeError("socket hang up at 10.0.0.1");
      },
      get: async () => null,
      head: async () => null,
      list: async () => [],
      delete: async () => {},
    };
    const lines: string[] = [];
    const store = new ComposedStore({
      sessions: new MemorySessionState(),
      ledger,
      index: new MemoryIndex(),
      log: (l) => lines.push(l),
    });
    const err = await store.putBody(ref, "body", meta).catch((e: unknown) => e);
    expect(err).toMatchObject({
      type: "storage_error",
      status: 503,
      message: "the ledger write failed",
    });
    expect(lines.join("\n")).toContain("socket hang up");
  });

  it("purges in batches (index entries, then bodies): a delete that fails half way has made progress, and a repeat finishes", async () => {
    const sessions = new MemorySessionState();
    const ledger = new MemoryLedger();
    const index = new MemoryIndex();
    const store = new ComposedStore({ sessions, ledger, index, log: quiet });
    const ids = Array.from({ length: 250 }, (_, i) => `trm_${i.toString(16).padStart(24, "0")}`);
    for (const id of ids) await store.putBody(ref, "body", { ...meta, mem_id: id });
    await store.commit(ref, {
      records: [],
      recall_declared: true,
      log: turnLog(1),
    });
    let calls = 0;
    const flaky: IndexPort = {
      putBody: (r, e) => index.putBody(r, e),
      getBody: (r, m) => index.getBody(r, m),
      putSession: (r, e) => index.putSession(r, e),
      listSessions: (t, o) => index.listSessions(t, o),
      deleteBodies: async (r, batch) => {
        if (++calls === 2) throw new Error("KV: too many operations");
        return index.deleteBodies(r, batch);
      },
      deleteSession: (r) => index.deleteSession(r),
    };
    const first = new ComposedStore({ sessions, ledger, index: flaky, log: quiet });
    await expect(first.deleteSession(ref)).rejects.toMatchObject({ type: "storage_error" });
    expect(await sessions.describe(ref)).toBeNull(); // the authority went first
    expect(ledger.size).toBe(150); // one batch of 100 is gone, with its index entries
    expect(index.keys().filter((k) => k.startsWith("m/"))).toHaveLength(150); // the rest are still named by their bodies
    await first.deleteSession(ref);
    expect(ledger.size).toBe(0);
    expect(index.keys()).toEqual([]);
  });
});

describe("ComposedStore's extraction cache", () => {
  it("without a cache part: every lookup misses and a write is a no-op", async () => {
    const store = new ComposedStore({
      sessions: new MemorySessionState(),
      ledger: new MemoryLedger(),
      index: new MemoryIndex(),
      log: quiet,
    });
    await store.putExtraction("t", "k", {
      ok: true,
      result: { text: "x", format: "text", truncated: false },
    });
    expect(await store.getExtraction("t", "k")).toBeNull();
  });

  it("a failing cache is a storage_error, logged without internals", async () => {
    const lines: string[] = [];
    const broken = {
      getExtraction: async () => Promise.reject(new Error("R2 down")),
      putExtraction: async () => Promise.reject(new Error("R2 down")),
    };
    const store = new ComposedStore({
      sessions: new MemorySessionState(),
      ledger: new MemoryLedger(),
      index: new MemoryIndex(),
      extractions: broken,
      log: (l) => lines.push(l),
    });
    await expect(store.getExtraction("t", "k")).rejects.toMatchObject({
      type: "storage_error",
      message: "reading the extraction cache failed",
    });
    await expect(
      store.putExtraction("t", "k", {
        ok: true,
        result: { text: "x", format: "text", truncated: false },
      }),
    ).rejects.toMatchObject({ type: "storage_error" });
    expect(lines).toHaveLength(2);
  });
});

describe("MemoryStore", () => {
  it("is the composed store over the in-memory twins: one class and one set of rules for both", () => {
    expect(new MemoryStore()).toBeInstanceOf(ComposedStore);
  });

  it("forCall(): another instance over the same state, with notes and a turn line of its own", async () => {
    const store = new MemoryStore();
    const a = store.forCall();
    const b = store.forCall();
    const log = turnLog(1);
    await a.commit(ref, { records: [], recall_declared: true, log });
    expect(a.lastTurnSeq).toBe(1);
    expect(b.lastTurnSeq).toBeNull();
    expect((await b.load(ref, [])).recall_declared).toBe(true);
    expect((await store.describeSession(ref))?.calls).toBe(1);
  });
});
