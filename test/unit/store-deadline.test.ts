/**
 * Every store call bounded in time, in the library and the integrations: a store of one's own that never
 * answers, a ledger that hangs, an index and a tenant's learning that hang. Each case would hang (or wait
 * a backend's minute-long bound) without the deadline: that it finishes inside the test's timeout, with the
 * request sent full and the problem reported, is the check (no absolute time is asserted).
 */
import { generateText, wrapLanguageModel } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { describe, expect, it } from "vitest";
import type { OffloadStore } from "../../src/core/ports.ts";
import { offloadMiddleware } from "../../src/integrations/ai-sdk.ts";
import { offloadFetch } from "../../src/integrations/fetch.ts";
import type { OffloadProblem } from "../../src/integrations/options.ts";
import { compact } from "../../src/lib.ts";
import { ComposedStore } from "../../src/store/composed.ts";
import { DEFAULT_STORE_DEADLINE_MS, withDeadline } from "../../src/store/deadline.ts";
import { MemoryTenantLearning } from "../../src/store/memory.ts";
import { MemoryIndex } from "../../src/store/memory-index.ts";
import { MemoryLedger } from "../../src/store/memory-ledger.ts";
import { MemorySessionState } from "../../src/store/memory-state.ts";
import type { IndexPort, TenantLearning } from "../../src/store/ports.ts";
import { aiMessages } from "../support/ai-sdk.ts";
import { anthropicMessage, anthropicRequest, ON } from "../support/providers.ts";

const SECRET = "unit-store-deadline-secret-0123";
const never = <T>(): Promise<T> => new Promise<T>(() => {});

/** A store of one's own that never answers anything. */
const silent = {
  beginTurn: () => never(),
  getBody: () => never(),
  noteRecall: () => never(),
  describeSession: () => never(),
  deleteSession: () => never(),
} as unknown as OffloadStore;

/** Ports that never answer, each method. */
function hanging<T extends object>(names: (keyof T)[]): T {
  return Object.fromEntries(names.map((n) => [n, () => never()])) as T;
}

describe("store deadlines", () => {
  it("defaults to 5 s, and refuses a deadline that is not a positive number", () => {
    expect(DEFAULT_STORE_DEADLINE_MS).toBe(5000);
    expect(() =>
      offloadFetch({ store: silent, session: "s", secret: SECRET, storeTimeoutMs: 0 }),
    ).toThrow(/storeTimeoutMs must be a positive number/);
  });

  it("offloadFetch over a store that never answers: the request goes out as sent, with the problem", async () => {
    const sent: string[] = [];
    const problems: OffloadProblem[] = [];
    const fetch = offloadFetch({
      store: silent,
      session: "s",
      secret: SECRET,
      config: ON,
      storeTimeoutMs: 100,
      log: () => {},
      onProblem: (p) => problems.push(p),
      fetch: (async (_url: RequestInfo | URL, init?: RequestInit) => {
        sent.push(String(init?.body));
        return Response.json(anthropicMessage("m", [{ text: "ok" }], { input: 1, output: 1 }));
      }) as typeof globalThis.fetch,
    });
    const body = JSON.stringify(anthropicRequest());
    const res = await fetch("https://api.anthropic.com/v1/messages", { method: "POST", body });
    expect(res.status).toBe(200);
    expect(sent).toEqual([body]);
    expect(problems).toEqual([
      expect.objectContaining({
        code: "storage_error",
        message: expect.stringContaining("did not answer within 100 ms (beginning the turn)"),
      }),
    ]);
  });

  it("the AI SDK middleware over a store that never answers: the call goes on, with the problem", async () => {
    const problems: OffloadProblem[] = [];
    const inner = new MockLanguageModelV4({
      provider: "anthropic.messages",
      modelId: "claude-sonnet-4-6",
      doGenerate: async () => ({
        content: [{ type: "text", text: "fine" }],
        finishReason: { unified: "stop", raw: "stop" },
        usage: {
          inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
          outputTokens: { total: 1, text: 1, reasoning: 0 },
        },
        warnings: [],
      }),
    });
    const middleware = offloadMiddleware({
      store: silent,
      session: "s",
      secret: SECRET,
      config: ON,
      storeTimeoutMs: 100,
      log: () => {},
      onProblem: (p) => problems.push(p),
    });
    const out = await generateText({
      model: wrapLanguageModel({ model: inner, middleware }),
      messages: aiMessages(),
    });
    expect(out.text).toBe("fine");
    expect(problems.map((p) => p.code)).toContain("storage_error");
  });

  it("compact over a ledger that hangs: the result stays full, the turn says why", async () => {
    const store = new ComposedStore({
      sessions: new MemorySessionState(),
      ledger: hanging<MemoryLedger>(["put", "get", "head", "list", "delete"]),
      index: new MemoryIndex(),
      log: () => {},
    });
    const request = JSON.stringify(anthropicRequest());
    const out = await compact({
      request,
      session: "s",
      store,
      config: ON,
      secret: SECRET,
      storeTimeoutMs: 100,
    });
    expect(out.report.offloaded).toBe(0);
    expect(JSON.stringify(out.report.errors)).toContain("did not answer within 100 ms");
  });

  it("an index and a tenant's learning that hang are off the turn's path: the turn never waits for them", async () => {
    const store = new ComposedStore({
      sessions: new MemorySessionState(),
      ledger: new MemoryLedger(),
      index: hanging<IndexPort>([
        "putBody",
        "getBody",
        "putSession",
        "listSessions",
        "deleteBodies",
        "deleteSession",
      ]),
      tenants: { read: () => never(), add: () => never() } as TenantLearning,
      // Their own bounds far beyond the test's timeout: only not waiting lets it pass.
      timeouts: { index: 600_000, tenants: 600_000 },
      log: () => {},
    });
    const out = await compact({
      request: JSON.stringify(anthropicRequest()),
      session: "s",
      store: withDeadline(store, Number.POSITIVE_INFINITY),
      config: ON,
      secret: SECRET,
      storeTimeoutMs: Number.POSITIVE_INFINITY,
    });
    expect(out.report.offloaded).toBe(1);
    expect(out.report.errors).toEqual([]);
  }, 10_000);

  it("keeps the store as it is for everything else (instanceof, reports, getters of its turn)", async () => {
    const inner = new ComposedStore({
      sessions: new MemorySessionState(),
      ledger: new MemoryLedger(),
      index: new MemoryIndex(),
      tenants: new MemoryTenantLearning(),
      log: () => {},
    });
    const store = withDeadline(inner, 1000);
    expect(store).toBeInstanceOf(ComposedStore);
    const turn = await store.beginTurn({ tenant: "default", session: "s" }, { ids: [], names: [] });
    expect(turn.seq).toBeNull();
    expect(turn.notes).toEqual([]);
    expect(await store.describeSession({ tenant: "default", session: "s" })).toBeNull();
  });
});
