/**
 * Server-sent events as the providers send them: `event:` / `data:` lines, a blank line after each
 * event. The reader yields one event at a time as bytes arrive (nothing waits for the whole
 * answer), keeping each event's raw text so an event the proxy does not change goes out exactly as
 * it came.
 */

export interface SseEvent {
  /** The `event:` field, or null (OpenAI Chat sends data-only events). */
  event: string | null;
  /** The `data:` lines joined with "\n" ("" when there were none, e.g. a comment). */
  data: string;
  /**
   * The event's text including its terminating blank line, with line endings normalized to "\n".
   */
  raw: string;
}

function parseBlock(block: string): SseEvent {
  let event: string | null = null;
  const data: string[] = [];
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    const value =
      colon === -1 ? "" : line.slice(line.charCodeAt(colon + 1) === 0x20 ? colon + 2 : colon + 1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  return { event, data: data.join("\n"), raw: `${block}\n\n` };
}

/** Events of an SSE body. A connection that drops mid-stream makes the iteration throw. */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let done = false;
  try {
    while (!done) {
      const next = await reader.read();
      if (next.done) {
        done = true;
        text += decoder.decode();
      } else text += decoder.decode(next.value, { stream: true });
      // A trailing "\r" may be the first half of "\r\n": wait for the next chunk before normalizing
      // it.
      const cut = !done && text.endsWith("\r") ? text.length - 1 : text.length;
      let pending = text.slice(0, cut).replace(/\r\n?/g, "\n");
      const rest = text.slice(cut);
      let at: number;
      while ((at = pending.indexOf("\n\n")) !== -1) {
        const block = pending.slice(0, at);
        pending = pending.slice(at + 2);
        if (block !== "") yield parseBlock(block);
      }
      text = pending + rest;
    }
    const tail = text.replace(/\r\n?/g, "\n").replace(/\n+$/, "");
    if (tail !== "") yield parseBlock(tail);
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** One event's text. `data` must be a single line (JSON.stringify output is). */
export function sseEvent(event: string | null, data: string): string {
  return `${event === null ? "" : `event: ${event}\n`}data: ${data}\n\n`;
}

/** A comment line: ignored by every SSE parser, read by people and by tests. */
export function sseComment(text: string): string {
  return `: ${text.replace(/[\r\n]+/g, " ")}\n\n`;
}

/**
 * A ReadableStream of the generator's text; cancelling it (the client went away) stops the
 * generator.
 */
export function textStream(gen: AsyncGenerator<string>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        for (;;) {
          const next = await gen.next();
          if (next.done) return controller.close();
          if (next.value !== "") return controller.enqueue(encoder.encode(next.value));
        }
      } catch (e) {
        controller.error(e);
      }
    },
    async cancel() {
      await gen.return(undefined);
    },
  });
}
