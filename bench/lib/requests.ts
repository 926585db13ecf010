/** Requests the latency benches send (plain data, no I/O: also imported inside workerd). */

function catalog(items: number): string {
  return JSON.stringify({
    items: Array.from({ length: items }, (_, i) => ({ id: i, name: `item-${i}`, price: i * 1.5 })),
  });
}

/** ~82 KB: one large result (offloaded on its first sight) and 28 small ones, the last hot. */
export function latencyRequest(): string {
  const messages: unknown[] = [{ role: "user", content: "Check the catalog, then the services." }];
  const results: [string, string][] = [["dump", catalog(1400)]];
  for (let i = 0; i < 28; i++)
    results.push(["status", `service-${i}: ok\n${"uptime 99.9%, latency p50 12 ms\n".repeat(12)}`]);
  results.forEach(([name, content], i) => {
    messages.push({
      role: "assistant",
      content: [{ type: "tool_use", id: `toolu_${i}`, name, input: { i } }],
    });
    messages.push({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: `toolu_${i}`, content }],
    });
  });
  return JSON.stringify({ model: "claude-opus-4-5", max_tokens: 256, messages });
}

/** Ten small turns: a conversation with nothing to offload. */
export function smallTurns(): unknown[] {
  const messages: unknown[] = [{ role: "user", content: "Check the services." }];
  for (let i = 0; i < 10; i++)
    messages.push(
      {
        role: "assistant",
        content: [{ type: "tool_use", id: `t${i}`, name: "status", input: { i } }],
      },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: `t${i}`, content: `service ${i}: ok` }],
      },
    );
  return messages;
}
