/** The Responses event stream, merged over the hops into the one stream the client reads. */
import type { Answer, Ending, StreamMerger, StreamResult } from "./dialect.ts";
import { openaiStreamError } from "./openai-chat-answer.ts";
import {
  type Item,
  inspect,
  isRecallItem,
  needsNotice,
  notice,
  outputOf,
} from "./openai-responses-answer.ts";
import { type SseEvent, sseEvent } from "./sse.ts";
import { addUsage, isRecord } from "./usage.ts";

/**
 * The stream: events pass as they come, except our call's item (its events are dropped and later
 * output indices close up). A reasoning item is held until the next item starts, since it is
 * dropped when our call follows it. Once our call was seen, response.completed is held until the
 * proxy knows whether a hop follows. A hop's events continue the same response: its lifecycle start
 * events are dropped, sequence numbers go on from the last one sent, and response.completed carries
 * the first id, every visible item and the summed usage.
 */
export class ResponsesStream implements StreamMerger {
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

  /**
   * Send an event: as it came when nothing changes, else re-serialized (hops renumber the
   * sequence).
   */
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
    // Anything else (an error, a keep-alive): the held reasoning goes first, so sequence numbers
    // stay in order.
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
