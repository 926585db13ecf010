// Which results of a tool named recall_tool_result are recall answers: only those whose arguments name a mem_id
// this session issued. Anything else (a client's own tool of that name) is an ordinary result, so its text is
// either sent or durably stored: a marker for a body nobody stored would lose it.
import { describe, expect, it } from "vitest";
import { compact } from "../../src/core/compact.ts";
import { RECALL_TOOL_NAME } from "../../src/core/recall-tool.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { KITS, type Kit } from "../support/formats.ts";
import { faultyStore, jsonBody, textBody } from "../support/requests.ts";

const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };
const SECRET = "a-test-secret-0123456789";
const MEM = /trm_[0-9a-f]{24}/g;

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  return (content as { text?: string }[]).map((p) => p.text ?? "").join("\n");
}

async function run(kit: Kit, store: MemoryStore | ReturnType<typeof faultyStore>, request: object) {
  const out = await compact({
    format: kit.format,
    request: JSON.stringify(request),
    session: "answers",
    store,
    config: ON,
    secret: SECRET,
  });
  return { out, results: kit.results(JSON.parse(out.request as string)) };
}

describe.each(KITS.map((k) => [k.format, k] as const))("%s: recall answers", (_f, kit) => {
  const own = textBody(61_300);

  it.each([
    ["no mem_id", { query: "x" }],
    ["a mem_id never issued", { mem_id: "trm_0123456789abcdef01234567", query: "x" }],
    ["a mem_id that is not one", { mem_id: 42 }],
  ])(
    "a client's own tool of that name with %s is an ordinary result: nothing lost",
    async (_w, input) => {
      const store = new MemoryStore();
      const request = kit.conversation(
        [
          { id: "r1", name: RECALL_TOOL_NAME, input, result: own },
          { id: "t2", result: "ok" },
        ],
        { model: kit.model },
      );
      const { out, results } = await run(kit, store, request);
      const sent = textOf(results[0]!.content);
      expect(out.decisions[0]).toMatchObject({ tool_use_id: "r1", action: "offloaded" });
      const memIds = sent.match(MEM) ?? [];
      expect(memIds.length).toBeGreaterThan(0);
      expect(
        (await store.getBody({ tenant: "default", session: "answers" }, memIds[0]!))?.body,
      ).toBe(own);
    },
  );

  it("an answer naming a mem_id this session issued becomes a marker, whether its stub is in the request or not", async () => {
    const store = new MemoryStore();
    const first = kit.conversation(
      [
        { id: "t1", result: jsonBody(80_000) },
        { id: "t2", result: "ok" },
      ],
      { model: kit.model },
    );
    const decided = await run(kit, store, first);
    const memId = decided.out.decisions[0]!.mem_id!;
    expect(memId).toMatch(/^trm_/);
    const answer = textBody(9_000);
    const recallStep = {
      id: "r1",
      name: RECALL_TOOL_NAME,
      input: { mem_id: memId, query: "line" },
      result: answer,
    };
    // With the stub in the request (its record names the mem_id) …
    const withStub = kit.addTurn(kit.addTurn(first, recallStep), { id: "t3", result: "ok" });
    const a = await run(kit, store, withStub);
    const marker = a.out.decisions.find((d) => d.tool_use_id === "r1")!;
    expect(marker).toMatchObject({ action: "compacted", mem_id: memId });
    expect(textOf(a.results.find((r) => r.id === "r1")!.content)).toContain(
      "recall answer of 9,000",
    );
    // … and in a session whose history no longer shows it (the ledger answers).
    const alone = kit.conversation([recallStep, { id: "t3", result: "ok" }], { model: kit.model });
    const b = await run(kit, store, { ...alone });
    expect(b.out.decisions.find((d) => d.tool_use_id === "r1")).toMatchObject({
      action: "compacted",
      mem_id: memId,
    });
  });

  it("a ledger that cannot say keeps the answer full and undecided, with a problem", async () => {
    const inner = new MemoryStore();
    const store = faultyStore(inner, { hasBody: true, getBody: true });
    const request = kit.conversation(
      [
        {
          id: "r1",
          name: RECALL_TOOL_NAME,
          input: { mem_id: "trm_0123456789abcdef01234567" },
          result: textBody(9_000),
        },
        { id: "t2", result: "ok" },
      ],
      { model: kit.model },
    );
    const { out, results } = await run(kit, store, request);
    expect(textOf(results[0]!.content)).toBe(textBody(9_000));
    expect(out.decisions[0]).toMatchObject({ action: "kept", sticky: false });
    expect(out.report.errors.map((e) => e.code)).toContain("storage_error");
    const described = await inner.describeSession({ tenant: "default", session: "answers" });
    expect(described?.records.filter((r) => r.tool_use_id === "r1") ?? []).toEqual([]);
  });
});
