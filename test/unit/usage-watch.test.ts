/**
 * The usage of an answer passed through untouched, read on the side of its stream: the bytes reach the
 * client as they came, whatever the chunking and line endings, and the usage is each API's final one.
 */
import { describe, expect, it } from "vitest";
import { turnUsage } from "../../src/core/billing.ts";
import { type usageOfEvent, watchStream } from "../../src/proxy/usage-watch.ts";

function chunked(text: string, size: number): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream({
    pull(c) {
      if (at >= bytes.length) return c.close();
      c.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}

async function watch(format: Parameters<typeof usageOfEvent>[0], text: string, size: number) {
  let seen: unknown = "not yet";
  const out = watchStream(chunked(text, size), format, async (u) => {
    seen = u;
  });
  const body = await new Response(out).text();
  return { body, usage: seen };
}

const anthropic = [
  'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"cache_creation":{"ephemeral_5m_input_tokens":150,"ephemeral_1h_input_tokens":50},"output_tokens":1}}}',
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"usage is fine"}}',
  'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":42}}',
  'event: message_stop\ndata: {"type":"message_stop"}',
].join("\n\n");
const chat = [
  'data: {"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}],"usage":null}',
  'data: {"id":"c","choices":[],"usage":{"prompt_tokens":5000,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":4096}}}',
  "data: [DONE]",
].join("\n\n");
const responses = [
  'event: response.created\ndata: {"type":"response.created","response":{"id":"r","usage":null}}',
  'event: response.completed\ndata: {"type":"response.completed","response":{"id":"r","usage":{"input_tokens":900,"input_tokens_details":{"cached_tokens":512},"output_tokens":30}}}',
].join("\n\n");

describe("usage read on the side of a passed-through stream", () => {
  for (const [format, text, tokens] of [
    [
      "anthropic",
      anthropic,
      { input: 10, cache_read: 3000, cache_write_5m: 150, cache_write_1h: 50, output: 42 },
    ],
    [
      "openai-chat",
      chat,
      { input: 904, cache_read: 4096, cache_write_5m: 0, cache_write_1h: 0, output: 7 },
    ],
    [
      "openai-responses",
      responses,
      { input: 388, cache_read: 512, cache_write_5m: 0, cache_write_1h: 0, output: 30 },
    ],
  ] as const)
    for (const [ending, size] of [
      ["\n", 7],
      ["\r\n", 3],
      ["\n", 100_000],
    ] as const)
      it(`${format}, ${JSON.stringify(ending)} line endings, ${size}-byte chunks`, async () => {
        const sent = `${text.replace(/\n/g, ending)}${ending}${ending}`;
        const { body, usage } = await watch(format, sent, size);
        expect(body).toBe(sent);
        expect(turnUsage(format, [usage], "m", "proxy")!.tokens).toEqual(tokens);
      });

  it("a stream cut before its usage reports what it saw", async () => {
    const { usage } = await watch("openai-chat", chat.split("\n\n")[0]!, 5);
    expect(turnUsage("openai-chat", [usage], "m", "proxy")).toBeNull();
  });
});
