/**
 * The README quick start's turn: an Anthropic request whose first tool result is ~65 KB of JSON, settled (the
 * model answered after it). Plain JavaScript: the portable checks run it under Node, Deno and Bun.
 */
export const CATALOG = JSON.stringify({
  items: Array.from({ length: 1500 }, (_, i) => ({ id: i, name: `item-${i}`, price: i * 1.5 })),
});

export function catalogTurn(extra = []) {
  return {
    model: "claude-opus-4-5",
    max_tokens: 1024,
    messages: [
      { role: "user", content: "Load the catalog, then check the status." },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "toolu_1", name: "dump", input: {} }],
      },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "toolu_1", content: CATALOG }],
      },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "toolu_2", name: "status", input: {} }],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_2", content: "ok" }] },
      ...extra,
    ],
  };
}
