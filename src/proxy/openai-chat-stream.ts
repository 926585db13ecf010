/** The Chat Completions event stream, merged over the hops into the one stream the client reads. */
import { RECALL_TOOL_NAME } from "../core/recall-tool.ts";
import type { Answer, Ending, StreamMerger, StreamResult } from "./dialect.ts";
import { noticeText } from "./dialect.ts";
import { inspect, openaiStreamError } from "./openai-chat-answer.ts";
import { type SseEvent, sseEvent } from "./sse.ts";
import { addUsage, isRecord } from "./usage.ts";

interface StreamCall {
  id: string;
  type: string;
  name: string;
  arguments: string;
  /** The client's index for it; null for ours (dropped). */
  to: number | null;
}

/**
 * The stream: chunks pass as they come, with our tool calls taken out of their deltas (later calls'
 * indices close up, and a chunk left empty is dropped). Once our call was seen, the finish chunk,
 * the usage chunk and [DONE] are held until the proxy knows whether a hop follows. A hop's chunks
 * continue the same completion: the first id and `created`, no second role, and the usage chunk
 * (when the client asked for usage) summed.
 */
export class ChatStream implements StreamMerger {
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
