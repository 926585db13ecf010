/**
 * Responses (`POST /responses`). Our call is a `function_call` output item named recall_tool_result. How a
 * hop continues depends on where the history lives:
 * - `conversation`: the provider appended the answer to it; the hop sends only our `function_call_output`s;
 * - stored (the default, `store` not false): the hop chains off the answer (`previous_response_id`) with our
 *   outputs as its input;
 * - `store: false`: the hop resends the whole input, the answer's output items and our outputs (reasoning
 *   items without `encrypted_content` cannot be resent without storage and are left out).
 * The client gets one response under the FIRST hop's id (an event stream cannot change ids), with the hops'
 * output items in order minus our calls, and the usage summed. With stored history, the session remembers
 * that this id stands for the last hop's response, and rewrites `previous_response_id` when the client chains
 * off it. A reasoning item right before one of our calls is left out with it: resent alone, the API refuses
 * a reasoning item without the item that followed it.
 */
import { getMember, type JsonArray, type JsonNode, parseJsonSpans } from "../core/json/scan.ts";
import { RECALL_TOOL_NAME } from "../core/recall-tool.ts";
import {
  type Answer,
  type Dialect,
  type Ending,
  type Hop,
  type Inspection,
  type MemoInput,
  noticeText,
  type StreamMerger,
  type StreamResult,
} from "./dialect.ts";
import {
  type Edit,
  insertAfter,
  memberString,
  prependItems,
  replaceNode,
  setMember,
  stringOf,
} from "./json-edit.ts";
import { openaiErrorBody, openaiStreamError } from "./openai-chat.ts";
import type { ProxyMemo, RememberedCall } from "./port.ts";
import type { RecallResult } from "./recalls.ts";
import { type SseEvent, sseEvent } from "./sse.ts";
import { addUsage, isRecord } from "./usage.ts";

type Item = Record<string, unknown>;

function isRecallItem(item: unknown): boolean {
  return isRecord(item) && item.type === "function_call" && item.name === RECALL_TOOL_NAME;
}

function outputOf(answer: Answer): Item[] {
  return Array.isArray(answer.output) ? (answer.output.filter(isRecord) as Item[]) : [];
}

/** The answer's items the client sees: without our calls, nor a reasoning item directly before one. */
function visibleItems(items: readonly Item[]): Item[] {
  return items.filter(
    (item, i) => !isRecallItem(item) && !(item.type === "reasoning" && isRecallItem(items[i + 1])),
  );
}

function inspect(answer: Answer): Inspection {
  const output = outputOf(answer);
  return {
    recalls: output
      .filter(isRecallItem)
      .map((i) => ({ id: String(i.call_id), arguments: String(i.arguments ?? "") })),
    // Any call the client answers carries a call_id (function, custom, computer, shell… calls).
    client_calls: output
      .filter(
        (i) =>
          !isRecallItem(i) && typeof i.call_id === "string" && !String(i.type).endsWith("_output"),
      )
      .map((i) => String(i.call_id)),
    tool_turn: answer.status === "completed",
  };
}

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

function applyEdits(raw: string, edits: readonly Edit[]): string {
  const sorted = [...edits].sort((a, b) => a.start - b.start);
  let out = "";
  let at = 0;
  for (const e of sorted) {
    out += raw.slice(at, e.start) + e.text;
    at = e.end;
  }
  return out + raw.slice(at);
}

function notice(ending: Ending, maxHops: number): Item {
  return {
    type: "message",
    id: "msg_edgeoffload_notice",
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text: noticeText(ending, maxHops), annotations: [] }],
  };
}

function needsNotice(items: readonly Item[], ending: Ending): boolean {
  const hasMessage = items.some((i) => i.type === "message");
  return ending === "exhausted"
    ? !hasMessage
    : !hasMessage && !items.some((i) => typeof i.call_id === "string");
}

function merge(answers: readonly Answer[], ending: Ending, maxHops: number): Answer {
  const first = answers[0]!;
  const last = answers[answers.length - 1]!;
  const items = answers.flatMap((a) => visibleItems(outputOf(a)));
  if (needsNotice(items, ending)) items.push(notice(ending, maxHops));
  return {
    ...last,
    id: first.id,
    created_at: first.created_at,
    previous_response_id: first.previous_response_id ?? null,
    output: items,
    usage: answers.reduce<unknown>((sum, a) => addUsage(sum, a.usage), null),
  };
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
  // The provider holds the last hop's response, possibly with recall calls the hop limit left unanswered.
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
    // With the client's call in input (whole history), ours goes right after it; with stored history the
    // provider already has it and only the outputs are sent.
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

/**
 * The stream: events pass as they come, except our call's item (its events are dropped and later output
 * indices close up). A reasoning item is held until the next item starts, since it is dropped when our call
 * follows it. Once our call was seen, response.completed is held until the proxy knows whether a hop follows.
 * A hop's events continue the same response: its lifecycle start events are dropped, sequence numbers go on
 * from the last one sent, and response.completed carries the first id, every visible item and the summed usage.
 */
class ResponsesStream implements StreamMerger {
  readonly maxHops: number;
  hop = 0;
  first: Answer = {};
  /** Next output index the client sees, and the items it has seen complete. */
  out = 0;
  visible = new Map<number, Item>();
  lastSeq = -1;
  changed = false;
  done: unknown[] = [];
  // This hop:
  map = new Map<number, number | null | "held">();
  held: { index: number; events: { ev: SseEvent; d: Record<string, unknown> }[] } | null = null;
  completed: Answer | null = null;
  holding = false;
  errored = false;

  constructor(maxHops: number) {
    this.maxHops = maxHops;
  }

  begin(hop: number): void {
    if (hop > 0) {
      this.done.push(this.completed?.usage ?? null);
      this.changed = true;
    }
    this.hop = hop;
    this.map = new Map();
    this.held = null;
    this.completed = null;
    this.holding = false;
  }

  total(): unknown {
    return [...this.done, this.completed?.usage ?? null].reduce<unknown>(
      (sum, u) => addUsage(sum, u),
      null,
    );
  }

  /** Send an event: as it came when nothing changes, else re-serialized (hops renumber the sequence). */
  send(ev: SseEvent, d: Record<string, unknown>, patch: Record<string, unknown> = {}): string {
    const upstreamSeq = typeof d.sequence_number === "number" ? d.sequence_number : undefined;
    if (this.hop === 0 && Object.keys(patch).length === 0) {
      if (upstreamSeq !== undefined) this.lastSeq = upstreamSeq;
      return ev.raw;
    }
    const seq = this.hop === 0 && upstreamSeq !== undefined ? upstreamSeq : this.lastSeq + 1;
    this.lastSeq = seq;
    return sseEvent(
      ev.event ?? String(d.type),
      JSON.stringify({ ...d, ...patch, sequence_number: seq }),
    );
  }

  /** Forward an item event under the client's index. */
  itemEvent(ev: SseEvent, d: Record<string, unknown>, to: number): string {
    if (d.type === "response.output_item.done" && isRecord(d.item)) this.visible.set(to, d.item);
    return this.send(ev, d, to === d.output_index ? {} : { output_index: to });
  }

  flush(): string {
    const held = this.held;
    if (held === null) return "";
    this.held = null;
    const to = this.out++;
    this.map.set(held.index, to);
    return held.events.map(({ ev, d }) => this.itemEvent(ev, d, to)).join("");
  }

  response(base: Answer): Answer {
    // Items the stream sent but whose done event never came are taken from the final response.
    const output = outputOf(base);
    for (const [from, to] of this.map)
      if (typeof to === "number" && !this.visible.has(to) && output[from] !== undefined)
        this.visible.set(to, output[from]!);
    const items = [...this.visible.entries()].sort((a, b) => a[0] - b[0]).map(([, item]) => item);
    return {
      ...base,
      id: this.first.id,
      created_at: this.first.created_at,
      previous_response_id: this.first.previous_response_id ?? null,
      output: items,
      usage: this.total(),
    };
  }

  feed(ev: SseEvent): string {
    let d: Record<string, unknown>;
    try {
      d = JSON.parse(ev.data) as Record<string, unknown>;
    } catch {
      return ev.raw;
    }
    if (!isRecord(d)) return ev.raw;
    const type = String(d.type);
    if (
      type === "response.created" ||
      type === "response.in_progress" ||
      type === "response.queued"
    ) {
      if (this.hop > 0) return "";
      if (type === "response.created" && isRecord(d.response)) this.first = d.response;
      return this.send(ev, d);
    }
    if (
      type === "response.completed" ||
      type === "response.incomplete" ||
      type === "response.failed"
    ) {
      const base = isRecord(d.response) ? d.response : {};
      this.completed = base;
      if (type === "response.completed" && [...this.map.values()].includes(null)) {
        this.holding = true;
        return "";
      }
      const flushed = this.flush();
      if (!this.changed) return flushed + this.send(ev, d);
      return flushed + this.send(ev, d, { response: this.response(base) });
    }
    if (type === "response.output_item.added") {
      const index = d.output_index as number;
      if (isRecallItem(d.item)) {
        this.map.set(index, null);
        this.changed = true;
        if (this.held !== null) {
          this.map.set(this.held.index, null);
          this.held = null;
        }
        return "";
      }
      const flushed = this.flush();
      if (isRecord(d.item) && d.item.type === "reasoning") {
        this.map.set(index, "held");
        this.held = { index, events: [{ ev, d }] };
        return flushed;
      }
      const to = this.out++;
      this.map.set(index, to);
      return flushed + this.itemEvent(ev, d, to);
    }
    if (typeof d.output_index === "number") {
      const to = this.map.get(d.output_index);
      if (to === null) return "";
      if (to === "held") {
        this.held!.events.push({ ev, d });
        return "";
      }
      if (to === undefined) return this.send(ev, d);
      return this.itemEvent(ev, d, to);
    }
    // Anything else (an error, a keep-alive): the held reasoning goes first, so sequence numbers stay in order.
    if (type === "error") this.errored = true;
    return this.flush() + this.send(ev, d);
  }

  result(): StreamResult {
    const answer = this.completed ?? { output: [] };
    return {
      answer,
      inspection: inspect(answer),
      complete: this.completed !== null,
      errored: this.errored,
    };
  }

  finish(ending: Ending): string {
    let out = this.flush();
    if (!this.holding) return out;
    const items = [...this.visible.values()];
    if (needsNotice(items, ending)) {
      const item = notice(ending, this.maxHops);
      const index = this.out++;
      this.visible.set(index, item);
      out += this.emit("response.output_item.added", { output_index: index, item });
      out += this.emit("response.output_item.done", { output_index: index, item });
    }
    const response = this.response(this.completed ?? {});
    return (
      out + this.emit("response.completed", { response: { ...response, status: "completed" } })
    );
  }

  emit(type: string, fields: Record<string, unknown>): string {
    this.lastSeq++;
    return sseEvent(type, JSON.stringify({ type, ...fields, sequence_number: this.lastSeq }));
  }

  error(message: string, body?: string): string {
    const e = openaiStreamError(message, body);
    return this.emit("error", {
      code: e.code ?? null,
      message: e.message ?? message,
      param: e.param ?? null,
    });
  }
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
