/**
 * Chat Completions (`POST /chat/completions`). Our call is a `tool_calls[]` entry of function
 * recall_tool_result; a hop appends the assistant message (its content and every tool call) and one
 * `role:"tool"` message per call right after it, as the API requires. The client gets one completion: the
 * first hop's id and `created`, the hops' text joined, the last hop's client tool calls and finish reason, and
 * the usage summed. Only the first choice is handled (`n` > 1 is not supported: other choices pass as they are).
 */
import { getMember, type JsonNode, parseJsonSpans } from "../core/json/scan.ts";
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
import { appendItems, arrayMember, type Edit, insertAfter, memberString } from "./json-edit.ts";
import type { ProxyMemo, RememberedCall } from "./port.ts";
import type { RecallResult } from "./recalls.ts";
import { type SseEvent, sseEvent } from "./sse.ts";
import { addUsage, isRecord } from "./usage.ts";

type Call = Record<string, unknown>;

function isRecallCall(call: unknown): boolean {
  return (
    isRecord(call) &&
    (call.type === undefined || call.type === "function") &&
    isRecord(call.function) &&
    call.function.name === RECALL_TOOL_NAME
  );
}

function firstChoice(answer: Answer): Record<string, unknown> {
  const choices = Array.isArray(answer.choices) ? answer.choices : [];
  const c = choices.find((x) => isRecord(x) && (x.index ?? 0) === 0);
  return isRecord(c) ? c : {};
}

function messageOf(answer: Answer): Record<string, unknown> {
  const m = firstChoice(answer).message;
  return isRecord(m) ? m : {};
}

function callsOf(message: Record<string, unknown>): Call[] {
  return Array.isArray(message.tool_calls) ? (message.tool_calls.filter(isRecord) as Call[]) : [];
}

const ERROR_TYPES: Record<number, string> = {
  401: "invalid_request_error",
  404: "invalid_request_error",
  413: "invalid_request_error",
  429: "rate_limit_exceeded",
};

export function openaiErrorBody(
  status: number,
  message: string,
  code: string,
  param?: string,
): string {
  return JSON.stringify({
    error: {
      message,
      type: ERROR_TYPES[status] ?? (status >= 500 ? "server_error" : "invalid_request_error"),
      param: param ?? null,
      code,
    },
  });
}

/** A stream error as the OpenAI SDKs read it: the provider's own error object when there is one. */
export function openaiStreamError(
  message: string,
  body: string | undefined,
): Record<string, unknown> {
  if (body !== undefined) {
    try {
      const parsed: unknown = JSON.parse(body);
      if (isRecord(parsed) && isRecord(parsed.error)) return parsed.error;
    } catch {
      // not the provider's error shape: ours
    }
  }
  return JSON.parse(openaiErrorBody(502, message, "upstream_error")).error as Record<
    string,
    unknown
  >;
}

function inspect(answer: Answer): Inspection {
  const calls = callsOf(messageOf(answer));
  return {
    recalls: calls
      .filter(isRecallCall)
      .map((c) => ({ id: String(c.id), arguments: String((c.function as Call).arguments ?? "") })),
    client_calls: calls.filter((c) => !isRecallCall(c)).map((c) => String(c.id)),
    tool_turn: firstChoice(answer).finish_reason === "tool_calls",
  };
}

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

/** The assistant message as a request takes it (a response's message carries output-only fields). */
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

function merge(answers: readonly Answer[], ending: Ending, maxHops: number): Answer {
  const first = answers[0]!;
  const last = answers[answers.length - 1]!;
  const texts = answers
    .map((a) => messageOf(a).content)
    .filter((t): t is string => typeof t === "string");
  let content: string | null = texts.length === 0 ? null : texts.join("");
  const calls = callsOf(messageOf(last)).filter((c) => !isRecallCall(c));
  const choice = firstChoice(last);
  let finish = ending === "exhausted" ? "stop" : choice.finish_reason;
  if (finish === "tool_calls" && calls.length === 0) finish = "stop";
  if ((content === null || content === "") && calls.length === 0)
    content = noticeText(ending, maxHops);
  const { tool_calls: _, ...rest } = messageOf(last);
  const message = { ...rest, content, ...(calls.length > 0 ? { tool_calls: calls } : {}) };
  const others = (Array.isArray(last.choices) ? last.choices : []).filter((c) => c !== choice);
  const usage = answers.reduce<unknown>((sum, a) => addUsage(sum, a.usage), null);
  return {
    ...last,
    id: first.id,
    created: first.created,
    choices: [{ ...choice, message, finish_reason: finish }, ...others],
    ...(usage === null ? {} : { usage }),
  };
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
    // Tool messages must follow the assistant message directly: ours go after the last one of that run.
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

interface StreamCall {
  id: string;
  type: string;
  name: string;
  arguments: string;
  /** The client's index for it; null for ours (dropped). */
  to: number | null;
}

/**
 * The stream: chunks pass as they come, with our tool calls taken out of their deltas (later calls' indices
 * close up, and a chunk left empty is dropped). Once our call was seen, the finish chunk, the usage chunk and
 * [DONE] are held until the proxy knows whether a hop follows. A hop's chunks continue the same completion:
 * the first id and `created`, no second role, and the usage chunk (when the client asked for usage) summed.
 */
class ChatStream implements StreamMerger {
  readonly maxHops: number;
  hop = 0;
  id: unknown = undefined;
  created: unknown = undefined;
  template: Record<string, unknown> = {};
  contentSent = false;
  done: unknown[] = [];
  // This hop:
  calls = new Map<number, StreamCall>();
  nextIndex = 0;
  content = "";
  finishReason: unknown = null;
  finishChunk: Record<string, unknown> | null = null;
  usage: unknown = null;
  usageHeld = false;
  holding = false;
  ended = false;
  errored = false;
  chunkId: unknown = undefined;

  constructor(maxHops: number) {
    this.maxHops = maxHops;
  }

  begin(hop: number): void {
    if (hop > 0) this.done.push(this.usage);
    this.hop = hop;
    this.calls = new Map();
    this.nextIndex = 0;
    this.content = "";
    this.finishReason = null;
    this.finishChunk = null;
    this.usage = null;
    this.usageHeld = false;
    this.holding = false;
    this.ended = false;
  }

  total(): unknown {
    return [...this.done, this.usage].reduce<unknown>((sum, u) => addUsage(sum, u), null);
  }

  ours(): boolean {
    return [...this.calls.values()].some((c) => c.to === null);
  }

  feed(ev: SseEvent): string {
    if (ev.data === "[DONE]") {
      this.ended = true;
      return this.holding ? "" : ev.raw;
    }
    let chunk: Record<string, unknown>;
    try {
      chunk = JSON.parse(ev.data) as Record<string, unknown>;
    } catch {
      return ev.raw;
    }
    if (!isRecord(chunk)) return ev.raw;
    if (isRecord(chunk.error)) {
      this.errored = true;
      return ev.raw;
    }
    if (this.id === undefined) {
      this.id = chunk.id;
      this.created = chunk.created;
    }
    this.chunkId = chunk.id;
    const { choices: _, usage: __, ...template } = chunk;
    this.template = template;
    let changed = this.hop > 0;
    let emptied = false;
    let finished = false;
    const choices = (Array.isArray(chunk.choices) ? chunk.choices : []).map((choice: unknown) => {
      if (!isRecord(choice) || (choice.index ?? 0) !== 0) return choice;
      const delta: Record<string, unknown> = isRecord(choice.delta) ? { ...choice.delta } : {};
      if (this.hop > 0 && "role" in delta) delete delta.role;
      if (typeof delta.content === "string") {
        this.content += delta.content;
        if (delta.content !== "") this.contentSent = true;
      }
      if (Array.isArray(delta.tool_calls)) {
        const kept: Record<string, unknown>[] = [];
        for (const tc of delta.tool_calls) {
          if (!isRecord(tc)) continue;
          const index = typeof tc.index === "number" ? tc.index : 0;
          let call = this.calls.get(index);
          if (call === undefined) {
            const fn = isRecord(tc.function) ? tc.function : isRecord(tc.custom) ? tc.custom : {};
            const type = typeof tc.type === "string" ? tc.type : "function";
            const mine = type === "function" && fn.name === RECALL_TOOL_NAME;
            call = {
              id: String(tc.id ?? ""),
              type,
              name: String(fn.name ?? ""),
              arguments: "",
              to: mine ? null : this.nextIndex++,
            };
            this.calls.set(index, call);
          }
          if (isRecord(tc.function) && typeof tc.function.arguments === "string")
            call.arguments += tc.function.arguments;
          if (call.to === null) {
            changed = true;
            continue;
          }
          if (call.to !== index) changed = true;
          kept.push({ ...tc, index: call.to });
        }
        if (kept.length > 0) delta.tool_calls = kept;
        else {
          delete delta.tool_calls;
          emptied = Object.keys(delta).length === 0;
        }
      }
      if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
        this.finishReason = choice.finish_reason;
        finished = true;
      }
      return { ...choice, delta };
    });
    if (chunk.usage !== null && chunk.usage !== undefined) {
      this.usage = chunk.usage;
      if (this.hop > 0) changed = true;
    }
    const out: Record<string, unknown> = { ...chunk, choices };
    if (this.hop > 0) {
      out.id = this.id;
      out.created = this.created;
    }
    if (out.usage !== null && out.usage !== undefined) out.usage = this.total();
    if (this.holding) {
      if (chunk.usage !== null && chunk.usage !== undefined) this.usageHeld = true;
      return "";
    }
    if (finished && this.ours()) {
      this.holding = true;
      this.finishChunk = out;
      if (chunk.usage !== null && chunk.usage !== undefined) this.usageHeld = true;
      return "";
    }
    if (
      emptied &&
      !finished &&
      (chunk.usage === null || chunk.usage === undefined) &&
      choices.length === 1
    )
      return "";
    return changed ? sseEvent(null, JSON.stringify(out)) : ev.raw;
  }

  result(): StreamResult {
    const calls = [...this.calls.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([, c]) =>
        c.type === "function"
          ? { id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }
          : { id: c.id, type: c.type, [c.type]: { name: c.name, input: c.arguments } },
      );
    const message = {
      role: "assistant",
      content: this.content === "" ? null : this.content,
      ...(calls.length > 0 ? { tool_calls: calls } : {}),
    };
    const answer: Answer = {
      ...this.template,
      id: this.chunkId,
      object: "chat.completion",
      choices: [{ index: 0, message, finish_reason: this.finishReason }],
      usage: this.usage,
    };
    return {
      answer,
      inspection: inspect(answer),
      complete: this.ended || this.finishReason !== null,
      errored: this.errored,
    };
  }

  chunk(fields: Record<string, unknown>): string {
    return sseEvent(
      null,
      JSON.stringify({ ...this.template, id: this.id, created: this.created, ...fields }),
    );
  }

  closing(ending: Ending): string {
    let out = "";
    const clientCalls = [...this.calls.values()].some((c) => c.to !== null);
    if (ending === "exhausted" ? !this.contentSent : !this.contentSent && !clientCalls) {
      out += this.chunk({
        choices: [
          {
            index: 0,
            delta: { content: noticeText(ending, this.maxHops) },
            logprobs: null,
            finish_reason: null,
          },
        ],
      });
    }
    const held = this.finishChunk ?? {};
    const reason =
      ending === "exhausted" || (this.finishReason === "tool_calls" && !clientCalls)
        ? "stop"
        : this.finishReason;
    const choices = (Array.isArray(held.choices) ? held.choices : []).map((c: unknown) =>
      isRecord(c) && (c.index ?? 0) === 0 ? { ...c, finish_reason: reason } : c,
    );
    const { usage: heldUsage, ...finishFields } = held;
    out += sseEvent(
      null,
      JSON.stringify({
        ...finishFields,
        id: this.id,
        created: this.created,
        choices,
        ...(heldUsage === undefined ? {} : { usage: heldUsage === null ? null : this.total() }),
      }),
    );
    if (this.usageHeld && (heldUsage === null || heldUsage === undefined))
      out += this.chunk({ choices: [], usage: this.total() });
    return `${out}data: [DONE]\n\n`;
  }

  finish(ending: Ending): string {
    return this.holding ? this.closing(ending) : "";
  }

  error(message: string, body?: string): string {
    return sseEvent(null, JSON.stringify({ error: openaiStreamError(message, body) }));
  }
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
