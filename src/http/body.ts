/**
 * Reading a request body under a byte limit. A declared Content-Length over the limit is refused before
 * reading; a declared one within it is read in one native call (HTTP framing delivers exactly that many
 * bytes); a body without one is read as a stream and cut off at the first chunk past the limit, so an
 * oversize upload never sits whole in the isolate's 128 MB. About two copies of a body are alive at once
 * (its bytes or pieces, and the string).
 */
import { OffloadError } from "../errors.ts";

export const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;

function tooLarge(limit: number): OffloadError {
  return new OffloadError(
    "payload_too_large",
    `the request body is over the limit of ${limit} bytes`,
  );
}

async function* chunks(request: Request, limit: number): AsyncGenerator<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
  if (request.body === null) return;
  const reader = request.body.getReader();
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      size += value.byteLength;
      if (size > limit) throw tooLarge(limit);
      yield value;
    }
  } finally {
    // Stops the upload when we leave early (over the limit, or an error downstream).
    await reader.cancel().catch(() => {});
  }
}

/**
 * A body whose length is declared (and within the limit) is read in one native call: the runtime
 * delivers exactly the declared bytes, and a chunk-by-chunk loop costs milliseconds of CPU on a
 * body of a few hundred KB. Null when the length is not declared.
 */
async function declared(request: Request, limit: number): Promise<Uint8Array | null> {
  const length = request.headers.get("content-length");
  if (length === null || request.body === null) return null;
  if (Number(length) > limit) throw tooLarge(limit);
  const bytes = new Uint8Array(await request.arrayBuffer());
  if (bytes.byteLength > limit) throw tooLarge(limit);
  return bytes;
}

export async function readBytes(request: Request, limit: number): Promise<Uint8Array> {
  const whole = await declared(request, limit);
  if (whole !== null) return whole;
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of chunks(request, limit)) {
    parts.push(chunk);
    size += chunk.byteLength;
  }
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/**
 * The body as a stream under the same limit, for parsers that read a stream themselves (multipart): the
 * bytes are never all held here as well. `error()` is the limit's error once the stream was cut off, so the
 * caller can answer 413 whatever the parser made of the cut.
 */
export function limitedBody(
  request: Request,
  limit: number,
): { stream: ReadableStream<Uint8Array>; error(): OffloadError | undefined } {
  const it = chunks(request, limit);
  let failure: OffloadError | undefined;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await it.next();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (e) {
        if (e instanceof OffloadError) failure = e;
        controller.error(e);
      }
    },
    async cancel() {
      await it.return(undefined);
    },
  });
  return { stream, error: () => failure };
}

/** UTF-8 text exactly as sent (a byte-order mark is kept, not stripped); invalid UTF-8 is a 400. */
export async function readText(request: Request, limit: number): Promise<string> {
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  const whole = await declared(request, limit);
  if (whole !== null) {
    try {
      return decoder.decode(whole);
    } catch {
      throw new OffloadError("invalid_json", "the request body is not valid UTF-8");
    }
  }
  const pieces: string[] = [];
  try {
    for await (const chunk of chunks(request, limit))
      pieces.push(decoder.decode(chunk, { stream: true }));
    pieces.push(decoder.decode());
  } catch (e) {
    if (e instanceof OffloadError) throw e;
    throw new OffloadError("invalid_json", "the request body is not valid UTF-8");
  }
  return pieces.join("");
}

/** Parse a small JSON control body (recall, config); the message never echoes the body. */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === "")
    throw new OffloadError("invalid_json", "the request body is empty; send a JSON object");
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new OffloadError(
      "invalid_json",
      `the request body is not valid JSON (${e instanceof SyntaxError ? e.message.slice(0, 120) : "parse error"})`,
    );
  }
}
