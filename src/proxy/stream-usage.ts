/**
 * A Chat Completions stream reports usage only when the request asks for it
 * (`stream_options.include_usage`): the proxy asks upstream on every streamed call, so the turn is
 * measured, and gives the client the stream it asked for: the closing usage chunk (empty `choices`)
 * dropped, and the `"usage": null` the provider then adds to every other chunk taken out. A request
 * whose `stream_options` is set some other way is sent as it is: its turn reads as unmeasured in
 * the report.
 */
import { getMember, type JsonNode } from "../core/json/scan.ts";
import { readSse, textStream } from "./sse.ts";
import { isRecord } from "./usage.ts";

/** The insertion that asks for usage, or null: not streamed, or `stream_options` already set. */
export function askStreamUsage(root: JsonNode): { at: number; text: string } | null {
  if (root.kind !== "object") return null;
  if (getMember(root, "stream")?.kind !== "true") return null;
  if (getMember(root, "stream_options") !== undefined) return null;
  return { at: root.start + 1, text: '"stream_options":{"include_usage":true},' };
}

/** One event as the client asked for it ("" drops it). */
export function withoutUsage(raw: string, data: string): string {
  if (!data.includes('"usage"')) return raw;
  let chunk: unknown;
  try {
    chunk = JSON.parse(data);
  } catch {
    return raw;
  }
  if (!isRecord(chunk) || !("usage" in chunk)) return raw;
  if (Array.isArray(chunk.choices) && chunk.choices.length === 0) return "";
  const { usage: _, ...rest } = chunk;
  return `data: ${JSON.stringify(rest)}\n\n`;
}

/** The client's stream without the usage it did not ask for. */
export function hideStreamUsage(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  return textStream(
    (async function* () {
      for await (const ev of readSse(body)) yield withoutUsage(ev.raw, ev.data);
    })(),
  );
}
