// The proxy loop outside the Worker: proxyTurn (src/proxy/turn.ts) in plain Node, over a MemoryStore and a stub
// fetch. What an in-process proxy for the official SDKs builds on: the same compaction, recall hops, turn log
// and memos as the Worker's routes, with no Hono, no bindings and no network.
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/config.ts";
import { anthropicDialect } from "../../src/proxy/anthropic.ts";
import { type ProxyTurnInput, proxyTurn } from "../../src/proxy/turn.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import {
  anthropicMessage,
  anthropicRequest,
  memIdIn,
  ON,
  RECALL_NAME,
} from "../support/providers.ts";

interface Call {
  url: string;
  headers: Headers;
  body: string;
}

/** A provider that answers in order, and remembers what it was sent. */
function stubProvider(...answers: ((call: Call) => unknown)[]): {
  fetch: typeof fetch;
  calls: Call[];
} {
  const calls: Call[] = [];
  const stub = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const raw = init?.body;
    const call = {
      url: String(input),
      headers: new Headers(init?.headers),
      body: typeof raw === "string" ? raw : new TextDecoder().decode(raw as Uint8Array),
    };
    calls.push(call);
    const answer = answers.shift();
    if (answer === undefined) throw new Error(`unexpected provider call #${calls.length}`);
    return Response.json(answer(call));
  };
  return { fetch: stub as typeof fetch, calls };
}

function turn(
  store: MemoryStore,
  fetcher: typeof fetch,
  request: unknown,
  config: object = ON,
): Promise<Response> {
  const text = JSON.stringify(request);
  const input: ProxyTurnInput = {
    dialect: anthropicDialect,
    fetch: fetcher,
    url: "https://provider.test/v1/messages",
    headers: new Headers({ "content-type": "application/json", "x-api-key": "sk-test" }),
    body: { bytes: async () => new TextEncoder().encode(text), text: async () => text },
    ref: { tenant: "acme", session: "in-process" },
    store,
    config: (session) => resolveConfig(session, config),
    secret: () => "an-in-process-secret-0123456789",
    maxHops: 3,
    log: () => {},
  };
  return proxyTurn(input);
}

describe("the proxy loop in one process", () => {
  it("compacts, answers the model's recall itself against the MemoryStore, and logs the hop", async () => {
    const store = new MemoryStore();
    const provider = stubProvider(
      (call) =>
        anthropicMessage(
          "msg_1",
          [
            { text: "Let me look." },
            {
              call: RECALL_NAME,
              id: "toolu_r1",
              input: { mem_id: memIdIn(call.body), json_path: "$.items[1499]" },
            },
          ],
          { input: 1000, output: 20 },
        ),
      () =>
        anthropicMessage("msg_2", [{ text: "item-1499 costs the most." }], {
          input: 1200,
          output: 30,
        }),
    );

    const res = await turn(store, provider.fetch, anthropicRequest());
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { content: { type: string; text?: string }[] };
    // The client reads one answer in which our tool never appears.
    expect(answer.content).toEqual([
      { type: "text", text: "Let me look." },
      { type: "text", text: "item-1499 costs the most." },
    ]);
    expect(JSON.stringify(answer)).not.toContain(RECALL_NAME);

    // The provider got the stub (not the catalog) and, on the hop, the recalled slice from the ledger.
    expect(provider.calls).toHaveLength(2);
    expect(provider.calls[0]!.headers.get("x-api-key")).toBe("sk-test");
    expect(provider.calls[0]!.body).not.toContain("item-1499");
    expect(provider.calls[1]!.body).toContain("item-1499");

    const summary = JSON.parse(res.headers.get("x-offload-summary")!);
    expect(summary).toMatchObject({ offloaded: 1, recall_tool: "added", errors: [] });
    expect(summary.proxy).toEqual({
      stream: false,
      spliced: 0,
      hops: 1,
      recalls: 1,
      ending: "done",
      memos: 0,
      // Billed from the provider's usage (Opus 4.6: $5 in, $25 out per MTok): both calls, the hop's.
      usd: expect.closeTo(0.01225, 9),
      hop_usd: expect.closeTo(0.00675, 9),
    });

    // The session's state is the MemoryStore's: the decision is sticky (toolu_2 is hot, so not decided yet),
    // the hop is on the turn's log line, the recall is counted.
    const session = await store.describeSession({ tenant: "acme", session: "in-process" });
    expect(session!.records.map((r) => [r.tool_use_id, r.action])).toEqual([
      ["toolu_1", "offloaded"],
    ]);
    expect(session!.turns.at(-1)!.proxy).toEqual({ hops: 1, recalls: 1, exhausted: false });
    // The measured usage is on the same line: both calls summed, the client's own call apart.
    expect(session!.turns.at(-1)!.usage).toEqual({
      source: "proxy",
      model: "claude-opus-4-6",
      calls: 2,
      tokens: { input: 2200, cache_read: 0, cache_write_5m: 0, cache_write_1h: 0, output: 50 },
      first: { input: 1000, cache_read: 0, cache_write_5m: 0, cache_write_1h: 0, output: 20 },
      answer_output: 30,
    });
    expect(session!.recalls).toBe(1);
  });

  it("passes the request through byte for byte when compaction is off", async () => {
    const provider = stubProvider(() =>
      anthropicMessage("msg_off", [{ text: "ok" }], { input: 1, output: 1 }),
    );
    const request = anthropicRequest();
    const res = await turn(new MemoryStore(), provider.fetch, request, {});
    expect(res.status).toBe(200);
    expect(provider.calls[0]!.body).toBe(JSON.stringify(request));
    expect(JSON.parse(res.headers.get("x-offload-summary")!)).toMatchObject({
      enabled: false,
      changed: false,
    });
  });
});
