/** Several questions in one recall call, answers sized to what was asked, one recall counted per call. */
import { describe, expect, it } from "vitest";
import { MAX_QUESTIONS, QUERY_ANSWER_CHARS, recallMany } from "../../src/core/recall-many.ts";
import { recallInputSchema, recallToolDefinition } from "../../src/core/recall-tool.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { putBody } from "../support/records.ts";

const SESSION = { tenant: "t", session: "s" };
const MEM = "trm_00000000000000000000abcd";

/** A store holding one body, and a count of how often it was read. */
async function withBody(body: string) {
  const store = new MemoryStore();
  const meta = { mem_id: MEM, tool_use_id: "t1", tool_name: "x", outline: "", turn: 1 };
  await putBody(store, SESSION, body, { ...meta, chars: body.length, tokens: 1, kind: "text" });
  let reads = 0;
  const getBody = store.getBody.bind(store);
  store.getBody = (...a) => {
    reads++;
    return getBody(...a);
  };
  return { store, reads: () => reads };
}
const recalls = async (store: MemoryStore) => (await store.describeSession(SESSION))?.recalls ?? 0;

describe("queries in one call", () => {
  const body = `head ORD-1001 ${"x".repeat(2000)} SHA 9fb8e8f4c1 ${"y".repeat(2000)} ORD-1002 tail`;

  it("answers each query in turn, reads the body once and counts one recall", async () => {
    const { store, reads } = await withBody(body);
    const a = await recallMany({
      store,
      session: SESSION,
      mem_id: MEM,
      queries: ["ORD-1001", "9fb8e8f4c1", "nowhere", "ORD-1001"],
      window: 20,
    });
    expect(a).toMatchObject({ is_error: false, mode: "query", total_chars: body.length });
    expect(a.matches).toBe(2);
    expect(a.content.split("\n")[0]).toBe("3 queries, answered one by one:");
    expect(a.content).toContain('=== query 1 of 3: "ORD-1001" ===\n1 match for "ORD-1001"');
    expect(a.content).toContain('=== query 2 of 3: "9fb8e8f4c1" ===');
    expect(a.content).toContain('=== query 3 of 3: "nowhere" ===\nNo match for "nowhere"');
    expect(reads()).toBe(1);
    expect(await recalls(store)).toBe(1);
  });

  it("answers several JSON paths", async () => {
    const { store } = await withBody(JSON.stringify({ a: { b: 1 }, c: [1, 2, 3] }));
    const a = await recallMany({
      store,
      session: SESSION,
      mem_id: MEM,
      json_paths: ["a.b", "$.c[1]"],
    });
    expect(a.mode).toBe("json_path");
    expect(a.content).toContain("$['a']['b'] = 1");
    expect(a.content).toContain("$['c'][1] = 2");
  });

  it("shares the cap between the questions, and max_chars raises it", async () => {
    const dense = `match ${"z".repeat(1000)} `.repeat(200);
    const { store } = await withBody(dense);
    const one = await recallMany({ store, session: SESSION, mem_id: MEM, query: "match" });
    expect(one.content.length).toBeLessThanOrEqual(QUERY_ANSWER_CHARS);
    expect(one.truncated).toBe(true);
    const more = await recallMany({
      store,
      session: SESSION,
      mem_id: MEM,
      query: "match",
      max_chars: 30_000,
    });
    expect(more.content.length).toBeGreaterThan(QUERY_ANSWER_CHARS);
    expect(more.content.length).toBeLessThanOrEqual(30_000);
    const two = await recallMany({
      store,
      session: SESSION,
      mem_id: MEM,
      queries: ["match", "atch"],
      max_chars: 4000,
    });
    expect(two.content.length).toBeLessThanOrEqual(4000 + 200);
    const capped = await recallMany({
      store,
      session: SESSION,
      mem_id: MEM,
      queries: ["match", "atch", "tch"],
      max_answer_chars: 6000,
    });
    expect(capped.content.length).toBeLessThanOrEqual(6000 + 300);
  });

  it("answers a slice and the head as before", async () => {
    const { store } = await withBody(body);
    const head = await recallMany({ store, session: SESSION, mem_id: MEM });
    expect(head.mode).toBe("head");
    const slice = await recallMany({
      store,
      session: SESSION,
      mem_id: MEM,
      offset: 5,
      max_chars: 8,
    });
    expect(slice.content).toContain("ORD-1001");
  });

  it("tells the model what is wrong, once", async () => {
    const { store } = await withBody(body);
    const ask = (extra: Record<string, unknown>) =>
      recallMany({ store, session: SESSION, mem_id: MEM, ...extra });
    for (const [extra, message] of [
      [{ queries: [] }, /non-empty array/],
      [{ queries: "ORD" }, /non-empty array/],
      [{ queries: ["ok", ""] }, /non-empty array/],
      [{ queries: Array.from({ length: MAX_QUESTIONS + 1 }, (_, i) => `q${i}`) }, /at most 8/],
      [{ queries: ["a"], json_paths: ["b"] }, /either queries or json_paths/],
      [{ queries: ["a"], query: "b" }, /query cannot be combined/],
      [{ json_paths: ["a"], offset: 3 }, /offset cannot be combined/],
    ] as const) {
      const a = await ask(extra);
      expect(a.is_error, JSON.stringify(extra)).toBe(true);
      expect(a.content).toMatch(message);
    }
    const unknown = await recallMany({
      store,
      session: SESSION,
      mem_id: "trm_nope",
      queries: ["a", "b", "c"],
    });
    expect(unknown.is_error).toBe(true);
    expect(unknown.content.match(/No offloaded result/g)).toHaveLength(1);
    const window = await recallMany({
      store,
      session: SESSION,
      mem_id: MEM,
      json_paths: ["$.a"],
      mode: "window",
    });
    expect(window).toMatchObject({ is_error: true });
    expect(window.content).toMatch(/json_path is not enabled/);
    expect(await recalls(store)).toBe(0);
  });
});

describe("the declaration offers them", () => {
  it("per mode", () => {
    expect(recallInputSchema("both").properties).toHaveProperty("queries.items.type", "string");
    expect(recallInputSchema("window").properties).not.toHaveProperty("json_paths");
    expect(recallInputSchema("structural").properties).not.toHaveProperty("queries");
    // the bound is said in the description, and enforced where the call is answered (above)
    expect(recallToolDefinition("anthropic").description).toContain(
      `plural forms ask up to ${MAX_QUESTIONS} at once`,
    );
  });

  it("in few bytes: the declaration rides in every later request of the session", () => {
    // What every argument means fits one sentence (each stub repeats how to call it for its result);
    // 941 chars before issue 26's last round, whose replay measured the shorter one cheaper on every row.
    for (const mode of ["both", "window", "structural"] as const)
      for (const format of ["anthropic", "openai-chat", "openai-responses", "ai-sdk"] as const)
        expect(JSON.stringify(recallToolDefinition(format, mode)).length).toBeLessThan(700);
    const text = recallToolDefinition("anthropic", "both").description;
    for (const said of [
      "mem_id",
      "query",
      "exact substring",
      "json_path",
      "offset+max_chars",
      "head",
    ])
      expect(text).toContain(said);
    expect(recallToolDefinition("anthropic", "window").description).not.toContain("json_path");
    expect(recallToolDefinition("anthropic", "structural").description).not.toContain("query");
  });
});
