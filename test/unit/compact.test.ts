/**
 * What is particular to the Anthropic Messages format in the turn transform (is_error, cache_control
 * breakpoints and automatic caching, system messages inside `messages`), a pass-through of broken JSON when
 * off, and the exact bytes a model reads in place of a result. The invariants every format shares run once
 * per format in formats.test.ts.
 */
import { describe, expect, it } from "vitest";
import { compact } from "../../src/core/compact.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { putBody } from "../support/records.ts";
import { conversation, jsonBody, ON, textBody, untouchableStore } from "../support/requests.ts";

const LARGE = jsonBody(80_000);

type Req = Record<string, any>;
const parse = (s: string): Req => JSON.parse(s);
const resultContent = (req: Req, id: string): unknown => {
  for (const m of req.messages) {
    if (!Array.isArray(m.content)) continue;
    for (const b of m.content)
      if (b.type === "tool_result" && b.tool_use_id === id) return b.content;
  }
  throw new Error(`no result ${id}`);
};

/** t1 large (settled), t2 small (hot) */
function basic(model = "claude-opus-4-5") {
  return conversation(
    [
      { id: "t1", result: LARGE },
      { id: "t2", result: "ok" },
    ],
    { model },
  );
}

describe("invariant 1: off means the same bytes", () => {
  it("passes even invalid JSON through untouched when off (a pass-through never breaks traffic)", async () => {
    const out = await compact({ request: "{not json", session: "s", store: untouchableStore() });
    expect(out.request).toBe("{not json");
  });
});

describe("invariant 6: valid output, Anthropic's blocks", () => {
  it("keeps pairing, ids, is_error, block order, media blocks and client breakpoints", async () => {
    const image = {
      type: "image",
      source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" },
    };
    const turns = [
      {
        id: "t1",
        result: [
          { type: "text", text: LARGE.slice(0, 40_000) },
          image,
          { type: "text", text: LARGE.slice(40_000), cache_control: { type: "ephemeral" } },
        ],
        is_error: true,
      },
      { id: "t2", result: "ok" },
    ];
    const req = conversation(turns, {
      system: [{ type: "text", text: "sys", cache_control: { type: "ephemeral", ttl: "1h" } }],
    });
    const out = await compact({
      request: JSON.stringify(req),
      session: "s",
      store: new MemoryStore(),
      // the client's markers only (the default anchor would add one of its own)
      config: { ...ON, tool_result_medium_tier: "off" },
    });
    const got = parse(out.request as string);
    expect(out.decisions[0]).toMatchObject({ action: "offloaded", chars: LARGE.length + 1 });
    const block = got.messages[2].content[0];
    expect(block).toMatchObject({ type: "tool_result", tool_use_id: "t1", is_error: true });
    expect(block.content[0].type).toBe("text");
    expect(block.content[0].cache_control).toEqual({ type: "ephemeral" });
    expect(block.content[1]).toEqual(image);
    expect(block.content).toHaveLength(2);
    expect(got.messages[1].content[1]).toEqual((req.messages as Req[])[1]!.content[1]);
    const markers = (out.request as string).match(/"cache_control"/g) ?? [];
    expect(markers.length).toBeLessThanOrEqual(4);
    expect(markers.length).toBe(2);
    expect(got.system).toEqual(req.system);
  });
});

describe("invariant 7: the recall tool, against Anthropic's breakpoints", () => {
  const EAGER = { ...ON, tool_result_recall_tool_declaration: "eager" };

  it("lazy: charges a caching client for rewriting the cached head, so a small win deep in a cached prompt is declined", async () => {
    const filler = Array.from({ length: 30 }, (_, i) => ({
      id: `f${i}`,
      result: textBody(7000, `f${i}`),
    }));
    const turns = [...filler, { id: "big", result: textBody(61_000) }, { id: "last", result: "x" }];
    const req = conversation(turns, { model: "claude-sonnet-4-6" });
    const msgs = req.messages as Req[];
    msgs[msgs.length - 1]!.content[0].cache_control = { type: "ephemeral" };
    const lazy = await compact({
      request: JSON.stringify(req),
      session: "l",
      store: new MemoryStore(),
      config: ON,
    });
    const eager = await compact({
      request: JSON.stringify(req),
      session: "e",
      store: new MemoryStore(),
      config: EAGER,
    });
    const g = lazy.decisions.find((d) => d.tool_use_id === "big")!.gate!;
    expect(g.inputs.tool_prefix_tokens).toBeGreaterThan(50_000);
    expect(g.tool_declaration_cost_usd).toBeGreaterThan(
      eager.decisions.find((d) => d.tool_use_id === "big")!.gate!.tool_declaration_cost_usd,
    );
  });
});

describe("the gate inside the transform, against Anthropic's breakpoints", () => {
  it("prices the result against the request's cache breakpoints", async () => {
    // A 61K-char result deep in a cached prefix: invalidating 100K+ cached tokens after it costs more than it saves.
    const filler = Array.from({ length: 12 }, (_, i) => ({
      id: `f${i}`,
      result: textBody(7000, `f${i}`),
    }));
    const turns = [{ id: "t1", result: textBody(61_000) }, ...filler];
    const req = conversation(turns, { model: "claude-sonnet-4-6" });
    const msgs = req.messages as Req[];
    const last = msgs[msgs.length - 1]!.content[0];
    last.cache_control = { type: "ephemeral" };
    const cached = await compact({
      request: JSON.stringify(req),
      session: "c",
      store: new MemoryStore(),
      config: ON,
    });
    expect(cached.decisions[0]!.gate).toMatchObject({ fire: false });
    expect(cached.decisions[0]!.gate!.inputs.cached_side).toBe(true);
    expect(cached.decisions[0]!.gate!.invalidation_cost_usd).toBeGreaterThan(0);
    delete last.cache_control;
    const uncached = await compact({
      request: JSON.stringify(req),
      session: "u",
      store: new MemoryStore(),
      config: ON,
    });
    expect(uncached.decisions[0]!.gate).toMatchObject({ fire: true });
    expect(uncached.decisions[0]!.gate!.inputs.cached_side).toBe(false);
  });

  it("treats a top-level cache_control (automatic caching) as a breakpoint at the end", async () => {
    const req = conversation(
      [
        { id: "t1", result: LARGE },
        { id: "t2", result: "x" },
      ],
      { extra: { cache_control: { type: "ephemeral", ttl: "1h" } } },
    );
    const out = await compact({
      request: JSON.stringify(req),
      session: "s",
      store: new MemoryStore(),
      config: ON,
    });
    expect(out.decisions[0]!.gate!.inputs).toMatchObject({ cached_side: true, cache_ttl: "1h" });
  });
});

describe("bad input", () => {
  it("rejects a bad config without touching the store", async () => {
    const s = untouchableStore();
    await expect(
      compact({
        request: "{}",
        session: "s",
        store: s,
        // @ts-expect-error: a wrong value fails to compile; this checks the run-time error plain JS gets
        config: { tool_result_compaction_enabled: "yes" },
      }),
    ).rejects.toMatchObject({ type: "invalid_config" });
    await expect(
      // @ts-expect-error: an unknown field fails to compile; this checks the run-time error plain JS gets
      compact({ request: "{}", session: "s", store: s, config: { keep_last: 1 } }),
    ).rejects.toMatchObject({ type: "invalid_config", path: "config.keep_last" });
    await expect(
      compact({ request: "{}", session: "bad session id!", store: s, config: ON }),
    ).rejects.toMatchObject({ type: "invalid_argument" });
    expect(s.calls).toEqual([]);
  });
});

describe("messages the API accepts besides user and assistant", () => {
  it("keeps a mid-conversation system message (Claude Code sends one) and still offloads around it", async () => {
    const req = basic();
    const msgs = req.messages as Req[];
    // between the assistant's tool_use and the user's tool_result, and again at the end with a breakpoint
    msgs.splice(2, 0, { role: "system", content: "You are in plan mode." });
    msgs.push({
      role: "system",
      content: [{ type: "text", text: "reminder", cache_control: { type: "ephemeral" } }],
    });
    const out = await compact({
      request: JSON.stringify(req),
      session: "s",
      store: new MemoryStore(),
      config: ON,
    });
    expect(out.decisions.map((d) => d.action)).toEqual(["offloaded", "kept"]);
    const sent = parse(out.request as string);
    expect(sent.messages[2]).toEqual({ role: "system", content: "You are in plan mode." });
    expect(sent.messages.at(-1)).toEqual(msgs.at(-1));
    expect(String(resultContent(sent, "t1"))).toContain("trm_");
  });
});

describe("the bytes a model reads in place of a result", () => {
  // Deterministic by design: the same body in the same session and deployment renders these very bytes on
  // every turn, which is what keeps the prompt cache warm. A change here changes every cached prompt.
  const secret = "a-test-secret-0123456789";
  const body = jsonBody(80_000);
  const request = JSON.stringify(
    conversation(
      [
        { id: "t1", result: body },
        { id: "t2", result: "ok" },
      ],
      { model: "claude-opus-4-5" },
    ),
  );
  const replaced = async (
    config: object,
    session: string,
    req = request,
    store = new MemoryStore(),
  ) => {
    const out = await compact({ request: req, session, store, config, secret });
    return resultContent(parse(out.request as string), "t1");
  };

  it("the offload stub", async () => {
    expect(
      await replaced({ ...ON, tool_result_stub_preview_chars: 160 }, "stub"),
    ).toMatchInlineSnapshot(`
      "[tool result offloaded by edge-offload · mem_id trm_65208281b7495c28d076e510]
      Output of bash: 80,008 chars (~29,633 tokens), json, 1 line.
      JSON object, 2 keys:
        $.total: 947
        $.items: array(947) of objects {id: number, sku: string, name: string, price: number, tags: array}
      Index $.items[*].id (name): 0 (Item number 0), 1 (Item number 1), 2 (Item number 2), 3 (Item number 3), 4 (Item number 4), 5 (Item number 5), 6 (Item number 6), 7 (Item number 7), 8 (Item number 8), 9 (Item number 9), 10 (Item number 10), 11 (Item number 11), 12 (Item number 12), 13 (Item number 13), 14 (Item number 14), 15 (Item number 15), 16 (Item number 16), 17 (Item number 17), 18 (Item number 18), 19 (Item number 19), 20 (Item number 20), 21 (Item number 21), 22 (Item number 22), 23 (Item number 23), 24 (Item number 24), 25 (Item number 25), 26 (Item number 26), 27 (Item number 27), 28 (Item number 28), 29 (Item number 29), 30 (Item number 30), 31 (Item number 31), 32 (Item number 32), 33 (Item number 33), 34 (Item number 34), 35 (Item number 35), 36 (Item number 36), 37 (Item number 37), 38 (Item number 38), 39 (Item number 39), 40 (Item number 40), 41 (Item number 41), 42 (Item number 42), 43 (Item number 43), 44 (Item number 44), 45 (Item number 45), 46 (Item number 46), 47 (Item number 47), 48 (Item number 48), 49 (Item number 49), 50 (Item number 50), 51 (Item number 51), 52 (Item number 52), 53 (Item number 53), 54 (Item number 54), 55 (Item number 55) … (+891 more)
      Preview (first 160 chars):
      {"total":947,"items":[{"id":0,"sku":"SKU-000000","name":"Item number 0","price":0,"tags":["a","b"]},{"id":1,"sku":"SKU-000001","name":"Item number 1","price":0.
      …
      The full result is kept. To read it, call recall_tool_result with mem_id="trm_65208281b7495c28d076e510" and query="…" (every exact match, with context), or json_path="$…" (part of the JSON), or offset and max_chars (a slice)."
    `);
  });

  it("the size-only path's shortened preview", async () => {
    const config = {
      tool_result_compaction_enabled: true,
      tool_result_compaction_preview_chars: 160,
    };
    expect(await replaced(config, "preview")).toMatchInlineSnapshot(`
      "{"total":947,"items":[{"id":0,"sku":"SKU-000000","name":"Item number 0","price":0,"tags":["a","b"]},{"id":1,"sku":"SKU-000001","name":"Item number 1","price":0.
      [… output shortened by edge-offload: showing 160 of 80,008 chars (~29,633 tokens). Full output kept as mem_id trm_0c9b6bb9d01e4da3c6aa1564.]"
    `);
  });

  it("the marker of a settled recall answer", async () => {
    const recallTurn = {
      id: "t1",
      name: "recall_tool_result",
      input: { mem_id: "trm_0123456789abcdef01234567", query: "Item number 7", window: 40 },
      result: body.slice(0, 9000),
    };
    const req = JSON.stringify(conversation([recallTurn, { id: "t2", result: "ok" }]));
    // A marker only for a mem_id this session issued: the ledger holds what it points at.
    const store = new MemoryStore();
    await putBody(store, { tenant: "default", session: "recall" }, body, {
      mem_id: recallTurn.input.mem_id,
      tool_use_id: "t0",
      tool_name: "bash",
      chars: body.length,
      tokens: 1,
      kind: "json",
      outline: "",
      turn: 1,
    });
    expect(await replaced(ON, "recall", req, store)).toMatchInlineSnapshot(
      `"[recall answer of 9,000 chars, shortened by edge-offload after use. To see it again, call recall_tool_result with mem_id="trm_0123456789abcdef01234567", query="Item number 7", window=40.]"`,
    );
  });
});
