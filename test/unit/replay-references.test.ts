/** The replay's loss detector: distinctive tokens, and the counts per kind of evidence (true and false positives). */
import { describe, expect, it } from "vitest";
import { detectReferences } from "../../src/replay/references.ts";
import { distinctiveTokens, isDistinctive, tokensOf } from "../../src/replay/tokens.ts";
import type { Message, ReplaySession } from "../../src/replay/types.ts";

let n = 0;
function session(messages: Message[], extra: Partial<ReplaySession> = {}): ReplaySession {
  return {
    id: `s${n++}`,
    system: "You are a support agent.",
    messages,
    calls: messages.flatMap((m, i) => (m.role === "assistant" ? [i] : [])),
    ...extra,
  };
}
const call = (id: string, input: Record<string, unknown> = {}): Message => ({
  role: "assistant",
  content: [{ type: "tool_use", id, name: "lookup", input }],
});
const result = (id: string, content: string): Message => ({
  role: "user",
  content: [{ type: "tool_result", tool_use_id: id, content }],
});
const say = (text: string): Message => ({ role: "assistant", content: [{ type: "text", text }] });

describe("distinctive tokens", () => {
  it.each([
    ["ORD-48213", true],
    ["src/a/b.ts", true],
    ["9fb8e8f4c1", true],
    ["getUserById", true],
    ["order_id", true],
    ["48213", true],
    ["3.14159", true],
    ["2024", false], // a calendar year
    ["10000", false], // one significant digit
    ["Python", false], // capitalised word, not mixed case
    ["SUCCESS", false],
    ["hello", false],
    ["a1b2", false], // too short
    ["x".repeat(121), false],
  ])("%s → %s", (token, expected) => expect(isDistinctive(token)).toBe(expected));

  it("trims sentence punctuation and splits on everything else", () => {
    expect(tokensOf('See `src/a/b.ts`. Order "ORD-48213", done.')).toEqual([
      "See",
      "src/a/b.ts",
      "Order",
      "ORD-48213",
      "done",
    ]);
    expect(distinctiveTokens("sha 9fb8e8f4c1 in 2024, path ./src/a/b.ts/")).toEqual([
      "9fb8e8f4c1",
      "src/a/b.ts",
    ]);
  });
});

describe("token references", () => {
  const tokens = (s: ReplaySession) =>
    detectReferences(s)
      .filter((r) => r.kind === "token")
      .map((r) => [r.turn, r.quote, r.sources]);

  it("counts a SHA, an order id and a path carried from one result into a later message", () => {
    const s = session([
      { role: "user", content: "What was my last order, and which commit touched the parser?" },
      call("t1"),
      result("t1", '{"orders":[{"id":"ORD-48213","total":129.5}],"commit":"9fb8e8f4c1"}'),
      call("t2", { order: "ORD-48213" }),
      result("t2", "modified: src/parser/scan.ts (+12 -3)"),
      say("Commit 9fb8e8f4c1 changed parser/scan.ts for your order."),
    ]);
    expect(tokens(s)).toEqual([
      [3, "ORD-48213", ["t1"]],
      [5, "9fb8e8f4c1", ["t1"]],
      [5, "parser/scan.ts", ["t2"]],
    ]);
  });

  it("does not count a token the task, the system prompt or an earlier assistant message already wrote", () => {
    const s = session(
      [
        { role: "user", content: "Cancel order ORD-48213 please." },
        call("t1", { path: "src/a/b.ts" }),
        result("t1", "ORD-48213 cancelled; see src/a/b.ts and TICKET-7788"),
        say("Done: ORD-48213 is cancelled (src/a/b.ts). TICKET-7788 tracks it."),
      ],
      { system: "Tickets look like TICKET-7788." },
    );
    expect(tokens(s)).toEqual([]);
  });

  it("does not count a token found in two results, or a common number", () => {
    const s = session([
      { role: "user", content: "Compare the two reports." },
      call("t1"),
      result("t1", "region eu-west-3: 2024 totals, build 7f3a2c9d"),
      call("t2"),
      result("t2", "region eu-west-3: 2024 totals, build 11aa22bb"),
      say("Both cover eu-west-3 for 2024; the first is build 7f3a2c9d."),
    ]);
    expect(tokens(s)).toEqual([[5, "7f3a2c9d", ["t1"]]]);
  });

  it("does not count a token only a later result holds", () => {
    const s = session([
      { role: "user", content: "go" },
      say("I will create ORD-99001 now."),
      call("t1"),
      result("t1", "created ORD-99001"),
    ]);
    expect(tokens(s)).toEqual([]);
  });

  it("keeps one reference per message and source, of the best kind", () => {
    const quote = "a-long-unique-line-of-output-XYZ-123456";
    const s = session([
      { role: "user", content: "go" },
      call("t1"),
      result("t1", `${quote} and ORD-55555`),
      say(`Found ${quote}, order ORD-55555.`),
    ]);
    const refs = detectReferences(s);
    expect(refs.map((r) => r.kind)).toEqual(["quote"]);
  });
});
