import { describe, expect, it } from "vitest";
import { compact } from "../../src/core/compact.ts";
import { OffloadError } from "../../src/errors.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import {
  conversation,
  deepFreeze,
  faultyStore,
  jsonBody,
  ON,
  SIZE_ONLY,
  textBody,
  untouchableStore,
} from "../support/requests.ts";

const LARGE = jsonBody(80_000);
const MEDIUM = textBody(20_000);

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
  it("returns the very same string and object, and never touches the store", async () => {
    const store = untouchableStore();
    const text = JSON.stringify(basic());
    for (const config of [undefined, {}, { tool_result_offload_enabled: true }]) {
      const out = await compact({ request: text, session: "s", store, config });
      expect(out.request).toBe(text);
      expect(out.changed).toBe(false);
    }
    const obj = basic();
    expect((await compact({ request: obj, session: "s", store })).request).toBe(obj);
    expect(store.calls).toEqual([]);
  });

  it("passes even invalid JSON through untouched when off (a pass-through never breaks traffic)", async () => {
    const out = await compact({ request: "{not json", session: "s", store: untouchableStore() });
    expect(out.request).toBe("{not json");
  });

  it("with compaction on and nothing to change returns the same string", async () => {
    const text = JSON.stringify(
      conversation([
        { id: "a", result: "small" },
        { id: "b", result: "small too" },
      ]),
    );
    const out = await compact({
      request: text,
      session: "s",
      store: new MemoryStore(),
      config: SIZE_ONLY,
    });
    expect(out.request).toBe(text);
    expect(out.changed).toBe(false);
  });
});

describe("offload of a large settled result", () => {
  it("stubs it, ledgers the body, declares the recall tool at the end of tools", async () => {
    const store = new MemoryStore();
    const out = await compact({
      request: JSON.stringify(basic()),
      session: "s",
      store,
      config: ON,
    });
    const req = parse(out.request as string);
    const d = out.decisions.find((x) => x.tool_use_id === "t1")!;
    expect(d).toMatchObject({ tier: "large", action: "offloaded", chars: LARGE.length });
    expect(d.mem_id).toMatch(/^trm_[0-9a-f]{24}$/);
    expect(d.gate?.fire).toBe(true);
    const stub = resultContent(req, "t1") as string;
    expect(stub).toContain(d.mem_id!);
    expect(stub).toContain("recall_tool_result");
    expect(stub.length).toBeLessThan(2500);
    expect((await store.getBody({ tenant: "default", session: "s" }, d.mem_id!))?.body).toBe(LARGE);
    expect(req.tools.map((t: Req) => t.name)).toEqual(["bash", "recall_tool_result"]);
    expect(out.report).toMatchObject({
      offloaded: 1,
      recall_tool: "added",
      priced_as: "claude-opus-4-5",
    });
    expect(out.report.tokens_after).toBeLessThan(out.report.tokens_before);
    expect(out.report.saved_usd).toBeGreaterThan(0);
  });

  it("adds a tools array when the request has none", async () => {
    const out = await compact({
      request: JSON.stringify(
        conversation(
          [
            { id: "t1", result: LARGE },
            { id: "t2", result: "x" },
          ],
          { tools: null },
        ),
      ),
      session: "s",
      store: new MemoryStore(),
      config: ON,
    });
    expect(parse(out.request as string).tools.map((t: Req) => t.name)).toEqual([
      "recall_tool_result",
    ]);
  });
});

describe("invariant 2: deterministic", () => {
  it("gives the same bytes for the same request and state, in fresh stores", async () => {
    const text = JSON.stringify(basic());
    const a = await compact({ request: text, session: "s", store: new MemoryStore(), config: ON });
    const b = await compact({ request: text, session: "s", store: new MemoryStore(), config: ON });
    expect(a.request).toBe(b.request);
  });

  it("keys mem_ids by secret, tenant and session", async () => {
    const text = JSON.stringify(basic());
    const id = async (session: Parameters<typeof compact>[0]["session"], secret?: string) =>
      (
        await compact({
          request: text,
          session,
          store: new MemoryStore(),
          config: ON,
          ...(secret ? { secret } : {}),
        })
      ).decisions[0]!.mem_id;
    const base = await id("s");
    expect(await id("s")).toBe(base);
    expect(await id("s2")).not.toBe(base);
    expect(await id({ tenant: "other", id: "s" })).not.toBe(base);
    expect(await id("s", "another secret")).not.toBe(base);
  });
});

describe("invariant 3: sticky", () => {
  it("renders a stubbed result with the same bytes whether the client sends the full or the compacted history", async () => {
    const store = new MemoryStore();
    const turns = [
      { id: "t1", result: LARGE },
      { id: "t2", result: "ok" },
    ];
    const first = await compact({
      request: JSON.stringify(conversation(turns)),
      session: "s",
      store,
      config: ON,
    });
    const stub = resultContent(parse(first.request as string), "t1");
    const more = [...turns, { id: "t3", result: "three" }];
    // the client sends back the full history
    const full = await compact({
      request: JSON.stringify(conversation(more)),
      session: "s",
      store,
      config: ON,
    });
    expect(resultContent(parse(full.request as string), "t1")).toEqual(stub);
    // the client sends back our compacted output plus a new turn
    const compacted = parse(first.request as string);
    compacted.messages.push(
      {
        role: "assistant",
        content: [
          { type: "text", text: "calling bash" },
          { type: "tool_use", id: "t3", name: "bash", input: { cmd: "t3" } },
        ],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t3", content: "three" }] },
    );
    const again = await compact({
      request: JSON.stringify(compacted),
      session: "s",
      store,
      config: ON,
    });
    expect(resultContent(parse(again.request as string), "t1")).toEqual(stub);
    expect(again.decisions[0]).toMatchObject({ sticky: true, action: "offloaded" });
    // and the whole prefix up to t3 is byte-identical between the two ways of sending
    const cut = (s: string) => s.slice(0, s.indexOf('"t3"'));
    expect(cut(full.request as string)).toBe(cut(JSON.stringify(parse(again.request as string))));
  });

  it("does not revisit a kept decision even when the config changes later", async () => {
    const store = new MemoryStore();
    const turns = [
      { id: "t1", result: LARGE },
      { id: "t2", result: "ok" },
    ];
    const declined = await compact({
      request: JSON.stringify(conversation(turns, { model: "no-such-model" })),
      session: "s",
      store,
      config: ON,
    });
    expect(declined.decisions[0]).toMatchObject({ action: "kept", tier: "large" });
    expect(declined.decisions[0]!.reason).toContain("unknown model");
    const later = await compact({
      request: JSON.stringify(conversation(turns)),
      session: "s",
      store,
      config: ON,
    });
    expect(later.decisions[0]).toMatchObject({ action: "kept", sticky: true });
  });

  it("recognises the same body re-encoded differently (escapes) and still stubs it", async () => {
    const store = new MemoryStore();
    const body = `${"é".repeat(100)}${LARGE}`;
    const turns = [
      { id: "t1", result: body },
      { id: "t2", result: "ok" },
    ];
    const first = await compact({
      request: JSON.stringify(conversation(turns)),
      session: "s",
      store,
      config: ON,
    });
    const escaped = JSON.stringify(conversation(turns)).replace(/é/g, "\\u00e9");
    const second = await compact({ request: escaped, session: "s", store, config: ON });
    expect(resultContent(parse(second.request as string), "t1")).toEqual(
      resultContent(parse(first.request as string), "t1"),
    );
  });

  it("keeps a different body sent under a decided id, and says so", async () => {
    const store = new MemoryStore();
    await compact({ request: JSON.stringify(basic()), session: "s", store, config: ON });
    const other = jsonBody(90_000);
    const out = await compact({
      request: JSON.stringify(
        conversation([
          { id: "t1", result: other },
          { id: "t2", result: "ok" },
        ]),
      ),
      session: "s",
      store,
      config: ON,
    });
    expect(resultContent(parse(out.request as string), "t1")).toBe(other);
    expect(out.report.errors).toEqual([
      expect.objectContaining({ type: "conflict", tool_use_id: "t1" }),
    ]);
  });
});

describe("invariant 4: idempotent", () => {
  it("compacting a compacted request changes nothing", async () => {
    for (const config of [ON, SIZE_ONLY]) {
      const store = new MemoryStore();
      const once = await compact({
        request: JSON.stringify(
          conversation([
            { id: "t1", result: LARGE },
            { id: "t2", result: MEDIUM },
            { id: "t3", result: "x" },
          ]),
        ),
        session: "s",
        store,
        config,
      });
      expect(once.changed).toBe(true);
      const twice = await compact({ request: once.request, session: "s", store, config });
      expect(twice.request).toBe(once.request);
      expect(twice.changed).toBe(false);
    }
  });
});

describe("invariant 5: nothing lost", () => {
  it("keeps the result full when the ledger write fails, reports it, and offloads on a later healthy turn", async () => {
    const store = new MemoryStore();
    const text = JSON.stringify(basic());
    const out = await compact({
      request: text,
      session: "s",
      store: faultyStore(store, { putBody: true }),
      config: ON,
    });
    expect(resultContent(parse(out.request as string), "t1")).toBe(LARGE);
    expect(out.decisions[0]).toMatchObject({ action: "kept", mem_id: null });
    expect(out.report.errors).toEqual([
      expect.objectContaining({ type: "storage_error", tool_use_id: "t1" }),
    ]);
    const healthy = await compact({ request: text, session: "s", store, config: ON });
    expect(healthy.decisions[0]!.action).toBe("offloaded");
  });

  it("keeps new results full when the decisions cannot be saved", async () => {
    const out = await compact({
      request: JSON.stringify(basic()),
      session: "s",
      store: faultyStore(new MemoryStore(), { commit: true }),
      config: ON,
    });
    expect(resultContent(parse(out.request as string), "t1")).toBe(LARGE);
    expect(out.report.errors[0]?.type).toBe("storage_error");
  });

  it("passes the request through when the session state cannot be read", async () => {
    const text = JSON.stringify(basic());
    const out = await compact({
      request: text,
      session: "s",
      store: faultyStore(new MemoryStore(), { load: true }),
      config: ON,
    });
    expect(out.request).toBe(text);
    expect(out.report.errors[0]?.type).toBe("storage_error");
  });
});

describe("invariant 6: valid output", () => {
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
      config: ON,
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

  it("decides parallel results of one message one by one", async () => {
    const req = conversation([{ id: "a", result: "x" }]);
    const msgs = req.messages as Req[];
    msgs.push(
      {
        role: "assistant",
        content: [1, 2, 3].map((i) => ({ type: "tool_use", id: `p${i}`, name: "bash", input: {} })),
      },
      {
        role: "user",
        content: [LARGE, "small", jsonBody(70_000)].map((c, i) => ({
          type: "tool_result",
          tool_use_id: `p${i + 1}`,
          content: c,
        })),
      },
      { role: "assistant", content: [{ type: "tool_use", id: "z", name: "bash", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "z", content: "last" }] },
    );
    const out = await compact({
      request: JSON.stringify(req),
      session: "s",
      store: new MemoryStore(),
      config: ON,
    });
    expect(out.decisions.map((d) => [d.tool_use_id, d.action])).toEqual([
      ["a", "kept"],
      ["p1", "offloaded"],
      ["p2", "kept"],
      ["p3", "offloaded"],
      ["z", "kept"],
    ]);
  });

  it("never mutates an object request, and returns a new object when it changes", async () => {
    const req = deepFreeze(basic());
    const copy = structuredClone(req);
    const out = await compact({ request: req, session: "s", store: new MemoryStore(), config: ON });
    expect(out.request).not.toBe(req);
    expect(req).toEqual(copy);
    expect((out.request as Req).messages[2].content[0].content).toContain("trm_");
  });
});

describe("invariant 7: the recall tool", () => {
  const EAGER = { ...ON, tool_result_recall_tool_declaration: "eager" };

  it("eager: is declared from the first enabled turn even with nothing to offload, never twice", async () => {
    const store = new MemoryStore();
    const first = await compact({
      request: JSON.stringify(conversation([{ id: "a", result: "x" }])),
      session: "s",
      store,
      config: EAGER,
    });
    expect(first.report.recall_tool).toBe("added");
    const tools = parse(first.request as string).tools;
    expect(tools.at(-1).name).toBe("recall_tool_result");
    const again = await compact({ request: first.request, session: "s", store, config: EAGER });
    expect(
      parse(again.request as string).tools.filter((t: Req) => t.name === "recall_tool_result"),
    ).toHaveLength(1);
    expect(again.report.recall_tool).toBe("present");
    // and the client's full history on the next turn gets it too, at the same place
    const next = await compact({
      request: JSON.stringify(
        conversation([
          { id: "a", result: "x" },
          { id: "b", result: "y" },
        ]),
      ),
      session: "s",
      store,
      config: EAGER,
    });
    expect(JSON.stringify(parse(next.request as string).tools)).toBe(JSON.stringify(tools));
  });

  it("lazy (default): costs nothing until the first offload, is declared on that turn and stays", async () => {
    const store = new MemoryStore();
    const small = conversation([
      { id: "a", result: "x" },
      { id: "b", result: "y" },
    ]);
    const none = await compact({ request: JSON.stringify(small), session: "s", store, config: ON });
    expect(none.changed).toBe(false);
    expect(none.report.recall_tool).toBe("none");
    const turns = [
      { id: "a", result: "x" },
      { id: "b", result: "y" },
      { id: "c", result: LARGE },
      { id: "d", result: "z" },
    ];
    const first = await compact({
      request: JSON.stringify(conversation(turns)),
      session: "s",
      store,
      config: ON,
    });
    expect(first.report.recall_tool).toBe("added");
    const gate = first.decisions.find((d) => d.tool_use_id === "c")!.gate!;
    expect(gate.tool_declaration_cost_usd).toBeGreaterThan(0);
    expect(gate.inputs.tool_tokens).toBeGreaterThan(50);
    expect(parse(first.request as string).tools.map((t: Req) => t.name)).toEqual([
      "bash",
      "recall_tool_result",
    ]);
    const later = await compact({
      request: JSON.stringify(
        conversation([...turns, { id: "e", result: jsonBody(70_000) }, { id: "f", result: "w" }]),
      ),
      session: "s",
      store,
      config: ON,
    });
    expect(parse(later.request as string).tools.map((t: Req) => t.name)).toEqual([
      "bash",
      "recall_tool_result",
    ]);
    expect(
      later.decisions.find((d) => d.tool_use_id === "e")!.gate!.tool_declaration_cost_usd,
    ).toBe(0);
  });

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

  it("stays declared once declared, even when offload is turned off later (stubs still point at it)", async () => {
    // (declared here by the first offload)
    const store = new MemoryStore();
    await compact({ request: JSON.stringify(basic()), session: "s", store, config: ON });
    const later = await compact({
      request: JSON.stringify(basic()),
      session: "s",
      store,
      config: SIZE_ONLY,
    });
    expect(parse(later.request as string).tools.at(-1).name).toBe("recall_tool_result");
    expect(resultContent(parse(later.request as string), "t1")).toContain("trm_");
  });

  it("is not declared on the size-only path", async () => {
    const out = await compact({
      request: JSON.stringify(
        conversation([
          { id: "t1", result: MEDIUM },
          { id: "t2", result: "x" },
        ]),
      ),
      session: "s",
      store: new MemoryStore(),
      config: SIZE_ONLY,
    });
    expect(parse(out.request as string).tools.map((t: Req) => t.name)).toEqual(["bash"]);
  });
});

describe("invariant 8: the hot window", () => {
  it("never stubs the freshest keep_last_n results, even settled and large", async () => {
    const turns = [
      { id: "t1", result: LARGE },
      { id: "t2", result: jsonBody(90_000) },
      { id: "t3", result: jsonBody(100_000) },
    ];
    const answered = conversation(turns, { answered: true });
    const one = await compact({
      request: JSON.stringify(answered),
      session: "a",
      store: new MemoryStore(),
      config: ON,
    });
    expect(one.decisions.map((d) => d.tier)).toEqual(["large", "large", "hot"]);
    expect(one.decisions.map((d) => d.action)).toEqual(["offloaded", "offloaded", "kept"]);
    const three = await compact({
      request: JSON.stringify(answered),
      session: "b",
      store: new MemoryStore(),
      config: { ...ON, keep_last_n: 3 },
    });
    expect(three.decisions.map((d) => d.action)).toEqual(["kept", "kept", "kept"]);
    expect(three.decisions.every((d) => d.tier === "hot")).toBe(true);
  });
});

describe("invariant 9: recall answers", () => {
  it("are never offloaded; once settled they become a marker naming the same mem_id and slice", async () => {
    const store = new MemoryStore();
    const first = await compact({
      request: JSON.stringify(basic()),
      session: "s",
      store,
      config: ON,
    });
    const memId = first.decisions[0]!.mem_id!;
    const answer = LARGE.slice(0, 70_000);
    const turns = [
      { id: "t1", result: LARGE },
      { id: "t2", result: "ok" },
      {
        id: "r1",
        name: "recall_tool_result",
        input: { mem_id: memId, offset: 0, max_chars: 70_000 },
        result: answer,
      },
      { id: "t4", result: "ok" },
    ];
    const out = await compact({
      request: JSON.stringify(conversation(turns)),
      session: "s",
      store,
      config: ON,
    });
    const r = out.decisions.find((d) => d.tool_use_id === "r1")!;
    expect(r).toMatchObject({ action: "compacted", mem_id: memId });
    const marker = resultContent(parse(out.request as string), "r1") as string;
    expect(marker).toContain(memId);
    expect(marker).toContain("offset=0");
    expect(marker).toContain("max_chars=70000");
    expect(out.decisions.filter((d) => d.action === "offloaded").map((d) => d.tool_use_id)).toEqual(
      ["t1"],
    );
  });
});

describe("invariant 10: only text is measured", () => {
  it("ignores media blocks when sizing a result", async () => {
    const bigImage = {
      type: "image",
      source: { type: "base64", media_type: "image/png", data: "A".repeat(200_000) },
    };
    const out = await compact({
      request: JSON.stringify(
        conversation([
          { id: "t1", result: [bigImage, { type: "text", text: "caption" }] },
          { id: "t2", result: "x" },
        ]),
      ),
      session: "s",
      store: new MemoryStore(),
      config: ON,
    });
    expect(out.decisions[0]).toMatchObject({ chars: 7, tier: "small", action: "kept" });
  });
});

describe("tiers and the size-only path", () => {
  it("classifies at the boundaries of the config", async () => {
    const sizes = [8000, 8001, 59_999, 60_000];
    const turns = sizes.map((n, i) => ({ id: `t${i}`, result: textBody(n) }));
    const out = await compact({
      request: JSON.stringify(conversation(turns, { answered: true })),
      session: "s",
      store: new MemoryStore(),
      config: { ...ON, keep_last_n: 0 },
    });
    expect(out.decisions.map((d) => d.tier)).toEqual(["small", "medium", "medium", "large"]);
    expect(out.decisions.map((d) => d.action)).toEqual(["kept", "kept", "kept", "offloaded"]);
  });

  it("shortens settled, non-hot results over the floor to a head preview, bodies still recoverable", async () => {
    const store = new MemoryStore();
    const out = await compact({
      request: JSON.stringify(
        conversation([
          { id: "t1", result: MEDIUM },
          { id: "t2", result: LARGE },
          { id: "t3", result: "hot" },
        ]),
      ),
      session: "s",
      store,
      config: SIZE_ONLY,
    });
    expect(out.decisions.map((d) => d.action)).toEqual(["compacted", "compacted", "kept"]);
    const shortened = resultContent(parse(out.request as string), "t1") as string;
    expect(shortened.startsWith(MEDIUM.slice(0, 1000))).toBe(true);
    expect(shortened).toContain("shortened by edge-offload");
    expect(shortened.length).toBeLessThan(2400);
    const memId = out.decisions[0]!.mem_id!;
    expect(shortened).toContain(memId);
    expect((await store.getBody({ tenant: "default", session: "s" }, memId))?.body).toBe(MEDIUM);
    expect(out.decisions[0]!.gate).toBeUndefined();
  });

  it("keeps medium results full when offload is on (the gate only sees the pre-filtered large ones)", async () => {
    const out = await compact({
      request: JSON.stringify(
        conversation([
          { id: "t1", result: MEDIUM },
          { id: "t2", result: "x" },
        ]),
      ),
      session: "s",
      store: new MemoryStore(),
      config: ON,
    });
    expect(out.decisions[0]).toMatchObject({ tier: "medium", action: "kept" });
  });
});

describe("the gate inside the transform", () => {
  it("never offloads for an unknown model", async () => {
    const out = await compact({
      request: JSON.stringify(basic("gpt-unknown-9")),
      session: "s",
      store: new MemoryStore(),
      config: ON,
    });
    expect(out.decisions[0]).toMatchObject({ action: "kept", tier: "large" });
    expect(out.decisions[0]!.gate).toMatchObject({ fire: false, model: null });
  });

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
  const store = () => untouchableStore();
  const run = (request: unknown) =>
    compact({ request: request as string, session: "s", store: store(), config: ON });

  it("rejects invalid JSON with the position", async () => {
    await expect(run('{"model": "x", "messages": [}')).rejects.toMatchObject({
      type: "invalid_json",
      status: 400,
    });
    await expect(
      run('{"messages":[{"role":"user","content":"bad \\q escape"}]}'),
    ).rejects.toMatchObject({ type: "invalid_json", path: "messages[0].content" });
  });

  it("names the path of a wrong shape", async () => {
    const cases: [unknown, string][] = [
      [[], "$"],
      [{ model: 5, messages: [] }, "model"],
      [{ messages: {} }, "messages"],
      [{ messages: [{ role: 5, content: "x" }] }, "messages[0].role"],
      [{ messages: [{ role: "user" }] }, "messages[0]"],
      [{ messages: [{ role: "user", content: [{ text: "no type" }] }] }, "messages[0].content[0]"],
      [
        {
          messages: [
            { role: "user", content: [{ type: "tool_result", tool_use_id: "nope", content: "x" }] },
          ],
        },
        "messages[0].content[0].tool_use_id",
      ],
      [{ tools: {}, messages: [] }, "tools"],
      [{ messages: [], cache_control: { type: "ephemeral", ttl: "2h" } }, "cache_control.ttl"],
    ];
    for (const [request, path] of cases) {
      const err = await run(JSON.stringify(request)).catch((e: unknown) => e);
      expect(err, JSON.stringify(request)).toBeInstanceOf(OffloadError);
      expect((err as OffloadError).type).toBe("invalid_request");
      expect((err as OffloadError).path).toBe(path);
    }
  });

  it("rejects a result that answers a call of an earlier turn, or answers twice", async () => {
    const req = conversation([
      { id: "a", result: "x" },
      { id: "b", result: "y" },
    ]);
    const msgs = req.messages as Req[];
    msgs[4]!.content[0].tool_use_id = "a";
    await expect(run(JSON.stringify(req))).rejects.toMatchObject({
      path: "messages[4].content[0].tool_use_id",
    });
    const twice = conversation([{ id: "a", result: "x" }]);
    (twice.messages as Req[])[2]!.content.push({
      type: "tool_result",
      tool_use_id: "a",
      content: "again",
    });
    await expect(run(JSON.stringify(twice))).rejects.toMatchObject({
      path: "messages[2].content[1].tool_use_id",
    });
  });

  it("rejects a bad config without touching the store", async () => {
    const s = store();
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

describe("concurrency", () => {
  it("two turns racing on one session render the shared result identically", async () => {
    const store = new MemoryStore();
    // One turn would keep t1 (unknown model: no price), the other would offload it: whichever commits first
    // stands, and both answers must show t1 the same way.
    const a = conversation(
      [
        { id: "t1", result: LARGE },
        { id: "t2", result: "ok" },
      ],
      { model: "unpriced-model" },
    );
    const b = conversation([
      { id: "t1", result: LARGE },
      { id: "t2", result: "ok" },
      { id: "t3", result: "more" },
    ]);
    const [x, y] = await Promise.all([
      compact({ request: JSON.stringify(a), session: "s", store, config: ON }),
      compact({ request: JSON.stringify(b), session: "s", store, config: ON }),
    ]);
    expect(x.decisions[0]!.action).toBe(y.decisions[0]!.action);
    expect(resultContent(parse(x.request as string), "t1")).toEqual(
      resultContent(parse(y.request as string), "t1"),
    );
  });
});
