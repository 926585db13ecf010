/**
 * The provider's usage from an answer the proxy passes through untouched (no recall tool of ours
 * to watch for): the bytes go to the client as they came, and the usage is read on the side, from
 * the JSON body or from the stream's usage events (Anthropic `message_start` then the cumulative
 * `message_delta`; OpenAI Chat's usage chunk; Responses' `response.completed`).
 */
import type { Format } from "../core/types.ts";
import { isRecord, overlayUsage } from "./usage.ts";

/** Folds one stream event's data into the usage seen so far. */
export function usageOfEvent(format: Format, data: string, seen: unknown): unknown {
  if (data === "" || data === "[DONE]" || !data.includes("usage")) return seen;
  let d: unknown;
  try {
    d = JSON.parse(data);
  } catch {
    return seen;
  }
  if (!isRecord(d)) return seen;
  if (format === "anthropic") {
    if (d.type === "message_start" && isRecord(d.message)) return d.message.usage ?? seen;
    if (d.type === "message_delta") return overlayUsage(seen, d.usage);
    return seen;
  }
  if (format === "openai-chat") return isRecord(d.usage) ? d.usage : seen;
  const response = d.response;
  return typeof d.type === "string" && d.type.startsWith("response.") && isRecord(response)
    ? (response.usage ?? seen)
    : seen;
}

/**
 * The stream as it came, with `done(usage)` awaited once it has ended (inside the response's own
 * lifetime, so the runtime keeps the work alive). A stream cut short reports what it saw.
 */
export function watchStream(
  body: ReadableStream<Uint8Array>,
  format: Format,
  done: (usage: unknown) => Promise<void>,
): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  let text = "";
  let usage: unknown = null;
  const take = (final: boolean) => {
    const normal = text.replace(/\r\n?/g, "\n");
    const blocks = normal.split("\n\n");
    text = final ? "" : blocks.pop()!;
    for (const block of blocks) {
      const data = block
        .split("\n")
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(l.charCodeAt(5) === 0x20 ? 6 : 5))
        .join("\n");
      usage = usageOfEvent(format, data, usage);
    }
  };
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        controller.enqueue(chunk);
        text += decoder.decode(chunk, { stream: true });
        // A trailing "\r" may be half of "\r\n": parse up to the last complete event only.
        if (text.includes("\n\n") || text.includes("\r\n\r\n")) take(false);
      },
      async flush() {
        text += decoder.decode();
        take(true);
        await done(usage);
      },
    }),
  );
}
