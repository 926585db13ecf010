/**
 * Where the Anthropic adapter declares the recall tool mid-conversation (src/core/formats/anthropic.ts,
 * `declareRecallToolInline`): a system message right after the run of user messages holding a stub, where
 * the API takes one (it follows a user turn and ends the array or precedes an assistant turn).
 */
import { describe, expect, it } from "vitest";
import { compact, splice } from "../../src/core/compact.ts";
import { anthropicAdapter } from "../../src/core/formats/anthropic.ts";
import { parseJsonSpans } from "../../src/core/json/scan.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { conversation, jsonBody, ON } from "../support/requests.ts";

type Msg = { role: string; content: unknown; clear_at?: string };

function declared(messages: Msg[], after: number): Msg[] | null {
  const raw = JSON.stringify({ model: "claude-opus-5-5", max_tokens: 8, messages });
  const edit = anthropicAdapter.declareRecallToolInline!(raw, parseJsonSpans(raw), "both", after);
  return edit === null ? null : (JSON.parse(splice(raw, [edit])) as { messages: Msg[] }).messages;
}

const addition = {
  type: "tool_addition",
  tool: { type: "tool_definition", definition: { name: "recall_tool_result" } },
};
const user = (text: string): Msg => ({ role: "user", content: [{ type: "text", text }] });
const assistant = (text: string): Msg => ({ role: "assistant", content: [{ type: "text", text }] });

describe("the recall tool declared mid-conversation", () => {
  it("goes after the run of user messages: at the end, or before the next assistant message", () => {
    const atEnd = declared([user("a"), assistant("b"), user("c"), user("d")], 2)!;
    expect(atEnd.map((m) => m.role)).toEqual(["user", "assistant", "user", "user", "system"]);
    expect(atEnd[4]!.content).toMatchObject([addition]);
    const before = declared([user("a"), assistant("b"), user("c"), assistant("e")], 2)!;
    expect(before.map((m) => m.role)).toEqual(["user", "assistant", "user", "system", "assistant"]);
  });

  it("ends the client's own system message there rather than add a second one", () => {
    const mine = { type: "text", text: "reminder" };
    const merged = declared([user("a"), { role: "system", content: [mine] }, assistant("b")], 0)!;
    expect(merged.map((m) => m.role)).toEqual(["user", "system", "assistant"]);
    expect(merged[1]!.content).toMatchObject([mine, addition]);
    // a string content is left as the client wrote it
    expect(declared([user("a"), { role: "system", content: "reminder" }], 0)).toBeNull();
  });

  it("finds no place after a message that is not the user's, or in a system message that clears", () => {
    expect(declared([user("a"), assistant("b")], 1)).toBeNull();
    const x = [{ type: "text", text: "x" }];
    expect(
      declared([user("a"), { role: "system", content: x, clear_at: "next_user_message" }], 0),
    ).toBeNull();
    expect(
      declared([user("a"), { role: "system", content: x, clear_at: "never" }], 0),
    ).not.toBeNull();
  });
});

describe("the gate's price of the declaration", () => {
  it("leaves out the rewrite only where the tool can go inline after the fresh results", async () => {
    const price = async (trailing: Msg[]) => {
      const req = conversation([{ id: "big", result: jsonBody(80_000) }], {
        model: "claude-opus-4-8",
        system: "You are a careful agent. ".repeat(2_000),
      }) as { messages: Msg[] };
      const last = req.messages.at(-1)!.content as Record<string, unknown>[];
      last[last.length - 1] = { ...last[last.length - 1], cache_control: { type: "ephemeral" } };
      req.messages.push(...trailing);
      const out = await compact({
        request: JSON.stringify(req),
        session: `price-${trailing.length}`,
        store: new MemoryStore(),
        config: ON,
        sendsBetas: true,
      });
      return out.decisions.at(-1)!.gate!.tool_declaration_cost_usd;
    };
    const inline = await price([]);
    // a reminder as a string: the tool cannot join it, so it would go in `tools`, rewriting the prompt
    const rewrite = await price([{ role: "system", content: "reminder" }]);
    expect(rewrite).toBeGreaterThan(inline * 5);
  });
});
