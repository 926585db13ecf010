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
import { appendItems, arrayMember, memberString } from "./json-edit.ts";
import { type MessagesPlaces, spliceMemos } from "./memo-splice.ts";
import { callsOf, inspect, merge, messageOf, openaiErrorBody } from "./openai-chat-answer.ts";
import { ChatStream } from "./openai-chat-stream.ts";
import type { ProxyMemo, RememberedCall } from "./port.ts";
import type { RecallResult } from "./recalls.ts";
import { askStreamUsage } from "./stream-usage.ts";

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

/** Our calls join the assistant message's `tool_calls`; our answers follow the tool messages after it. */
const places: MessagesPlaces = {
  format: "openai-chat",
  calls(raw, message) {
    const calls = getMember(message, "tool_calls");
    if (calls?.kind !== "array") return undefined;
    return { list: calls, ids: calls.items.map((c) => memberString(raw, c, "id") ?? "") };
  },
  lastAnswer(raw, messages, i, memo) {
    // Tool messages must follow the assistant message directly: ours go after the last one of that
    // run.
    let lastTool: JsonNode | undefined;
    for (let j = i + 1; j < messages.items.length; j++) {
      const m = messages.items[j]!;
      if (memberString(raw, m, "role") !== "tool") break;
      if (memo.calls.some((c) => c.id === memberString(raw, m, "tool_call_id"))) return undefined;
      lastTool = m;
    }
    return lastTool;
  },
  call: recallCall,
  answer: toolMessage,
};

export const openaiChatDialect: Dialect = {
  format: "openai-chat",
  provider: "openai",
  path: "/chat/completions",
  errorBody: openaiErrorBody,
  inspect,
  nextRequest,
  merge,
  memos,
  splice: (raw, list, answers) => spliceMemos(raw, list, answers, places),
  stream: (maxHops) => new ChatStream(maxHops),
  askStreamUsage,
};
