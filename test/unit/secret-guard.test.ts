/**
 * The library's compact warns once per process when a shared store (anything but the in-process MemoryStore)
 * runs on the development secret, and never otherwise; the turn itself is unchanged either way.
 */
import { describe, expect, it, vi } from "vitest";
import { DEV_SECRET } from "../../src/core/memid.ts";
import { compact, MemoryStore } from "../../src/lib.ts";
import { devSecretProblem, guardedCompact } from "../../src/secret-guard.ts";
import type { OffloadStore } from "../../src/store-kit.ts";
import { conversation } from "../support/requests.ts";

const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };
const request = JSON.stringify(
  conversation(
    [
      { id: "t1", result: "x".repeat(70_000) },
      { id: "t2", result: "ok" },
    ],
    { model: "claude-opus-4-5" },
  ),
);

/** A store shared beyond the process, as far as compact can tell (it is not a MemoryStore). */
class SharedStore implements OffloadStore {
  readonly inner = new MemoryStore();
  beginTurn: OffloadStore["beginTurn"] = (...a) => this.inner.beginTurn(...a);
  getBody: OffloadStore["getBody"] = (...a) => this.inner.getBody(...a);
  noteRecall: OffloadStore["noteRecall"] = (...a) => this.inner.noteRecall(...a);
  describeSession: OffloadStore["describeSession"] = (...a) => this.inner.describeSession(...a);
  deleteSession: OffloadStore["deleteSession"] = (...a) => this.inner.deleteSession(...a);
}

describe("the development secret on a shared store", () => {
  it("is warned about once, naming the store and what to pass", async () => {
    const warnings: string[] = [];
    const guarded = guardedCompact((m) => warnings.push(m));
    const store = new SharedStore();
    const out = await guarded({ request, session: "s", store, config: ON });
    await guarded({ request, session: "s2", store, config: ON });
    await guarded({
      request,
      session: "s3",
      store: new SharedStore(),
      config: ON,
      secret: "short",
    });
    expect(out.decisions[0]!.action).toBe("offloaded");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("compact() with a shared store (SharedStore)");
    expect(warnings[0]).toContain("no secret was given");
    expect(warnings[0]).toContain("Pass `secret`");
  });

  it("flags no secret, the development secret itself and a short one; not a proper one", () => {
    const store = new SharedStore();
    const flag = (secret?: string) => devSecretProblem({ store, config: ON, secret });
    expect(flag()).toContain("no secret was given");
    expect(flag("")).toContain("no secret was given");
    expect(flag(DEV_SECRET)).toContain("is the built-in development secret");
    expect(flag("0123456789abcde")).toContain("shorter than 16 characters");
    expect(flag("0123456789abcdef")).toBeNull();
  });

  it("is not warned about for a MemoryStore, or with compaction off", async () => {
    const warnings: string[] = [];
    const guarded = guardedCompact((m) => warnings.push(m));
    await guarded({ request, session: "s", store: new MemoryStore(), config: ON });
    await guarded({ request, session: "s", store: new SharedStore() });
    await guarded({ request, session: "s", store: new SharedStore(), config: {} });
    expect(warnings).toEqual([]);
  });

  it("is what the package exports as compact: one console warning per process", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      await compact({ request, session: "s", store: new SharedStore(), config: ON });
      await compact({ request, session: "s", store: new SharedStore(), config: ON });
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]![0])).toContain("shared store (SharedStore)");
    } finally {
      warn.mockRestore();
    }
  });

  it("gives the same answers as the core", async () => {
    const a = await compact({ request, session: "s", store: new MemoryStore(), config: ON });
    const b = await guardedCompact(() => {})({
      request,
      session: "s",
      store: new MemoryStore(),
      config: ON,
    });
    expect(a.request).toBe(b.request);
  });
});
