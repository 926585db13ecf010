/**
 * The Messages API's event stream, merged over the hops: events pass as they come, except our
 * `tool_use` block (its index is left out and later indices close up) and, once our block was seen,
 * the message's closing events (held until the proxy knows whether a hop follows). A hop's stream
 * continues the same message: its message_start is dropped, its blocks take the next indices, and
 * the final message_delta carries the usage summed over every hop.
 */
import { type Block, errorBody, inspect, isRecallUse } from "./anthropic-answer.ts";
import type { Answer, Ending, StreamMerger, StreamResult } from "./dialect.ts";
import { noticeText } from "./dialect.ts";
import { type SseEvent, sseEvent } from "./sse.ts";
import { addUsage, isRecord, overlayUsage } from "./usage.ts";

export class AnthropicStream implements StreamMerger {
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
