/**
 * A small chat client for the example agent: sends one message over the Agents SDK's WebSocket chat
 * protocol (what `useAgentChat` speaks) and prints the streamed answer as it arrives, then what
 * edge-offload did for the conversation. Node 22+ (its global WebSocket), no dependencies.
 *
 *   node examples/agent-chat/client.mjs "What is low in warehouse A?"
 *   node examples/agent-chat/client.mjs --url http://127.0.0.1:8787 --name chat-2 "Anything else?"
 *
 * The conversation (`--name`, one agent object each) keeps its history in the agent: each message is
 * sent with the history the agent holds, as the React hook does.
 */
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    url: { type: "string", default: process.env.AGENT_URL ?? "http://127.0.0.1:8787" },
    name: { type: "string", default: "chat-1" },
  },
});
const text = positionals.join(" ").trim();
if (text === "") {
  console.error('usage: node examples/agent-chat/client.mjs [--url URL] [--name NAME] "message"');
  process.exit(2);
}

/**
 * Sends `text` to the conversation `name` of the agent at `url` and writes the answer to `out` as it
 * streams; resolves with edge-offload's report of the conversation (null before any model call).
 */
async function chat(url, name, text, out = process.stdout) {
  const base = `${url.replace(/\/$/, "")}/agents/chat-agent/${encodeURIComponent(name)}`;
  const history = await (await fetch(`${base}/get-messages`)).json();
  const id = `req-${Date.now().toString(36)}`;
  const message = { id: `user-${id}`, role: "user", parts: [{ type: "text", text }] };
  const socket = new WebSocket(base.replace(/^http/, "ws"));
  let line = "";
  await new Promise((resolve, reject) => {
    socket.addEventListener("open", () =>
      socket.send(
        JSON.stringify({
          type: "cf_agent_use_chat_request",
          id,
          init: {
            method: "POST",
            body: JSON.stringify({ messages: [...history, message], trigger: "submit-message" }),
          },
        }),
      ),
    );
    socket.addEventListener("message", (event) => {
      const frame = JSON.parse(String(event.data));
      if (frame.type !== "cf_agent_use_chat_response" || frame.id !== id) return;
      if (frame.error) return reject(new Error(frame.body || "the agent's turn failed"));
      if (frame.body?.trim()) {
        const chunk = JSON.parse(frame.body);
        if (chunk.type === "text-delta") {
          line += chunk.delta;
          out.write(chunk.delta);
        } else if (chunk.type === "tool-input-available") {
          out.write(
            `${line === "" ? "" : "\n"}[tool ${chunk.toolName} ${JSON.stringify(chunk.input)}]\n`,
          );
          line = "";
        }
      }
      if (frame.done) resolve();
    });
    socket.addEventListener("error", () => reject(new Error(`cannot reach the agent at ${base}`)));
  });
  socket.close();
  out.write("\n");
  const report = await fetch(`${base}/offload-report`);
  return report.ok ? await report.json() : null;
}

const report = await chat(values.url, values.name, text);
if (report !== null) {
  const t = report.totals;
  console.log(
    `edge-offload: ${t.calls} model calls, ${t.offloaded} offloaded, ${t.recalls} recalled, saved ~$${t.saved_usd.toFixed(4)} (${report.mode})`,
  );
}
