/**
 * edge-offload in process: the official Anthropic SDK with `offloadFetch`, an agent loop over one tool that
 * returns a large export, and the session's report at the end. Nothing to deploy: the store is a
 * `MemoryStore`, and the recall hops the model asks for are answered here, inside the SDK's call.
 *
 *   node examples/in-process/agent.ts             # against a local fake model (no key, no network)
 *   ANTHROPIC_API_KEY=sk-ant-… node examples/in-process/agent.ts    # against Anthropic
 */
import Anthropic from "@anthropic-ai/sdk";
import { MemoryStore, type OffloadCallReport, offloadFetch, sessionReport } from "edge-offload";
import { startFakeAnthropic } from "../fake-anthropic.mjs";

/** The tool: every order of a customer, about 90 KB of JSON (the kind of output worth parking). */
function exportOrders(customer: string) {
  return {
    customer,
    orders: Array.from({ length: 800 }, (_, i) => ({
      id: `ORD-${String(i).padStart(5, "0")}`,
      total: Math.round(((i * 7919) % 100_000) / 10) / 10,
      items: (i % 7) + 1,
      status: i % 11 === 0 ? "refunded" : "shipped",
    })),
  };
}

const fake = process.env.ANTHROPIC_API_KEY ? null : await startFakeAnthropic();
if (fake !== null) console.log("model: a local fake (set ANTHROPIC_API_KEY to use Anthropic)");

const store = new MemoryStore();
const reports: OffloadCallReport[] = [];
const anthropic = new Anthropic({
  apiKey: process.env.ANTHROPIC_API_KEY ?? "sk-ant-not-needed-by-the-fake",
  ...(fake === null ? {} : { baseURL: fake.url }),
  fetch: offloadFetch({
    store,
    session: "orders-chat",
    secret: process.env.OFFLOAD_SECRET ?? "an-example-secret-of-16-chars-or-more",
    config: { tool_result_compaction_enabled: true, tool_result_offload_enabled: true },
    onReport: (report) => reports.push(report),
  }),
});

const tools: Anthropic.Messages.Tool[] = [
  {
    name: "export_orders",
    description: "Export every order of a customer as JSON.",
    input_schema: {
      type: "object",
      properties: { customer: { type: "string" } },
      required: ["customer"],
    },
  },
];
const messages: Anthropic.Messages.MessageParam[] = [
  { role: "user", content: "Which of customer A's orders is the largest?" },
];

for (let call = 1; call <= 5; call++) {
  const answer = await anthropic.messages.create({
    model: "claude-sonnet-4-6",
    max_tokens: 1024,
    tools,
    messages,
  });
  const s = reports.at(-1)!.summary;
  console.log(
    `call ${call}: ${s.results} tool results, ${s.offloaded} offloaded, ${s.proxy?.hops ?? 0} recall hops answered here, ~${s.tokens_before} → ${s.tokens_after} prompt tokens`,
  );
  messages.push({ role: "assistant", content: answer.content });
  const uses = answer.content.filter((b) => b.type === "tool_use");
  if (uses.length === 0) {
    const text = answer.content.map((b) => (b.type === "text" ? b.text : "")).join("");
    console.log(`answer: ${text}`);
    break;
  }
  messages.push({
    role: "user",
    content: uses.map((u) => ({
      type: "tool_result" as const,
      tool_use_id: u.id,
      content: JSON.stringify(exportOrders(String((u.input as { customer?: string }).customer))),
    })),
  });
}

// What the session saved, and why each result was decided as it was (the report route's JSON).
const report = await sessionReport({ store, session: "orders-chat" });
console.log(
  `session ${report.session}: ${report.mode}, ${report.totals.calls} calls, ${report.totals.offloaded} offloaded, saved ~$${report.totals.saved_usd.toFixed(4)}`,
);
for (const d of report.last_turn?.decisions ?? [])
  console.log(`  ${d.tool_name} ${d.tool_use_id}: ${d.action} (${d.reason})`);
await fake?.close();
