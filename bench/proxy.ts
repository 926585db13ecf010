/**
 * What the proxy adds to a call, measured against the same work without it (interleaved, same run):
 * - a streamed answer watched for our tool (parse every event, remap indices, accumulate the answer) against
 *   reading the same stream and forwarding each event untouched, per format, for a long answer;
 * - building a recall hop's request on the ~1 MB, 40-turn request of the transform bench (one scan, one
 *   splice) against JSON.parse + JSON.stringify of that request.
 */
import { anthropicDialect } from "../src/proxy/anthropic.ts";
import type { Dialect } from "../src/proxy/dialect.ts";
import { openaiChatDialect } from "../src/proxy/openai-chat.ts";
import { openaiResponsesDialect } from "../src/proxy/openai-responses.ts";
import { readSse } from "../src/proxy/sse.ts";
import {
  anthropicEvents,
  anthropicMessage,
  chatCompletion,
  chatEvents,
  response,
  responseEvents,
} from "../test/support/providers.ts";
import { fmt, pairedMedians } from "./lib/stats.ts";
import { composeRequest } from "./transform.ts";

function stream(events: readonly string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let i = 0;
  return new ReadableStream({
    pull(c) {
      if (i >= events.length) return c.close();
      c.enqueue(encoder.encode(events[i++]!));
    },
  });
}

/** A long answer: many short text deltas, as a model streams them. */
function longAnswer(format: Dialect["format"], deltas: number): string[] {
  const pieces = Array.from({ length: deltas }, (_, i) => `word${i} `);
  if (format === "anthropic") {
    const [start, ping, blockStart, , , stop, delta, end] = anthropicEvents(
      anthropicMessage("m", [{ text: "x" }], { input: 1, output: 1 }),
    );
    const ev = (t: string) =>
      `event: content_block_delta\ndata: ${JSON.stringify({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: t } })}\n\n`;
    return [start!, ping!, blockStart!, ...pieces.map(ev), stop!, delta!, end!];
  }
  if (format === "openai-chat") {
    const all = chatEvents(chatCompletion("c", [{ text: "x" }], { input: 1, output: 1 }));
    const first = all[0]!;
    const base = JSON.parse(first.slice(6)) as Record<string, unknown>;
    const ev = (t: string) =>
      `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: t }, logprobs: null, finish_reason: null }] })}\n\n`;
    return [first, ...pieces.map(ev), ...all.slice(-3)];
  }
  const all = responseEvents(response("r", [{ text: "x" }], { input: 1, output: 1 }));
  const head = all.slice(0, 4);
  const tail = all.slice(-4);
  let seq = 4;
  const ev = (t: string) =>
    `event: response.output_text.delta\ndata: ${JSON.stringify({ type: "response.output_text.delta", item_id: "msg_r_1", output_index: 0, content_index: 0, delta: t, logprobs: [], sequence_number: seq++ })}\n\n`;
  const body = pieces.map(ev);
  const renumber = (e: string) =>
    e.replace(/"sequence_number":\d+/, () => `"sequence_number":${seq++}`);
  return [...head, ...body, ...tail.map(renumber)];
}

async function drain(events: readonly string[], watch: Dialect | null): Promise<number> {
  const merger = watch?.stream(3);
  merger?.begin(0);
  let bytes = 0;
  for await (const ev of readSse(stream(events)))
    bytes += (merger === undefined ? ev.raw : merger.feed(ev)).length;
  return bytes;
}

export async function benchProxy(rounds = 20): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const d of [anthropicDialect, openaiChatDialect, openaiResponsesDialect]) {
    const events = longAnswer(d.format, 4000);
    const [watched, plain] = await pairedMedians(
      () => drain(events, d),
      () => drain(events, null),
      rounds,
    );
    out[`${d.format}_stream_ratio`] = watched / plain;
    console.log(
      `${d.format.padEnd(17)} ${events.length} events · forwarded as read ${fmt(plain)} ms · watched for recall ${fmt(watched)} ms (ratio ${(watched / plain).toFixed(2)}, ${fmt((watched * 1000) / events.length)} µs/event)`,
    );
  }
  const request = composeRequest();
  const answer = anthropicMessage(
    "m",
    [{ call: "recall_tool_result", id: "toolu_r", input: { mem_id: "trm_0" } }],
    { input: 1, output: 1 },
  );
  const hops = [
    { answer, results: [{ id: "toolu_r", content: "x".repeat(20_000), is_error: false }] },
  ];
  const [hop, base] = await pairedMedians(
    () => anthropicDialect.nextRequest(request, hops),
    () => JSON.stringify(JSON.parse(request)),
    rounds,
  );
  out.hop_request_ratio = hop / base;
  console.log(
    `hop request       ${(request.length / 1e6).toFixed(2)} MB · parse+stringify ${fmt(base)} ms · next hop's request ${fmt(hop)} ms (ratio ${(hop / base).toFixed(2)})`,
  );
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) await benchProxy();
