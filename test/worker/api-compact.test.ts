import { createExecutionContext, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import {
  call,
  catalog,
  compactPath,
  conversation,
  expectError,
  KEYS,
  memIdIn,
  nextTurn,
  ON,
  request,
  sid,
  summary,
} from "./helpers.ts";

const encoder = new TextEncoder();

async function compactText(
  session: string,
  body: string,
  config: object = ON,
): Promise<{ text: string; res: Response }> {
  const res = await call(compactPath(session), { body, config });
  expect(res.status).toBe(200);
  return { text: await res.text(), res };
}

describe("POST /v1/sessions/:id/compact", () => {
  it("with everything off returns the very same bytes, unparsed (odd spacing, escapes, even invalid UTF-8)", async () => {
    const session = sid("off");
    const pretty = `  {\n "model" : "claude-opus-4-5",\t"messages":[{"role":"user","content":"caf\\u00e9 ☕"}] }  \n`;
    const res = await call(compactPath(session), { body: pretty });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(pretty);
    expect(summary(res)).toMatchObject({ enabled: false, changed: false, results: 0 });

    const bytes = new Uint8Array([
      ...encoder.encode('{"messages":"'),
      0xff,
      0xfe,
      ...encoder.encode('"}'),
    ]);
    const raw = await call(compactPath(session), { body: bytes });
    expect(new Uint8Array(await raw.arrayBuffer())).toEqual(bytes);

    const big = JSON.stringify(conversation());
    expect((await compactText(session, big, {})).text).toBe(big);
  });

  it("offloads a large settled result, declares the recall tool, and says so in x-offload-summary", async () => {
    const session = sid("on");
    const body = JSON.stringify(conversation());
    const { text, res } = await compactText(session, body);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const out = JSON.parse(text) as {
      messages: { content: { content?: string }[] }[];
      tools: { name: string }[];
    };
    const stub = out.messages[2]!.content[0]!.content!;
    expect(stub).toContain(memIdIn(stub));
    expect(stub.length).toBeLessThan(3000);
    expect(out.tools.map((t) => t.name)).toEqual(["dump", "recall_tool_result"]);
    const s = summary(res);
    expect(s).toMatchObject({
      enabled: true,
      offload: true,
      changed: true,
      results: 2,
      offloaded: 1,
      kept: 1,
      new_decisions: 1,
      recall_tool: "added",
      errors: [],
      errors_total: 0,
    });
    expect(s.tokens_after).toBeLessThan(s.tokens_before / 5);
    expect(s.saved_tokens).toBe(s.tokens_before - s.tokens_after);
    expect(s.saved_usd).toBeGreaterThan(0);
    // What follows the stubbed result is the client's bytes, untouched.
    const tail = body.slice(body.indexOf(',{"role":"assistant","content":[{"type":"text"'));
    expect(text.endsWith(tail)).toBe(true);
  });

  it("declares the recall tool in a system message only for a caller that sends the beta (x-offload-sends-betas)", async () => {
    const body = JSON.stringify({ ...conversation(), model: "claude-opus-5-5" });
    type Out = { messages: { role: string; content: unknown }[]; tools: { name: string }[] };
    const inline = await call(compactPath(sid("betas")), {
      body,
      config: ON,
      headers: { "x-offload-sends-betas": "true" },
    });
    expect(inline.status).toBe(200);
    const a = (await inline.json()) as Out;
    expect(a.tools.map((t) => t.name)).toEqual(["dump"]);
    // Right after the user message that holds the stub: the prefix before it stays as the client sent it.
    expect(a.messages[3]).toMatchObject({
      role: "system",
      content: [{ type: "tool_addition", tool: { definition: { name: "recall_tool_result" } } }],
    });
    expect(summary(inline)).toMatchObject({
      offloaded: 1,
      recall_tool: "added",
      anthropic_beta: ["inline-tools-2026-09-15"],
    });
    // Without the promise, the same turn declares it in `tools` and needs no beta.
    const plain = await call(compactPath(sid("no-betas")), { body, config: ON });
    const b = (await plain.json()) as Out;
    expect(b.tools.map((t) => t.name)).toEqual(["dump", "recall_tool_result"]);
    expect(b.messages.some((m) => m.role === "system")).toBe(false);
    expect(summary(plain).anthropic_beta).toBeUndefined();
    await expectError(
      await call(compactPath(sid("bad-betas")), {
        body,
        config: ON,
        headers: { "x-offload-sends-betas": "yes please" },
      }),
      400,
      "invalid_argument",
      "x-offload-sends-betas",
    );
  });

  it("is sticky and byte-identical across turns, whether the client sends the full or the compacted history", async () => {
    const session = sid("sticky");
    const full1 = conversation();
    const out1 = (await compactText(session, JSON.stringify(full1))).text;
    // Idempotent: the compacted request compacts to itself.
    expect((await compactText(session, out1)).text).toBe(out1);

    const fromFull = (await compactText(session, JSON.stringify(nextTurn(full1, 3)))).text;
    const fromCompacted = (
      await compactText(session, JSON.stringify(nextTurn(JSON.parse(out1), 3)))
    ).text;
    expect(fromCompacted).toBe(fromFull);
    // The stubbed result renders with the same bytes as on the first turn (the cached prefix survives).
    const prefix = out1.slice(0, out1.indexOf('{"role":"assistant","content":[{"type":"text"'));
    expect(fromFull.startsWith(prefix)).toBe(true);

    const out3 = await call(compactPath(session), {
      body: JSON.stringify(nextTurn(nextTurn(full1, 3), 4)),
      config: ON,
    });
    expect(summary(out3)).toMatchObject({ offloaded: 1, recall_tool: "added" });
    expect((await out3.text()).startsWith(prefix)).toBe(true);
  });

  it("takes the size-only path when offload is off (head preview, body still ledgered)", async () => {
    const session = sid("size-only");
    const big = "line of log output\n".repeat(800);
    const res = await call(compactPath(session), {
      body: conversation(big),
      config: { tool_result_compaction_enabled: true },
    });
    const out = JSON.parse(await res.text()) as {
      messages: { content: { content?: string }[] }[];
      tools: unknown[];
    };
    const shortened = out.messages[2]!.content[0]!.content!;
    expect(shortened.length).toBeLessThan(big.length / 3);
    expect(out.tools).toHaveLength(1);
    expect(summary(res)).toMatchObject({ compacted: 1, offloaded: 0, recall_tool: "none" });
    const recall = await call(`/v1/sessions/${session}/recall`, {
      body: { mem_id: memIdIn(shortened), offset: 0, max_chars: 19 },
    });
    expect(((await recall.json()) as { content: string }).content).toContain("line of log output");
  });

  it("layers config: deployment vars, then the session (PUT), then the request header", async () => {
    const session = sid("layers");
    const body = JSON.stringify(conversation());
    const app = createApp();
    const deployed = { ...env, OFFLOAD_DEFAULT_CONFIG: JSON.stringify(ON) };
    const viaApp = (init: Parameters<typeof request>[1]) =>
      app.fetch(request(compactPath(session), init), deployed, createExecutionContext());

    expect(summary(await viaApp({ body })).offloaded).toBe(1); // deployment default on
    const off = await viaApp({ body, config: { tool_result_compaction_enabled: false } }); // request header wins
    expect(await off.text()).toBe(body);

    const other = sid("layers-session");
    const put = await call(`/v1/sessions/${other}/config`, {
      method: "PUT",
      body: { ...ON, keep_last_n: 0 },
    });
    expect(put.status).toBe(200);
    expect(await put.json()).toMatchObject({
      session: other,
      config: { ...ON, tool_result_compaction_keep_last_n: 0 },
      effective_config: { tool_result_compaction_keep_last_n: 0 },
    });
    const sessionOn = await call(compactPath(other), { body });
    expect(summary(sessionOn)).toMatchObject({ enabled: true, offloaded: 1 });
    const headerOff = await call(compactPath(other), {
      body,
      config: { tool_result_compaction_enabled: false },
    });
    expect(await headerOff.text()).toBe(body);
  });

  it("refuses bad JSON, bad config headers and bad session ids with 400; passes shapes it cannot read through, naming the path", async () => {
    const session = sid("bad");
    await expectError(
      await call(compactPath(session), { body: '{"messages": [', config: ON }),
      400,
      "invalid_json",
    );
    await expectError(
      await call(compactPath(session), { body: new Uint8Array([0x7b, 0xff, 0x7d]), config: ON }),
      400,
      "invalid_json",
    );
    // A bad escape in a key is found while the key is read (not a SyntaxError, not a 500).
    await expectError(
      await call(compactPath(session), { body: '{"messages": [], "\\q": 1}', config: ON }),
      400,
      "invalid_json",
    );
    const unpaired = {
      model: "claude-opus-4-5",
      messages: [
        { role: "user", content: [{ type: "tool_result", tool_use_id: "nope", content: "x" }] },
      ],
    };
    const left = await call(compactPath(session), { body: unpaired, config: ON });
    expect(left.status).toBe(200);
    expect(await left.text()).toBe(JSON.stringify(unpaired));
    expect(summary(left).errors).toEqual([
      {
        code: "unplaced",
        message: expect.stringContaining("passed through as it is"),
        path: "messages[0].content[0].tool_use_id",
      },
    ]);
    const unread = await call(compactPath(session), { body: { messages: "x" }, config: ON });
    expect(unread.status).toBe(200);
    expect(await unread.text()).toBe('{"messages":"x"}');
    expect(summary(unread)).toMatchObject({
      changed: false,
      errors: [{ code: "invalid_request", path: "messages" }],
      errors_total: 1,
    });
    await expectError(
      await call(compactPath(session), {
        body: "{}",
        headers: { "x-offload-config": "{not json" },
      }),
      400,
      "invalid_json",
      "x-offload-config",
    );
    await expectError(
      await call(compactPath(session), {
        body: "{}",
        config: { tool_result_compaction_enabled: "yes" },
      }),
      400,
      "invalid_config",
      "x-offload-config.tool_result_compaction_enabled",
    );
    await expectError(
      await call(compactPath(session), {
        body: "{}",
        config: { tool_result_compaction_enabeld: true },
      }),
      400,
      "invalid_config",
      "x-offload-config.tool_result_compaction_enabeld",
    );
    await expectError(
      await call(compactPath("bad%20id"), { body: "{}" }),
      400,
      "invalid_argument",
      "session",
    );
    await expectError(
      await call(compactPath(session, "gemini"), { body: "{}" }),
      400,
      "invalid_argument",
      "format",
    );
  });

  it("compacts the OpenAI formats too (format=openai-chat, openai-responses)", async () => {
    const big = JSON.stringify({
      rows: Array.from({ length: 3000 }, (_, i) => ({ id: i, name: `row-${i}` })),
    });
    const chat = {
      model: "gpt-4.1",
      messages: [
        { role: "user", content: "go" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "dump", arguments: "{}" } }],
        },
        { role: "tool", tool_call_id: "c1", content: big },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c2", type: "function", function: { name: "dump", arguments: "{}" } }],
        },
        { role: "tool", tool_call_id: "c2", content: "ok" },
      ],
    };
    const res = await call(compactPath(sid("chat"), "openai-chat"), { body: chat, config: ON });
    expect(res.status).toBe(200);
    const out = (await res.json()) as {
      messages: { content: unknown }[];
      tools: { function: { name: string } }[];
    };
    expect(JSON.parse(res.headers.get("x-offload-summary")!)).toMatchObject({
      format: "openai-chat",
      offloaded: 1,
    });
    expect(String(out.messages[2]!.content)).toContain("trm_");
    expect(out.tools.at(-1)!.function.name).toBe("recall_tool_result");
    const responses = {
      model: "gpt-4.1",
      input: [
        { role: "user", content: "go" },
        { type: "function_call", call_id: "c1", name: "dump", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: big },
        { type: "function_call", call_id: "c2", name: "dump", arguments: "{}" },
        { type: "function_call_output", call_id: "c2", output: "ok" },
      ],
    };
    const r2 = await call(compactPath(sid("resp"), "openai-responses"), {
      body: responses,
      config: ON,
    });
    expect(r2.status).toBe(200);
    expect(JSON.parse(r2.headers.get("x-offload-summary")!)).toMatchObject({
      format: "openai-responses",
      offloaded: 1,
    });
  });

  it("answers 413 over the body limit, declared or streamed, before buffering it", async () => {
    const app = createApp({ maxBodyBytes: 1000 });
    const send = (body: BodyInit, headers: Record<string, string> = {}) =>
      app.fetch(request(compactPath(sid("big")), { body, headers }), env, createExecutionContext());
    await expectError(await send("x".repeat(1001)), 413, "payload_too_large");
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new Uint8Array(400));
      },
    });
    await expectError(await send(endless), 413, "payload_too_large");
    expect(pulled).toBeLessThan(10);
    const ok = await send("y".repeat(1000));
    expect(await ok.text()).toBe("y".repeat(1000));
  });

  it("enforces the default 32 MiB limit from the declared length", async () => {
    const res = await call(compactPath(sid("huge")), {
      body: "{}",
      headers: { "content-length": String(32 * 1024 * 1024 + 1) },
    });
    await expectError(res, 413, "payload_too_large");
  });

  it("refuses to compact without a deployment secret (500, no internals), but still passes through when off", async () => {
    const app = createApp({ log: () => {} });
    const noSecret = { ...env, OFFLOAD_SECRET: "" };
    const body = JSON.stringify(conversation());
    const on = await app.fetch(
      request(compactPath(sid("nosecret")), { body, config: ON }),
      noSecret,
      createExecutionContext(),
    );
    const err = await expectError(on, 500, "internal");
    expect(err.error.message).not.toContain(env.OFFLOAD_SECRET!);
    const off = await app.fetch(
      request(compactPath(sid("nosecret")), { body }),
      noSecret,
      createExecutionContext(),
    );
    expect(await off.text()).toBe(body);
  });

  it("keeps mem_ids stable per body within a session and distinct across sessions and tenants", async () => {
    const body = JSON.stringify(conversation(catalog(1600)));
    const a = memIdIn((await compactText(sid("mem-a"), body)).text);
    const b = memIdIn((await compactText(sid("mem-b"), body)).text);
    const globex = await call(compactPath(sid("mem-a")), { body, config: ON, key: KEYS.globex });
    expect(a).not.toBe(b);
    expect(memIdIn(await globex.text())).not.toBe(a);
  });
});
