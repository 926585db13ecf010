/**
 * The Messages API (`POST /v1/messages`). Our call is a `tool_use` block named recall_tool_result;
 * a hop appends the assistant message as answered (thinking blocks and signatures included, as tool
 * use with thinking requires) and a user message with one `tool_result` per call. The client gets
 * one message: the hops' content blocks in order without our `tool_use` blocks, the first hop's id,
 * the last hop's stop reason, and the usage summed over the hops; for a model with preserved thinking,
 * later requests have that message split back into the hops (anthropic-hops.ts).
 */
import { splice } from "../core/compact.ts";
import { getMember, type JsonNode, parseJsonSpans } from "../core/json/scan.ts";
import { RECALL_TOOL_NAME } from "../core/recall-tool.ts";
import { errorBody, inspect, merge } from "./anthropic-answer.ts";
import { hopMemo, spliceHops } from "./anthropic-hops.ts";
import { AnthropicStream } from "./anthropic-stream.ts";
import type { Dialect, Hop, MemoInput } from "./dialect.ts";
import { appendItems, arrayMember, type Edit, memberString } from "./json-edit.ts";
import { type MessagesPlaces, spliceMemos } from "./memo-splice.ts";
import type { ProxyMemo, RememberedCall } from "./port.ts";
import type { RecallResult } from "./recalls.ts";

function toolUse(call: RememberedCall): string {
  return `{"type":"tool_use","id":${JSON.stringify(call.id)},"name":${JSON.stringify(RECALL_TOOL_NAME)},"input":${call.arguments}}`;
}

function toolResult(r: RecallResult): string {
  return JSON.stringify({
    type: "tool_result",
    tool_use_id: r.id,
    content: r.content,
    ...(r.is_error ? { is_error: true } : {}),
  });
}

function nextRequest(request: string, hops: readonly Hop[]): string {
  const root = parseJsonSpans(request);
  const messages = arrayMember(root, "messages")!;
  const items = hops.flatMap((h) => [
    JSON.stringify({ role: "assistant", content: h.answer.content }),
    `{"role":"user","content":[${h.results.map(toolResult).join(",")}]}`,
  ]);
  const edit = appendItems(messages, items);
  return request.slice(0, edit.start) + edit.text + request.slice(edit.end);
}

function memos(input: MemoInput): ProxyMemo[] {
  const out: ProxyMemo[] = [];
  // A model with preserved thinking gets its hops back in every later request (anthropic-hops.ts).
  const hops = hopMemo(input);
  if (hops !== null) out.push(hops);
  if (input.ending === "mixed")
    out.push({
      kind: "recall",
      format: "anthropic",
      anchors: input.inspection.client_calls,
      calls: input.inspection.recalls,
      params: input.params,
    });
  return out;
}

/**
 * The memos spliced back: hop memos first (a message split into its hops), then a mixed answer's calls
 * into the message that now holds the client's calls (read again, so both land where they belong).
 */
function spliceAll(
  raw: string,
  list: readonly ProxyMemo[],
  answers: ReadonlyMap<string, RecallResult>,
): { edits: Edit[]; spliced: number } {
  const hops = spliceHops(raw, list, answers, { call: toolUse, answer: toolResult });
  if (hops.edits.length === 0) return spliceMemos(raw, list, answers, places);
  const split = splice(raw, hops.edits);
  const mixed = spliceMemos(split, list, answers, places);
  const text = mixed.edits.length === 0 ? split : splice(split, mixed.edits);
  return { edits: [{ start: 0, end: raw.length, text }], spliced: hops.spliced + mixed.spliced };
}

function blockIds(raw: string, content: JsonNode | undefined, type: string, key: string): string[] {
  if (content?.kind !== "array") return [];
  const ids: string[] = [];
  for (const b of content.items)
    if (memberString(raw, b, "type") === type) ids.push(memberString(raw, b, key) ?? "");
  return ids;
}

/** Our calls join the assistant message's `tool_use` blocks; our answers follow its last tool_result. */
const places: MessagesPlaces = {
  format: "anthropic",
  calls(raw, message) {
    const content = getMember(message, "content");
    const uses = blockIds(raw, content, "tool_use", "id");
    if (uses.length === 0 || content?.kind !== "array") return undefined;
    return { list: content, ids: uses };
  },
  lastAnswer(raw, messages, i, memo) {
    // The user message right after must answer the client's calls; ours go after its last
    // tool_result (tool_result blocks come first in a user message).
    const next = messages.items[i + 1];
    const nextContent =
      next?.kind === "object" && memberString(raw, next, "role") === "user"
        ? getMember(next, "content")
        : undefined;
    if (nextContent?.kind !== "array") return undefined;
    let lastResult: JsonNode | undefined;
    for (const b of nextContent.items)
      if (memberString(raw, b, "type") === "tool_result") lastResult = b;
    if (lastResult === undefined) return undefined;
    if (
      blockIds(raw, nextContent, "tool_result", "tool_use_id").some((id) =>
        memo.calls.some((c) => c.id === id),
      )
    )
      return undefined;
    return lastResult;
  },
  call: toolUse,
  answer: toolResult,
};

export const anthropicDialect: Dialect = {
  format: "anthropic",
  provider: "anthropic",
  path: "/v1/messages",
  errorBody,
  inspect,
  nextRequest,
  merge,
  memos,
  splice: spliceAll,
  stream: (maxHops) => new AnthropicStream(maxHops),
};
