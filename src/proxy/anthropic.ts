/**
 * The Messages API (`POST /v1/messages`). Our call is a `tool_use` block named recall_tool_result; a hop
 * appends the assistant message as answered (thinking blocks and signatures included, as tool use with
 * thinking requires) and a user message with one `tool_result` per call. The client gets one message: the
 * hops' content blocks in order without our `tool_use` blocks, the first hop's id, the last hop's stop
 * reason, and the usage summed over the hops.
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
import { addUsage, isRecord, overlayUsage } from "./usage.ts";

type Block = Record<string, unknown>;

function isRecallUse(block: unknown): boolean {
  return isRecord(block) && block.type === "tool_use" && block.name === RECALL_TOOL_NAME;
}

function contentOf(answer: Answer): Block[] {
  return Array.isArray(answer.content) ? (answer.content.filter(isRecord) as Block[]) : [];
}

/** The error `type` the API uses for a status. */
function errorType(status: number): string {
  const byStatus: Record<number, string> = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
  };
  return byStatus[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
}

function errorBody(status: number, message: string): string {
  return JSON.stringify({ type: "error", error: { type: errorType(status), message } });
}

function inspect(answer: Answer): Inspection {
  const content = contentOf(answer);
  return {
    recalls: content
      .filter(isRecallUse)
      .map((b) => ({ id: String(b.id), arguments: JSON.stringify(b.input ?? {}) })),
    client_calls: content
      .filter((b) => b.type === "tool_use" && !isRecallUse(b))
      .map((b) => String(b.id)),
    tool_turn: answer.stop_reason === "tool_use",
  };
}

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

function merge(answers: readonly Answer[], ending: Ending, maxHops: number): Answer {
  const first = answers[0]!;
  const last = answers[answers.length - 1]!;
  const content = answers.flatMap((a) => contentOf(a).filter((b) => !isRecallUse(b)));
  let stop = ending === "exhausted" ? "end_turn" : last.stop_reason;
  if (content.length === 0 || (ending === "exhausted" && !content.some((b) => b.type === "text")))
    content.push({ type: "text", text: noticeText(ending, maxHops) });
  if (stop === "tool_use" && !content.some((b) => b.type === "tool_use")) stop = "end_turn";
  return {
    ...last,
    id: first.id,
    content,
    stop_reason: stop,
    usage: answers.reduce<unknown>((sum, a) => addUsage(sum, a.usage), null),
  };
}

function memos(input: MemoInput): ProxyMemo[] {
  if (input.ending !== "mixed") return [];
  return [
    {
      kind: "recall",
      format: "anthropic",
      anchors: input.inspection.client_calls,
      calls: input.inspection.recalls,
      params: input.params,
    },
  ];
}

function blockIds(raw: string, content: JsonNode | undefined, type: string, key: string): string[] {
  if (content?.kind !== "array") return [];
  const ids: string[] = [];
  for (const b of content.items)
    if (memberString(raw, b, "type") === type) ids.push(memberString(raw, b, key) ?? "");
  return ids;
}

function splice(
  raw: string,
  list: readonly ProxyMemo[],
  answers: ReadonlyMap<string, RecallResult>,
): { edits: Edit[]; spliced: number } {
  const mine = list.filter(
    (m): m is Extract<ProxyMemo, { kind: "recall" }> =>
      m.kind === "recall" && m.format === "anthropic",
  );
  const edits: Edit[] = [];
  let spliced = 0;
  if (mine.length === 0) return { edits, spliced };
  const messages = arrayMember(parseJsonSpans(raw), "messages");
  if (messages === undefined) return { edits, spliced };
  messages.items.forEach((message, i) => {
    if (message.kind !== "object" || memberString(raw, message, "role") !== "assistant") return;
    const content = getMember(message, "content");
    const uses = blockIds(raw, content, "tool_use", "id");
    if (uses.length === 0 || content?.kind !== "array") return;
    const memo = mine.find((m) => m.anchors.some((a) => uses.includes(a)));
    if (memo === undefined || memo.calls.some((c) => uses.includes(c.id) || !answers.has(c.id)))
      return;
    // The user message right after must answer the client's calls; ours go after its last tool_result
    // (tool_result blocks come first in a user message).
    const next = messages.items[i + 1];
    const nextContent =
      next?.kind === "object" && memberString(raw, next, "role") === "user"
        ? getMember(next, "content")
        : undefined;
    if (nextContent?.kind !== "array") return;
    let lastResult: JsonNode | undefined;
    for (const b of nextContent.items)
      if (memberString(raw, b, "type") === "tool_result") lastResult = b;
    if (lastResult === undefined) return;
    if (
      blockIds(raw, nextContent, "tool_result", "tool_use_id").some((id) =>
        memo.calls.some((c) => c.id === id),
      )
    )
      return;
    edits.push(appendItems(content, memo.calls.map(toolUse)));
    edits.push(
      insertAfter(
        lastResult,
        memo.calls.map((c) => toolResult(answers.get(c.id)!)),
      ),
    );
    spliced += memo.calls.length;
  });
  return { edits, spliced };
}

/**
 * The stream: events pass as they come, except our `tool_use` block (its index is left out and later
 * indices close up) and, once our block was seen, the message's closing events (held until the proxy knows
 * whether a hop follows). A hop's stream continues the same message: its message_start is dropped, its
 * blocks take the next indices, and the final message_delta carries the usage summed over every hop.
 */
class AnthropicStream implements StreamMerger {
  readonly maxHops: number;
  hop = 0;
  /** Next block index the client sees. */
  out = 0;
  textSent = false;
  done: unknown[] = [];
  // This hop:
  message: Answer = {};
  blocks = new Map<number, Block>();
  partial = new Map<number, string>();
  map = new Map<number, number | null>();
  delta: Record<string, unknown> = {};
  startUsage: unknown = null;
  deltaUsage: unknown = null;
  holding = false;
  stopped = false;
  errored = false;

  constructor(maxHops: number) {
    this.maxHops = maxHops;
  }

  begin(hop: number): void {
    if (hop > 0) this.done.push(this.hopUsage());
    this.hop = hop;
    this.message = {};
    this.blocks = new Map();
    this.partial = new Map();
    this.map = new Map();
    this.delta = {};
    this.startUsage = null;
    this.deltaUsage = null;
    this.holding = false;
    this.stopped = false;
  }

  hopUsage(): unknown {
    return overlayUsage(this.startUsage, this.deltaUsage);
  }

  total(): unknown {
    return [...this.done, this.hopUsage()].reduce<unknown>((sum, u) => addUsage(sum, u), null);
  }

  /** Forward a block event under the client's index (or drop it: our block). */
  blockEvent(ev: SseEvent, d: Record<string, unknown>): string {
    const to = this.map.get(d.index as number);
    if (to === null) return "";
    if (to === undefined || to === d.index) return ev.raw;
    return sseEvent(ev.event, JSON.stringify({ ...d, index: to }));
  }

  feed(ev: SseEvent): string {
    let d: Record<string, unknown>;
    try {
      d = JSON.parse(ev.data) as Record<string, unknown>;
    } catch {
      return ev.raw;
    }
    if (!isRecord(d)) return ev.raw;
    switch (d.type) {
      case "message_start": {
        const message = isRecord(d.message) ? d.message : {};
        this.message = message;
        this.startUsage = message.usage ?? null;
        return this.hop === 0 ? ev.raw : "";
      }
      case "content_block_start": {
        const index = d.index as number;
        const block = isRecord(d.content_block) ? structuredClone(d.content_block) : {};
        this.blocks.set(index, block);
        if (isRecallUse(block)) {
          this.map.set(index, null);
          return "";
        }
        if (block.type === "text") this.textSent = true;
        this.map.set(index, this.out++);
        return this.blockEvent(ev, d);
      }
      case "content_block_delta": {
        this.accumulate(d.index as number, isRecord(d.delta) ? d.delta : {});
        return this.blockEvent(ev, d);
      }
      case "content_block_stop": {
        const index = d.index as number;
        const block = this.blocks.get(index);
        const partial = this.partial.get(index);
        if (block !== undefined && partial !== undefined) {
          try {
            block.input = partial.trim() === "" ? {} : JSON.parse(partial);
          } catch {
            block.input = {};
          }
        }
        return this.blockEvent(ev, d);
      }
      case "message_delta": {
        this.delta = isRecord(d.delta) ? d.delta : {};
        this.deltaUsage = d.usage ?? null;
        if ([...this.map.values()].includes(null)) {
          this.holding = true;
          return "";
        }
        return this.hop === 0
          ? ev.raw
          : sseEvent(ev.event, JSON.stringify({ ...d, usage: this.total() }));
      }
      case "message_stop":
        this.stopped = true;
        return this.holding ? "" : ev.raw;
      case "error":
        this.errored = true;
        return ev.raw;
      default:
        return ev.raw;
    }
  }

  accumulate(index: number, delta: Record<string, unknown>): void {
    const block = this.blocks.get(index);
    if (block === undefined) return;
    switch (delta.type) {
      case "text_delta":
        block.text = `${typeof block.text === "string" ? block.text : ""}${String(delta.text ?? "")}`;
        break;
      case "thinking_delta":
        block.thinking = `${typeof block.thinking === "string" ? block.thinking : ""}${String(delta.thinking ?? "")}`;
        break;
      case "signature_delta":
        block.signature = delta.signature;
        break;
      case "input_json_delta":
        this.partial.set(
          index,
          `${this.partial.get(index) ?? ""}${String(delta.partial_json ?? "")}`,
        );
        break;
      case "citations_delta":
        block.citations = [
          ...(Array.isArray(block.citations) ? block.citations : []),
          delta.citation,
        ];
        break;
    }
  }

  result(): StreamResult {
    const content = [...this.blocks.entries()].sort((a, b) => a[0] - b[0]).map(([, b]) => b);
    const answer: Answer = {
      ...this.message,
      content,
      stop_reason: this.delta.stop_reason ?? null,
      stop_sequence: this.delta.stop_sequence ?? null,
      usage: this.hopUsage(),
    };
    return { answer, inspection: inspect(answer), complete: this.stopped, errored: this.errored };
  }

  finish(ending: Ending): string {
    if (!this.holding) return "";
    let out = "";
    if (ending === "exhausted" ? !this.textSent : this.out === 0) {
      const index = this.out++;
      out += sseEvent(
        "content_block_start",
        JSON.stringify({
          type: "content_block_start",
          index,
          content_block: { type: "text", text: "" },
        }),
      );
      out += sseEvent(
        "content_block_delta",
        JSON.stringify({
          type: "content_block_delta",
          index,
          delta: { type: "text_delta", text: noticeText(ending, this.maxHops) },
        }),
      );
      out += sseEvent("content_block_stop", JSON.stringify({ type: "content_block_stop", index }));
    }
    const clientCalls = [...this.blocks.values()].some(
      (b) => b.type === "tool_use" && !isRecallUse(b),
    );
    const stop =
      ending === "exhausted" || (this.delta.stop_reason === "tool_use" && !clientCalls)
        ? "end_turn"
        : this.delta.stop_reason;
    out += sseEvent(
      "message_delta",
      JSON.stringify({
        type: "message_delta",
        delta: { ...this.delta, stop_reason: stop },
        usage: this.total(),
      }),
    );
    out += sseEvent("message_stop", JSON.stringify({ type: "message_stop" }));
    return out;
  }

  error(message: string, body?: string): string {
    let data = errorBody(502, message);
    if (body !== undefined) {
      try {
        const parsed: unknown = JSON.parse(body);
        if (isRecord(parsed) && isRecord(parsed.error)) data = JSON.stringify(parsed);
      } catch {
        // not the provider's error shape: ours
      }
    }
    return sseEvent("error", data);
  }
}

export const anthropicDialect: Dialect = {
  format: "anthropic",
  provider: "anthropic",
  path: "/v1/messages",
  errorBody,
  inspect,
  nextRequest,
  merge,
  memos,
  splice,
  stream: (maxHops) => new AnthropicStream(maxHops),
};
