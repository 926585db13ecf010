/**
 * Chat Completions (`POST /chat/completions`). Our call is a `tool_calls[]` entry of function
 * recall_tool_result; a hop appends the assistant message (its content and every tool call) and one
 * `role:"tool"` message per call right after it, as the API requires. The client gets one
 * completion: the first hop's id and `created`, the hops' text joined, the last hop's client tool
 * calls and finish reason, and the usage summed. Only the first choice is handled (`n` > 1 is not
 * supported: other choices pass as they are).
 */
import { getMember, type JsonNode, parseJsonSpans } from "../core/json/scan.ts";
import { RECALL_TOOL_NAME } from "../core/recall-tool.ts";
import type { Answer, Dialect, Hop, MemoInput } from "./dialect.ts";
import { appendItems, arrayMember, type Edit, insertAfter, memberString } from "./json-edit.ts";
import { callsOf, inspect, merge, messageOf, openaiErrorBody } from "./openai-chat-answer.ts";
import { ChatStream } from "./openai-chat-stream.ts";
import type { ProxyMemo, RememberedCall } from "./port.ts";
import type { RecallResult } from "./recalls.ts";

function recallCall(call: RememberedCall): string {
  return JSON.stringify({
    id: call.id,
    type: "function",
    function: { name: RECALL_TOOL_NAME, arguments: call.arguments },
  });
}

function toolMessage(r: RecallResult): string {
  return JSON.stringify({ role: "tool", tool_call_id: r.id, content: r.content });
}

/**
 * The assistant message as a request takes it (a response's message carries output-only fields).
 */
function assistantMessage(answer: Answer): string {
  const m = messageOf(answer);
  const content = typeof m.content === "string" && m.content !== "" ? m.content : null;
  return JSON.stringify({ role: "assistant", content, tool_calls: callsOf(m) });
}

function nextRequest(request: string, hops: readonly Hop[]): string {
  const messages = arrayMember(parseJsonSpans(request), "messages")!;
  const edit = appendItems(
    messages,
    hops.flatMap((h) => [assistantMessage(h.answer), ...h.results.map(toolMessage)]),
  );
  return request.slice(0, edit.start) + edit.text + request.slice(edit.end);
}

function memos(input: MemoInput): ProxyMemo[] {
  if (input.ending !== "mixed") return [];
  return [
    {
      kind: "recall",
      format: "openai-chat",
      anchors: input.inspection.client_calls,
      calls: input.inspection.recalls,
      params: input.params,
    },
  ];
}

function splice(
  raw: string,
  list: readonly ProxyMemo[],
  answers: ReadonlyMap<string, RecallResult>,
): { edits: Edit[]; spliced: number } {
  const mine = list.filter(
    (m): m is Extract<ProxyMemo, { kind: "recall" }> =>
      m.kind === "recall" && m.format === "openai-chat",
  );
  const edits: Edit[] = [];
  let spliced = 0;
  if (mine.length === 0) return { edits, spliced };
  const messages = arrayMember(parseJsonSpans(raw), "messages");
  if (messages === undefined) return { edits, spliced };
  messages.items.forEach((message, i) => {
    if (message.kind !== "object" || memberString(raw, message, "role") !== "assistant") return;
    const calls = getMember(message, "tool_calls");
    if (calls?.kind !== "array") return;
    const ids = calls.items.map((c) => memberString(raw, c, "id") ?? "");
    const memo = mine.find((m) => m.anchors.some((a) => ids.includes(a)));
    if (memo === undefined || memo.calls.some((c) => ids.includes(c.id) || !answers.has(c.id)))
      return;
    // Tool messages must follow the assistant message directly: ours go after the last one of that
    // run.
    let lastTool: JsonNode | undefined;
    for (let j = i + 1; j < messages.items.length; j++) {
      const m = messages.items[j]!;
      if (memberString(raw, m, "role") !== "tool") break;
      if (memo.calls.some((c) => c.id === memberString(raw, m, "tool_call_id"))) return;
      lastTool = m;
    }
    if (lastTool === undefined) return;
    edits.push(appendItems(calls, memo.calls.map(recallCall)));
    edits.push(
      insertAfter(
        lastTool,
        memo.calls.map((c) => toolMessage(answers.get(c.id)!)),
      ),
    );
    spliced += memo.calls.length;
  });
  return { edits, spliced };
}

export const openaiChatDialect: Dialect = {
  format: "openai-chat",
  provider: "openai",
  path: "/chat/completions",
  errorBody: openaiErrorBody,
  inspect,
  nextRequest,
  merge,
  memos,
  splice,
  stream: (maxHops) => new ChatStream(maxHops),
};
