/**
 * A Chat stream's usage, asked for upstream on the client's behalf: asked only of a streamed request that
 * says nothing of it, and kept out of the client's stream (the usage chunk dropped, the `usage: null` of
 * every other chunk taken out), everything else passing as it came.
 */
import { describe, expect, it } from "vitest";
import { parseJsonSpans } from "../../src/core/json/scan.ts";
import { askStreamUsage, withoutUsage } from "../../src/proxy/stream-usage.ts";

const ask = (body: unknown) => {
  const raw = JSON.stringify(body);
  const edit = askStreamUsage(parseJsonSpans(raw));
  return edit === null ? null : JSON.parse(raw.slice(0, edit.at) + edit.text + raw.slice(edit.at));
};

describe("asking upstream", () => {
  it("asks a streamed request that says nothing of usage", () => {
    expect(ask({ model: "gpt-5.4", stream: true, messages: [] })).toEqual({
      stream_options: { include_usage: true },
      model: "gpt-5.4",
      stream: true,
      messages: [],
    });
  });

  it("leaves a request alone when it is not streamed or sets stream_options itself", () => {
    expect(ask({ model: "m", messages: [] })).toBeNull();
    expect(ask({ model: "m", stream: "true", messages: [] })).toBeNull();
    expect(ask({ stream: true, stream_options: { include_usage: false } })).toBeNull();
    expect(ask({ stream: true, stream_options: null })).toBeNull();
    expect(ask([1, 2])).toBeNull();
  });
});

describe("the client's stream", () => {
  const ev = (data: string) => ({ raw: `data: ${data}\n\n`, data });

  it("drops the usage chunk and takes the null usage out of the others", () => {
    const usage = ev('{"id":"c","choices":[],"usage":{"prompt_tokens":3}}');
    expect(withoutUsage(usage.raw, usage.data)).toBe("");
    const chunk = ev('{"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}],"usage":null}');
    expect(withoutUsage(chunk.raw, chunk.data)).toBe(
      'data: {"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n',
    );
  });

  it("passes everything else as it came, byte for byte", () => {
    for (const e of [
      ev("[DONE]"),
      ev('{"id":"c","choices":[{"index":0,"delta":{"content":"the word \\"usage\\""}}]}'),
      ev("not json usage"),
      { raw: ": a comment\n\n", data: "" },
    ])
      expect(withoutUsage(e.raw, e.data)).toBe(e.raw);
  });
});
