/**
 * Responses (`POST /responses`). Our call is a `function_call` output item named
 * recall_tool_result. How a hop continues depends on where the history lives:
 * - `conversation`: the provider appended the answer to it; the hop sends only our
 *   `function_call_output`s;
 * - stored (the default, `store` not false): the hop chains off the answer (`previous_response_id`)
 *   with our outputs as its input;
 * - `store: false`: the hop resends the whole input, the answer's output items and our outputs
 *   (reasoning items without `encrypted_content` cannot be resent without storage and are left
 *   out). The client gets one response under the FIRST hop's id (an event stream cannot change
 *   ids), with the hops' output items in order minus our calls, and the usage summed. With stored
 *   history, the session remembers that this id stands for the last hop's response, and rewrites
 *   `previous_response_id` when the client chains off it. A reasoning item right before one of our
 *   calls is left out with it: resent alone, the API refuses a reasoning item without the item that
 *   followed it.
 */
import { splice as applyEdits } from "../core/compact.ts";
import { getMember, type JsonArray, type JsonNode, parseJsonSpans } from "../core/json/scan.ts";
import { RECALL_TOOL_NAME } from "../core/recall-tool.ts";
import type { Dialect, Hop, MemoInput } from "./dialect.ts";
import {
  type Edit,
  insertAfter,
  memberString,
  prependItems,
  replaceNode,
  setMember,
  stringOf,
} from "./json-edit.ts";
import { openaiErrorBody } from "./openai-chat-answer.ts";
import { type Item, inspect, merge, outputOf } from "./openai-responses-answer.ts";
import { ResponsesStream } from "./openai-responses-stream.ts";
import type { ProxyMemo, RememberedCall } from "./port.ts";
import type { RecallResult } from "./recalls.ts";

type HistoryMode = "conversation" | "stored" | "stateless";

function modeOf(root: JsonNode): HistoryMode {
  if (root.kind !== "object") return "stored";
  const conversation = getMember(root, "conversation");
  if (conversation !== undefined && conversation.kind !== "null") return "conversation";
  return getMember(root, "store")?.kind === "false" ? "stateless" : "stored";
}

function output(r: RecallResult): string {
  return JSON.stringify({ type: "function_call_output", call_id: r.id, output: r.content });
}

function call(c: RememberedCall): string {
  return JSON.stringify({
    type: "function_call",
    call_id: c.id,
    name: RECALL_TOOL_NAME,
    arguments: c.arguments,
  });
}

/** `input` as an array's item texts (a string input is one user message). */
function inputItems(raw: string, input: JsonNode | undefined): string[] {
  if (input === undefined || input.kind === "null") return [];
  if (input.kind === "string")
    return [`{"role":"user","content":${raw.slice(input.start, input.end)}}`];
  if (input.kind === "array") return input.items.map((n) => raw.slice(n.start, n.end));
  return [];
}

function resendable(item: Item): boolean {
  return item.type !== "reasoning" || typeof item.encrypted_content === "string";
}

function nextRequest(request: string, hops: readonly Hop[]): string {
  const root = parseJsonSpans(request);
  if (root.kind !== "object") return request;
  const last = hops[hops.length - 1]!;
  const mode = modeOf(root);
  const edits: Edit[] = [];
  const input = getMember(root, "input");
  let items: string[];
  if (mode === "stateless") {
    items = [
      ...inputItems(request, input),
      ...hops.flatMap((h) => [
        ...outputOf(h.answer)
          .filter(resendable)
          .map((i) => JSON.stringify(i)),
        ...h.results.map(output),
      ]),
    ];
  } else {
    items = last.results.map(output);
    if (mode === "stored")
      edits.push(setMember(root, "previous_response_id", JSON.stringify(last.answer.id)));
  }
  edits.push(setMember(root, "input", `[${items.join(",")}]`));
  return applyEdits(request, edits);
}

function memos(input: MemoInput): ProxyMemo[] {
  const out: ProxyMemo[] = [];
  if (input.ending === "mixed")
    out.push({
      kind: "recall",
      format: "openai-responses",
      anchors: input.inspection.client_calls,
      calls: input.inspection.recalls,
      params: input.params,
    });
  const root = parseJsonSpans(input.request);
  if (modeOf(root) !== "stored") return out;
  const first = input.answers[0]!;
  const last = input.answers[input.answers.length - 1]!;
  // The provider holds the last hop's response, possibly with recall calls the hop limit left
  // unanswered.
  const open = input.ending === "exhausted" ? input.inspection.recalls : [];
  if (input.answers.length > 1 || open.length > 0)
    out.push({
      kind: "alias",
      format: "openai-responses",
      from: String(first.id),
      to: String(last.id),
      calls: open,
      params: input.params,
    });
  return out;
}

function splice(
  raw: string,
  list: readonly ProxyMemo[],
  answers: ReadonlyMap<string, RecallResult>,
): { edits: Edit[]; spliced: number } {
  const edits: Edit[] = [];
  let spliced = 0;
  const mine = list.filter((m) => m.format === "openai-responses");
  if (mine.length === 0) return { edits, spliced };
  const root = parseJsonSpans(raw);
  if (root.kind !== "object") return { edits, spliced };
  const input = getMember(root, "input");
  const array: JsonArray | undefined = input?.kind === "array" ? input : undefined;
  const items = array?.items ?? [];
  const present = new Set(
    items.map((n) => memberString(raw, n, "call_id")).filter((id) => id !== undefined),
  );
  const calls = new Map<string, JsonNode>();
  const outputs = new Map<string, JsonNode>();
  for (const n of items) {
    const id = memberString(raw, n, "call_id");
    const type = memberString(raw, n, "type") ?? "";
    if (id === undefined) continue;
    if (type.endsWith("_output")) outputs.set(id, n);
    else calls.set(id, n);
  }
  const prepend: string[] = [];
  const previous = stringOf(raw, getMember(root, "previous_response_id"));
  for (const memo of mine) {
    if (memo.calls.some((c) => !answers.has(c.id))) continue;
    if (memo.kind === "alias") {
      if (previous !== memo.from) continue;
      if (memo.to !== memo.from)
        edits.push(setMember(root, "previous_response_id", JSON.stringify(memo.to)));
      const missing = memo.calls.filter((c) => !present.has(c.id));
      prepend.push(...missing.map((c) => output(answers.get(c.id)!)));
      spliced += missing.length;
      continue;
    }
    const anchor = memo.anchors.find((a) => outputs.has(a));
    if (anchor === undefined || memo.calls.some((c) => present.has(c.id))) continue;
    // With the client's call in input (whole history), ours goes right after it; with stored
    // history the provider already has it and only the outputs are sent.
    const anchorCall = memo.anchors.map((a) => calls.get(a)).find((n) => n !== undefined);
    if (anchorCall !== undefined) edits.push(insertAfter(anchorCall, memo.calls.map(call)));
    edits.push(
      insertAfter(
        outputs.get(anchor)!,
        memo.calls.map((c) => output(answers.get(c.id)!)),
      ),
    );
    spliced += memo.calls.length;
  }
  if (prepend.length > 0) {
    if (array !== undefined) edits.push(prependItems(array, prepend));
    else
      edits.push(
        input === undefined
          ? setMember(root, "input", `[${prepend.join(",")}]`)
          : replaceNode(input, `[${[...prepend, ...inputItems(raw, input)].join(",")}]`),
      );
  }
  return { edits, spliced };
}

export const openaiResponsesDialect: Dialect = {
  format: "openai-responses",
  provider: "openai",
  path: "/responses",
  errorBody: openaiErrorBody,
  inspect,
  nextRequest,
  merge,
  memos,
  splice,
  stream: (maxHops) => new ResponsesStream(maxHops),
};
