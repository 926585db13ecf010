/**
 * A local stand-in for the Anthropic Messages API, so the examples run without a key and without the
 * network: a scripted model on 127.0.0.1 that answers POST …/v1/messages (buffered or streamed) as a
 * tool-using model would. It is deterministic:
 *
 * - a new question, with tools declared: it calls the first tool (its required inputs filled in: "A" for a
 *   string, 1 for a number, true for a boolean);
 * - a tool result that is an edge-offload stub (it names a `trm_…` mem_id) while `recall_tool_result` is
 *   declared: it recalls the head of that body, once;
 * - otherwise: a short text answer saying what it read.
 *
 * `node examples/fake-anthropic.mjs [port]` runs it alone and prints its URL; the examples import
 * `startFakeAnthropic()` and start it themselves when ANTHROPIC_API_KEY is not set. Plain JavaScript, no
 * dependencies.
 */
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";

const MEM_ID = /trm_[0-9a-f]{24}/;

/** The text a tool_result block carries (a string, or text blocks). */
function resultText(block) {
  if (typeof block.content === "string") return block.content;
  if (Array.isArray(block.content))
    return block.content.map((b) => (b.type === "text" ? b.text : "")).join("\n");
  return "";
}

/** What the model says next: a list of content blocks and a stop reason. */
export function reply(request) {
  const messages = Array.isArray(request.messages) ? request.messages : [];
  const tools = Array.isArray(request.tools) ? request.tools : [];
  const last = messages.at(-1);
  const blocks = last && Array.isArray(last.content) ? last.content : [];
  const results = blocks.filter((b) => b.type === "tool_result");
  const recall = tools.find((t) => t.name === "recall_tool_result");
  if (results.length > 0) {
    const previous = messages.at(-2);
    const recalled = Array.isArray(previous?.content)
      ? previous.content.some((b) => b.type === "tool_use" && b.name === "recall_tool_result")
      : false;
    const stub = results.map(resultText).find((t) => MEM_ID.test(t));
    if (stub !== undefined && recall !== undefined && !recalled) {
      const memId = MEM_ID.exec(stub)[0];
      return {
        content: [
          {
            type: "tool_use",
            id: `toolu_fake_recall_${messages.length}`,
            name: "recall_tool_result",
            input: { mem_id: memId, offset: 0, max_chars: 120 },
          },
        ],
        stop_reason: "tool_use",
      };
    }
    const text = results.map(resultText).join("\n");
    const said = recalled
      ? `I read ${text.length} characters back with recall_tool_result, and that answers it.`
      : `I read ${text.length} characters of tool output.`;
    return { content: [{ type: "text", text: said }], stop_reason: "end_turn" };
  }
  const tool = tools.find((t) => t.name !== "recall_tool_result");
  if (tool !== undefined) {
    const schema = tool.input_schema ?? {};
    const input = {};
    for (const name of schema.required ?? []) {
      const type = schema.properties?.[name]?.type;
      input[name] = type === "number" || type === "integer" ? 1 : type === "boolean" ? true : "A";
    }
    return {
      content: [
        { type: "text", text: `Let me call ${tool.name}.` },
        { type: "tool_use", id: `toolu_fake_${messages.length}`, name: tool.name, input },
      ],
      stop_reason: "tool_use",
    };
  }
  return {
    content: [{ type: "text", text: "Hello from the fake model." }],
    stop_reason: "end_turn",
  };
}

function message(request, body, id) {
  const out = reply(request);
  return {
    id,
    type: "message",
    role: "assistant",
    model: request.model ?? "claude-sonnet-4-6",
    content: out.content,
    stop_reason: out.stop_reason,
    stop_sequence: null,
    // About four characters a token: enough for the reports' billed figures to mean something.
    usage: { input_tokens: Math.ceil(body.length / 4), output_tokens: 20 },
  };
}

/** The same message as Anthropic's event stream. */
function events(m) {
  const ev = (type, data) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const out = [
    ev("message_start", {
      message: { ...m, content: [], stop_reason: null, usage: { ...m.usage, output_tokens: 1 } },
    }),
  ];
  m.content.forEach((block, index) => {
    if (block.type === "text") {
      out.push(ev("content_block_start", { index, content_block: { type: "text", text: "" } }));
      for (const piece of block.text.match(/.{1,16}/gs) ?? [])
        out.push(ev("content_block_delta", { index, delta: { type: "text_delta", text: piece } }));
    } else {
      out.push(
        ev("content_block_start", { index, content_block: { ...block, input: {} } }),
        ev("content_block_delta", {
          index,
          delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) },
        }),
      );
    }
    out.push(ev("content_block_stop", { index }));
  });
  out.push(
    ev("message_delta", {
      delta: { stop_reason: m.stop_reason, stop_sequence: null },
      usage: { output_tokens: m.usage.output_tokens },
    }),
    ev("message_stop", {}),
  );
  return out;
}

/**
 * Starts the fake on 127.0.0.1 (`port` 0: any free one). `url` is its base, as ANTHROPIC_BASE_URL or the
 * SDK's `baseURL` takes it; `requests` holds every request body it received, parsed.
 */
export async function startFakeAnthropic(port = 0) {
  const requests = [];
  let n = 0;
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      if (req.method !== "POST" || !/\/v1\/messages$/.test(new URL(req.url, "http://x").pathname)) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            type: "error",
            error: { type: "not_found_error", message: "the fake knows /v1/messages only" },
          }),
        );
        return;
      }
      let request;
      try {
        request = JSON.parse(body);
      } catch {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            type: "error",
            error: { type: "invalid_request_error", message: "not JSON" },
          }),
        );
        return;
      }
      requests.push(request);
      const m = message(request, body, `msg_fake_${++n}`);
      if (request.stream === true) {
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
        res.end(events(m).join(""));
      } else {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(m));
      }
    });
  });
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const fake = await startFakeAnthropic(Number(process.argv[2] ?? 0));
  console.log(`fake Anthropic API on ${fake.url} (ANTHROPIC_BASE_URL=${fake.url})`);
}
