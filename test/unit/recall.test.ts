import { describe, expect, it } from "vitest";
import { recall } from "../../src/core/recall.ts";
import { recallInputSchema, recallToolDefinition } from "../../src/core/recall-tool.ts";
import { MEM, SESSION, withBody } from "../support/recall.ts";
import { faultyStore } from "../support/requests.ts";

describe("recall by query", () => {
  it("returns every match with ±window, numbered, with offsets and a total", async () => {
    const body = `${"alpha order-4821 beta ".repeat(3) + "x".repeat(5000)} order-4821 end`;
    const store = await withBody(body);
    const a = await recall({
      store,
      session: SESSION,
      mem_id: MEM,
      query: "order-4821",
      window: 10,
    });
    expect(a).toMatchObject({
      is_error: false,
      mode: "query",
      matches: 4,
      total_chars: body.length,
      truncated: false,
    });
    expect(a.content).toMatch(/^4 matches for "order-4821"/);
    expect(a.content).toContain(
      `--- matches 1–3 (chars 0–70) ---\n${body.slice(0, 70)}\n--- match 4`,
    );
    expect(a.content).toContain(
      `--- match 4 (chars ${(body.lastIndexOf("order-4821") - 10).toLocaleString("en-US")}`,
    );
  });

  it("is exact and case-sensitive, and says so when nothing matches", async () => {
    const store = await withBody("Needle in a haystack");
    const a = await recall({ store, session: SESSION, mem_id: MEM, query: "needle" });
    expect(a).toMatchObject({ is_error: false, matches: 0 });
    expect(a.content).toContain("case-sensitive");
  });

  it("caps a flood of matches at 50,000 chars and says where to continue", async () => {
    const body = "hit ".repeat(100_000);
    const store = await withBody(body);
    const a = await recall({ store, session: SESSION, mem_id: MEM, query: "hit", window: 100 });
    expect(a.content.length).toBeLessThanOrEqual(50_000);
    expect(a.truncated).toBe(true);
    expect(a.matches).toBe(100_000);
    expect(a.content).toMatch(/\[cut: showing matches 1–[\d,]+ of 100,000/);
  });
});

describe("recall by slice", () => {
  it("returns the slice with the total and next_offset", async () => {
    const body = "0123456789".repeat(100);
    const store = await withBody(body);
    const a = await recall({ store, session: SESSION, mem_id: MEM, offset: 100, max_chars: 50 });
    expect(a).toMatchObject({
      mode: "slice",
      total_chars: 1000,
      next_offset: 150,
      truncated: false,
      is_error: false,
    });
    expect(a.content.split("\n")[1]).toBe(body.slice(100, 150));
    const end = await recall({ store, session: SESSION, mem_id: MEM, offset: 990, max_chars: 50 });
    expect(end.next_offset).toBeUndefined();
    expect(end.content).toContain("end of result");
  });

  it("never splits a surrogate pair at either end", async () => {
    const body = `a${"😀".repeat(10)}`;
    const store = await withBody(body);
    const a = await recall({ store, session: SESSION, mem_id: MEM, offset: 2, max_chars: 4 });
    const slice = a.content.slice(a.content.indexOf("\n") + 1);
    expect(slice).toBe("😀😀");
    expect(a.next_offset).toBe(5);
  });

  it("gives the head when called with the mem_id alone, capped with a cut notice", async () => {
    const body = "y".repeat(120_000);
    const store = await withBody(body);
    const a = await recall({ store, session: SESSION, mem_id: MEM });
    expect(a).toMatchObject({ mode: "head", truncated: true });
    expect(a.content.length).toBeLessThanOrEqual(50_000);
    expect(a.content).toMatch(/cut at the 50,000-char cap; continue with offset=\d+/);
    const lower = await recall({ store, session: SESSION, mem_id: MEM, max_answer_chars: 2000 });
    expect(lower.content.length).toBeLessThanOrEqual(2000);
  });

  it("answers an offset past the end as a model mistake", async () => {
    const store = await withBody("short");
    expect(await recall({ store, session: SESSION, mem_id: MEM, offset: 99 })).toMatchObject({
      is_error: true,
      total_chars: 5,
    });
  });
});

describe("recall by json_path", () => {
  const doc = JSON.stringify({
    items: [
      { id: 1, price: 9.5, tags: ["a"] },
      { id: 2, price: 3 },
      { id: 3, price: 12 },
      { id: 4, price: 7.25 },
    ],
    meta: { n: 4 },
  });

  it("accepts dotted paths and $-paths alike", async () => {
    const store = await withBody(doc);
    for (const path of ["items[3].price", "$.items[3].price", ".items[3].price"]) {
      const a = await recall({ store, session: SESSION, mem_id: MEM, json_path: path });
      expect(a).toMatchObject({ is_error: false, mode: "json_path", matches: 1 });
      expect(a.content).toContain("= 7.25");
    }
  });

  it("evaluates filters in safe mode (no eval)", async () => {
    const store = await withBody(doc);
    const a = await recall({
      store,
      session: SESSION,
      mem_id: MEM,
      json_path: "$.items[?(@.price > 8)].id",
    });
    expect(a.matches).toBe(2);
    expect(a.content).toMatch(/= 1\n.*= 3$/s);
    const evil = await recall({
      store,
      session: SESSION,
      mem_id: MEM,
      json_path: "$.items[?(@.constructor.constructor('return process')())]",
    });
    expect(evil.content).not.toContain("[object process]");
  });

  it("answers bad paths, no matches and non-JSON bodies helpfully", async () => {
    const store = await withBody(doc);
    expect(
      await recall({ store, session: SESSION, mem_id: MEM, json_path: "$.nothing" }),
    ).toMatchObject({ is_error: false, matches: 0 });
    const text = await withBody("plain text");
    const a = await recall({ store: text, session: SESSION, mem_id: MEM, json_path: "$.a" });
    expect(a).toMatchObject({ is_error: true });
    expect(a.content).toContain("not JSON");
  });
});

describe("recall mistakes and scoping", () => {
  it("answers an unknown mem_id, and another session's or tenant's, with the same is_error text", async () => {
    const store = await withBody("secret");
    const unknown = await recall({
      store,
      session: SESSION,
      mem_id: "trm_ffffffffffffffffffffffff",
    });
    const otherSession = await recall({
      store,
      session: { tenant: "t", session: "other" },
      mem_id: MEM,
    });
    const otherTenant = await recall({
      store,
      session: { tenant: "u", session: "s" },
      mem_id: MEM,
    });
    expect(unknown.is_error).toBe(true);
    expect(otherSession.content).toBe(
      otherTenant.content.replace("trm_ffffffffffffffffffffffff", MEM),
    );
    expect(otherSession.content).toBe(unknown.content.replace("trm_ffffffffffffffffffffffff", MEM));
  });

  it("turns wrong argument types into is_error answers, never exceptions", async () => {
    const store = await withBody("abc");
    const bad: Record<string, unknown>[] = [
      {},
      { mem_id: 5 },
      { mem_id: MEM, offset: -1 },
      { mem_id: MEM, offset: 1.5 },
      { mem_id: MEM, max_chars: 0 },
      { mem_id: MEM, query: "" },
      { mem_id: MEM, query: 7 },
      { mem_id: MEM, json_path: [] },
      { mem_id: MEM, query: "a", json_path: "$" },
      { mem_id: MEM, window: "wide" },
    ];
    for (const args of bad) {
      const a = await recall({ store, session: SESSION, ...(args as { mem_id: unknown }) });
      expect(a.is_error, JSON.stringify(args)).toBe(true);
      expect(a.mode).toBe("error");
    }
  });

  it("honours the recall mode", async () => {
    const store = await withBody('{"a":1}');
    expect(
      (await recall({ store, session: SESSION, mem_id: MEM, json_path: "a", mode: "window" }))
        .is_error,
    ).toBe(true);
    expect(
      (await recall({ store, session: SESSION, mem_id: MEM, query: "a", mode: "structural" }))
        .is_error,
    ).toBe(true);
    expect(
      (await recall({ store, session: SESSION, mem_id: MEM, offset: 0, mode: "structural" }))
        .is_error,
    ).toBe(false);
  });

  it("counts successful recalls, and a ledger fault is a storage error (not a model mistake)", async () => {
    const store = await withBody("abc");
    await recall({ store, session: SESSION, mem_id: MEM });
    await recall({ store, session: SESSION, mem_id: "trm_nope" });
    expect((await store.describeSession(SESSION))?.recalls).toBe(1);
    await expect(
      recall({ store: faultyStore(store, { getBody: true }), session: SESSION, mem_id: MEM }),
    ).rejects.toMatchObject({ type: "storage_error" });
    const counted = await recall({
      store: faultyStore(store, { noteRecall: true }),
      session: SESSION,
      mem_id: MEM,
    });
    expect(counted.is_error).toBe(false);
  });
});

describe("recallToolDefinition", () => {
  it("renders each format's tool schema", () => {
    expect(recallToolDefinition("anthropic")).toMatchObject({
      name: "recall_tool_result",
      input_schema: { type: "object", required: ["mem_id"] },
    });
    expect(recallToolDefinition("openai-chat")).toMatchObject({
      type: "function",
      function: { name: "recall_tool_result", parameters: { required: ["mem_id"] } },
    });
    expect(recallToolDefinition("openai-responses")).toMatchObject({
      type: "function",
      name: "recall_tool_result",
      strict: false,
    });
  });

  it("offers the arguments of the mode, in stable bytes", () => {
    expect(Object.keys(recallInputSchema("both").properties)).toEqual([
      "mem_id",
      "query",
      "queries",
      "window",
      "json_path",
      "json_paths",
      "offset",
      "max_chars",
    ]);
    expect(Object.keys(recallInputSchema("window").properties)).toEqual([
      "mem_id",
      "query",
      "queries",
      "window",
      "offset",
      "max_chars",
    ]);
    expect(Object.keys(recallInputSchema("structural").properties)).toEqual([
      "mem_id",
      "json_path",
      "json_paths",
      "offset",
      "max_chars",
    ]);
    expect(JSON.stringify(recallToolDefinition())).toBe(JSON.stringify(recallToolDefinition()));
  });
});
