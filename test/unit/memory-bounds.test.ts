/**
 * The bounded MemoryStore: at most `maxSessions` sessions and `maxBodyBytes` of bodies, least recently
 * used dropped first, idle sessions dropped after `idleSeconds`; a recall of a dropped session's body is an
 * answer that says so and why (never a crash, never "unknown mem_id" alone); the store passes its contract
 * with tight bounds too.
 */
import { describe, expect, it } from "vitest";
import { runStoreContract } from "../../src/contract/store.contract.ts";
import { recall } from "../../src/core/recall.ts";
import type { SessionRef } from "../../src/core/types.ts";
import { MEMORY_DEFAULTS, MemoryStore } from "../../src/store/memory.ts";
import { bodyMeta, commitTurn, freshRef, putBody, record, turnLog } from "../support/records.ts";

const MEM = (c: string) => `trm_${c.repeat(24)}`;

/** A session with one offloaded body of `chars` characters. */
async function offload(store: MemoryStore, ref: SessionRef, c: string, chars = 1000) {
  await putBody(store, ref, c.repeat(chars), bodyMeta(MEM(c), { chars }));
  await commitTurn(store, ref, {
    records: [record(`tu_${c}`, { mem_id: MEM(c) })],
    recall_declared: true,
    log: turnLog(1),
  });
}

const read = (store: MemoryStore, ref: SessionRef, c: string) =>
  recall({ store, session: ref, mem_id: MEM(c), offset: 0, max_chars: 10 });

runStoreContract(
  "MemoryStore (tight bounds)",
  () => new MemoryStore({ maxSessions: 50, maxBodyBytes: 64 * 1024 * 1024 }),
);

describe("the bounded MemoryStore", () => {
  it("documents its defaults", () => {
    expect(MEMORY_DEFAULTS).toEqual({
      maxSessions: 1000,
      maxBodyBytes: 256 * 1024 * 1024,
      idleSeconds: 86_400,
    });
  });

  it("keeps at most maxSessions, dropping the least recently used; a recall of its body says why", async () => {
    const store = new MemoryStore({ maxSessions: 2 });
    const [a, b, c] = [freshRef("lru"), freshRef("lru"), freshRef("lru")];
    await offload(store, a, "a");
    await offload(store, b, "b");
    expect((await read(store, a, "a")).is_error).toBe(false); // a is now the most recently used
    await offload(store, c, "c");
    expect(store.usage.sessions).toBe(2);
    expect(await store.describeSession(b)).toBeNull();
    expect(await store.describeSession(a)).not.toBeNull();
    const gone = await read(store, b, "b");
    expect(gone.is_error).toBe(true);
    expect(gone.content).toContain("no longer stored");
    expect(gone.content).toContain("keeps 2 conversations");
    // An id the store never had reads as unknown, as before.
    expect((await read(store, a, "z")).content).toContain("No offloaded result has mem_id");
  });

  it("keeps at most maxBodyBytes of bodies, the session being written last", async () => {
    const store = new MemoryStore({ maxBodyBytes: 10_000 });
    const [a, b] = [freshRef("bytes"), freshRef("bytes")];
    await offload(store, a, "a", 3000); // 6,000 bytes
    await offload(store, b, "b", 3000); // 12,000 in all: a goes
    expect(store.usage.bodyBytes).toBe(6000);
    expect((await read(store, a, "a")).content).toContain("keeps 10000 bytes");
    expect((await read(store, b, "b")).is_error).toBe(false);
    // One session alone beyond the bound: dropped too (its commit is refused, its results stay full).
    const big = freshRef("bytes");
    await putBody(store, big, "x".repeat(6000), bodyMeta(MEM("x")));
    expect(store.usage.bodyBytes).toBeLessThanOrEqual(10_000);
    await store.deleteSession(b);
    expect(store.usage).toEqual({ sessions: 0, bodyBytes: 0 });
  });

  it("drops a session unused for idleSeconds", async () => {
    let now = 1_000_000;
    const store = new MemoryStore({ idleSeconds: 60, now: () => now });
    const [a, b] = [freshRef("idle"), freshRef("idle")];
    await offload(store, a, "a");
    now += 61_000;
    await offload(store, b, "b");
    expect(store.usage.sessions).toBe(1);
    expect((await read(store, a, "a")).content).toContain("after 60 s unused");
  });

  it("counts a body written twice once", async () => {
    const store = new MemoryStore();
    const a = freshRef("twice");
    await putBody(store, a, "y".repeat(500), bodyMeta(MEM("y")));
    await putBody(store, a, "y".repeat(500), bodyMeta(MEM("y")));
    expect(store.usage.bodyBytes).toBe(1000);
  });
});
