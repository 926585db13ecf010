import { describe, expect, it } from "vitest";
import { runExtractionCacheContract } from "../../src/contract/extraction-cache.contract.ts";
import { runIndexContract } from "../../src/contract/index.contract.ts";
import { runLedgerContract } from "../../src/contract/ledger.contract.ts";
import { runSessionStateContract } from "../../src/contract/session-state.contract.ts";
import { runStoreContract } from "../../src/contract/store.contract.ts";
import { runTenantLearningContract } from "../../src/contract/tenant-learning.contract.ts";
import { ComposedStore } from "../../src/store/composed.ts";
import { MemoryStore, MemoryTenantLearning } from "../../src/store/memory.ts";
import { MemoryExtractionCache } from "../../src/store/memory-extractions.ts";
import { MemoryIndex } from "../../src/store/memory-index.ts";
import { MemoryLedger } from "../../src/store/memory-ledger.ts";
import { MemorySessionState } from "../../src/store/memory-state.ts";
import type { BodyLedgerPort, IndexPort, TenantLearning } from "../../src/store/ports.ts";
import { TenantCache } from "../../src/store/tenant-cache.ts";
import { clocked, clockHooks, commitTurn, putBody, startOf, turnLog } from "../support/records.ts";

const quiet = () => {};

runSessionStateContract(
  "MemorySessionState",
  () => clocked((now) => new MemorySessionState({ now })),
  clockHooks,
);
runTenantLearningContract("MemoryTenantLearning", () => new MemoryTenantLearning());
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
      tenants: new MemoryTenantLearning(),
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
      tenants: new MemoryTenantLearning(),
      log: quiet,
    }),
);
// The tenant's learning read through an isolate's cache (as the Worker reads the TenantDO): settled by
// reading it afresh, which is what the cache's time to live does in the background.
{
  const caches: TenantCache[] = [];
  runStoreContract(
    "ComposedStore with the tenant's learning behind a cache",
    () => {
      const cache = new TenantCache(new MemoryTenantLearning());
      caches.push(cache);
      return new ComposedStore({
        sessions: new MemorySessionState(),
        ledger: new MemoryLedger(),
        index: new MemoryIndex(),
        tenants: cache,
        log: quiet,
      });
    },
    {
      settle: async (refs) => {
        for (const r of refs) await caches.at(-1)!.read(r.tenant);
      },
    },
  );
}

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
    const turn = await startOf(store, ref);
    await turn.putBody("body", meta);
    expect((await store.getBody(ref, MEM))?.body).toBe("body");
    expect(turn.notes).toEqual([
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
    await putBody(store, ref, "body", meta);
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
    const err = await putBody(store, ref, "body", meta).catch((e: unknown) => e);
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
    for (const id of ids) await putBody(store, ref, "body", { ...meta, mem_id: id });
    await commitTurn(store, ref, { records: [], recall_declared: true, log: turnLog(1) });
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

  it("serves calls at once: each turn has its own notes and its own line", async () => {
    const store = new MemoryStore();
    const [a, b] = [await startOf(store, ref), await startOf(store, ref)];
    await a.commit({ records: [], recall_declared: true, log: turnLog(1) });
    await a.finish();
    expect(a.seq).toBe(1);
    expect(b.seq).toBeNull();
    expect((await startOf(store, ref)).recall_declared).toBe(true);
    expect((await store.describeSession(ref))?.calls).toBe(1);
  });
});

describe("a turn's work after the answer", () => {
  it("a steady turn's line waits for its finish, which hands it to the runtime's defer; memos do not wait", async () => {
    const deferred: (() => Promise<unknown>)[] = [];
    const store = new ComposedStore({
      sessions: new MemorySessionState(),
      ledger: new MemoryLedger(),
      index: new MemoryIndex(),
      defer: (work) => void deferred.push(work),
      log: quiet,
    });
    const steady = await startOf(store, ref);
    await steady.commit({ records: [], recall_declared: false, log: turnLog(1) });
    await steady.finish({ usage: undefined });
    // Nothing written before the answer: the line is the deferred work.
    expect(await store.describeSession(ref)).toBeNull();
    expect(deferred).toHaveLength(1);
    // Running it writes the line, and defers the session's first index entry in turn.
    while (deferred.length > 0) await deferred.shift()!();
    expect((await store.describeSession(ref))?.calls).toBe(1);
    // A finish with memos is written before it returns: the client's next request needs them.
    const mixed = await startOf(store, ref);
    await mixed.commit({ records: [], recall_declared: false, log: turnLog(2) });
    const memo = {
      kind: "recall" as const,
      format: "anthropic" as const,
      anchors: ["a"],
      calls: [],
      params: { mode: "both" as const, max_chars: 100, window: 10 },
    };
    await mixed.finish({ memos: [memo] });
    expect(deferred).toHaveLength(0);
    expect((await startOf(store, ref)).memos).toEqual([]);
    expect((await store.beginTurn(ref, { ids: [], names: [], anchors: ["a"] })).memos).toEqual([
      memo,
    ]);
  });
});

describe("the tenant's learning behind a cache", () => {
  it("never makes a turn wait: the first turn reads nothing, a stale entry is read again in the background", async () => {
    let reads = 0;
    let release = () => {};
    const slow: TenantLearning = {
      read: async () => {
        reads++;
        await new Promise<void>((r) => {
          release = r;
        });
        return { tools: { bash: { offloaded: 3, recalls: 1 } }, calibrations: {} };
      },
      add: async () => {},
    };
    let now = 0;
    const cache = new TenantCache(slow, { ttlMs: 1000, now: () => now });
    const store = new ComposedStore({
      sessions: new MemorySessionState(),
      ledger: new MemoryLedger(),
      index: new MemoryIndex(),
      tenants: cache,
      log: quiet,
    });
    // The read hangs: the turn begins anyway, learning from the session alone.
    expect((await startOf(store, ref, [], ["bash"])).tool_stats).toEqual({});
    expect((await startOf(store, ref, [], ["bash"])).tool_stats).toEqual({});
    expect(reads).toBe(1); // one read at a time per tenant
    release();
    await new Promise((r) => setTimeout(r, 0));
    expect((await startOf(store, ref, [], ["bash"])).tool_stats).toEqual({
      bash: { offloaded: 3, recalls: 1 },
    });
    now = 2000; // stale: the cached value still serves, a read starts behind it
    expect((await startOf(store, ref, [], ["bash"])).tool_stats).toEqual({
      bash: { offloaded: 3, recalls: 1 },
    });
    expect(reads).toBe(2);
    release();
  });
});
