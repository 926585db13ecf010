import { describe, expect, it } from "vitest";
import { adapterFor, compact } from "../../src/core/compact.ts";
import { parseJsonSpans } from "../../src/core/json/scan.ts";
import { emptyReport } from "../../src/core/turn/report.ts";
import type { Format } from "../../src/core/types.ts";
import { bearerKey, parseApiKeys, presentedKey, tenantOf } from "../../src/http/auth.ts";
import { parseJsonBody, readBytes, readText } from "../../src/http/body.ts";
import {
  MAX_SUMMARY_HEADER_CHARS,
  passThroughSummary,
  proxyPart,
  summaryHeader,
  summaryOf,
} from "../../src/http/summary.ts";
import { withProxy } from "../../src/proxy/loop-outcome.ts";
import { MemoryStore } from "../../src/store/memory.ts";

const post = (body: BodyInit | null, headers: Record<string, string> = {}) =>
  new Request("http://x/", { method: "POST", body, headers, duplex: "half" } as RequestInit);

function stream(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    pull(c) {
      if (i < chunks.length) c.enqueue(chunks[i++]!);
      else c.close();
    },
  });
}

describe("api keys", () => {
  const K1 = "key-one-0123456789";
  const K2 = "key:two-0123456789"; // a key may contain ":"; the tenant may not
  const K3 = "key-three-0123456789";

  it("maps keys to tenants, trimming entries split by commas or newlines", async () => {
    const keys = await parseApiKeys(`acme:${K1}, globex:${K2}\nacme:${K3}`, () => {});
    expect(await tenantOf(keys, K1)).toBe("acme");
    expect(await tenantOf(keys, K2)).toBe("globex");
    expect(await tenantOf(keys, K3)).toBe("acme");
    expect(await tenantOf(keys, "key")).toBeNull();
    expect(await tenantOf(keys, `${K1} `)).toBeNull(); // callers trim (presentedKey); the rule has no blanks
  });

  it("drops malformed and ambiguous entries, warning by position only", async () => {
    const warnings: string[] = [];
    const keys = await parseApiKeys(
      `:nokey-0123456789ab,notenant,a b:${K1},ok:${K3},x:dup-0123456789abc,y:dup-0123456789abc,z:`,
      (w) => warnings.push(w),
    );
    expect(keys.map((k) => k.tenant)).toEqual(["ok"]);
    expect(warnings).toHaveLength(6);
    expect(warnings.join()).not.toMatch(/nokey|three|dup/);
  });

  it("holds every key to one rule: 16–256 printable ASCII characters, no space, no comma", async () => {
    const warnings: string[] = [];
    const ok = "A1!#$%&'()*+-./:;<=>?@[]^_`{|}~".padEnd(16, "x");
    const bad = [
      "short",
      "has a space-0123456789",
      "tab\there-0123456789",
      "é-not-ascii-0123456",
      "k".repeat(257),
    ];
    const keys = await parseApiKeys(
      [`ok:${ok}`, ...bad.map((k, i) => `t${i}:${k}`)].join("\n"),
      (w) => warnings.push(w),
    );
    expect(keys.map((k) => k.tenant)).toEqual(["ok"]);
    expect(warnings).toHaveLength(bad.length);
    for (const w of warnings) expect(w).toContain("16–256 printable ASCII characters");
    expect(await tenantOf(keys, ok)).toBe("ok");
    for (const k of bad) expect(await tenantOf(keys, k)).toBeNull();
    expect(presentedKey(`  ${ok}\t`)).toBe(ok);
    expect(bearerKey(`Bearer ${ok}`)).toBe(ok);
  });

  it("reads the bearer key and says what is wrong with a bad header", () => {
    expect(bearerKey("Bearer abc")).toBe("abc");
    expect(bearerKey("bearer  abc ")).toBe("abc");
    for (const bad of [undefined, "", "Basic abc", "Bearer", "Bearer a b"])
      expect(() => bearerKey(bad)).toThrow(expect.objectContaining({ type: "unauthorized" }));
  });
});

describe("body reading", () => {
  const enc = new TextEncoder();

  it("decodes UTF-8 split across chunks, keeps a BOM, and refuses invalid UTF-8", async () => {
    const bytes = enc.encode('\ufeff{"a":"é😀"}');
    const chunks = [bytes.slice(0, 4), bytes.slice(4, 9), bytes.slice(9)];
    expect(await readText(post(stream(chunks)), 100)).toBe('\ufeff{"a":"é😀"}');
    await expect(readText(post(new Uint8Array([0x22, 0xc3, 0x22])), 100)).rejects.toMatchObject({
      type: "invalid_json",
      status: 400,
    });
  });

  it("stops reading at the first chunk past the limit, and trusts a declared length that is already over", async () => {
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled++;
        c.enqueue(new Uint8Array(64));
      },
    });
    await expect(readBytes(post(endless), 200)).rejects.toMatchObject({
      type: "payload_too_large",
      status: 413,
    });
    expect(pulled).toBeLessThanOrEqual(5);
    await expect(readBytes(post("x", { "content-length": "201" }), 200)).rejects.toMatchObject({
      status: 413,
    });
    expect(
      await readBytes(post(stream([new Uint8Array(100), new Uint8Array(100)])), 200),
    ).toHaveLength(200);
    expect(await readBytes(new Request("http://x/"), 10)).toHaveLength(0);
  });

  it("parses small JSON bodies with a 400 that does not echo them", () => {
    expect(parseJsonBody('{"a":1}')).toEqual({ a: 1 });
    expect(() => parseJsonBody("  ")).toThrow(expect.objectContaining({ type: "invalid_json" }));
    expect(() => parseJsonBody("{x")).toThrow(expect.objectContaining({ type: "invalid_json" }));
  });
});

describe("small helpers", () => {
  it("keeps the summary header ASCII", () => {
    const header = summaryHeader({
      ...passThroughSummary("anthropic"),
      errors: [{ code: "storage_error", message: "échec ☕ \n" }],
      errors_total: 1,
    });
    expect(/^[\x20-\x7e]+$/.test(header)).toBe(true);
    expect(JSON.parse(header).errors[0].message).toBe("échec ☕ \n");
  });
});

describe("x-offload-summary is bounded", () => {
  it("cuts every echoed field and the header as a whole, keeping the totals", () => {
    const long = "m".repeat(5000);
    const failure = (i: number) => ({
      id: `att_${i}`,
      path: `messages[${i}].content[0]${".x".repeat(50_000)}`,
      kind: "image" as const,
      action: "native" as const,
      sticky: false,
      turn: 1,
      format: "png",
      bytes: 10,
      native_tokens: 1,
      sent_tokens: 1,
      saved_tokens: 0,
      saved_usd: 0,
      reason: "ocr failed",
      error: {
        code: "extraction_failed" as const,
        reason: "low_confidence".repeat(1000),
        message: long,
      },
    });
    const report = {
      ...emptyReport("anthropic", true, true),
      tool_rules: Array.from({ length: 32 }, (_, i) => ({
        tool: `${"*".repeat(256)}${i}`,
        says: long,
        results: 1,
        kept: 1,
        compacted: 0,
        offloaded: 0,
      })),
      model: long,
      priced_as: "☕".repeat(300),
      attachments: {
        policy: "extract" as const,
        blocks: 30,
        replaced: 0,
        native: 30,
        failed: 30,
        new_decisions: 30,
        extracted: 30,
        native_tokens: 30,
        sent_tokens: 30,
        saved_tokens: 0,
        saved_usd: 0,
        estimate: "tiles",
        items: Array.from({ length: 30 }, (_, i) => failure(i)),
      },
      errors: [
        ...Array.from({ length: 20 }, (_, i) => ({
          code: "storage_error" as const,
          tool_use_id: `toolu_${"x".repeat(100_000)}${i}`,
          message: long,
        })),
        ...Array.from({ length: 20 }, (_, i) => ({
          code: "unplaced" as const,
          path: `input[${i}]${'["k"]'.repeat(20_000)}`,
          message: long,
        })),
      ],
    };
    const summary = {
      ...summaryOf(report, true, [
        { code: "index_error", mem_id: "trm_".padEnd(100_000, "0"), message: long },
      ]),
      proxy: {
        ...proxyPart(true, 3),
        hops: 4,
        recalls: 4,
        ending: "failed" as const,
        memos: 1,
      },
    };
    const header = summaryHeader(summary);
    expect(header.length).toBeLessThanOrEqual(MAX_SUMMARY_HEADER_CHARS);
    expect(/^[\x20-\x7e]+$/.test(header)).toBe(true);
    const parsed = JSON.parse(header);
    expect(parsed.errors_total).toBe(41);
    expect(parsed.errors.length).toBeGreaterThan(0);
    expect(parsed.model.length).toBeLessThanOrEqual(257);
    expect(parsed.attachments.failed).toBe(30);
    expect(parsed.attachments.failures.length).toBeGreaterThan(0);
    expect(parsed.proxy.ending).toBe("failed");
    expect(parsed.tool_rules.length).toBeLessThanOrEqual(8);
    for (const r of parsed.tool_rules) expect(r.tool.length).toBeLessThanOrEqual(65);
    for (const e of parsed.errors) expect(JSON.stringify(e).length).toBeLessThan(1000);
  });

  it("passes a request whose model, call id or tool name is absurd through unchanged, naming the field", async () => {
    const store = new MemoryStore();
    const session = { tenant: "t", session: "s" };
    const ON = { tool_result_compaction_enabled: true };
    const turn = (model: string, id: string, name: string) =>
      JSON.stringify({
        model,
        max_tokens: 10,
        messages: [
          { role: "user", content: "go" },
          { role: "assistant", content: [{ type: "tool_use", id, name, input: {} }] },
          { role: "user", content: [{ type: "tool_result", tool_use_id: id, content: "ok" }] },
        ],
      });
    const cases: [string, string, string, RegExp][] = [
      ["m".repeat(1_000_000), "toolu_1", "t", /^model$/],
      ["claude-sonnet-4-6", `toolu_${"x".repeat(100_000)}`, "t", /\.id$/],
      ["claude-sonnet-4-6", "toolu_1", "n".repeat(300), /\.name$/],
    ];
    for (const [model, id, name, path] of cases) {
      const request = turn(model, id, name);
      const out = await compact({ request, session, store, config: ON });
      // The provider judges the request; we neither refuse it nor carry the field along.
      expect(out.request).toBe(request);
      expect(out.changed).toBe(false);
      expect(out.report.model).toBeNull();
      expect(out.report.errors).toEqual([
        expect.objectContaining({ code: "invalid_request", path: expect.stringMatching(path) }),
      ]);
      const header = summaryHeader(summaryOf(out.report, out.changed, []));
      expect(header.length).toBeLessThan(1000);
    }
    const fine = await compact({
      request: turn("m".repeat(256), `toolu_${"x".repeat(250)}`, "n".repeat(256)),
      session,
      store,
      config: ON,
    });
    expect(fine.report.model).toHaveLength(256);
    expect(fine.report.errors.filter((e) => e.code === "invalid_request")).toEqual([]);
  });

  it("bounds the names and ids of every shape the adapters read (tools added mid-turn, Responses items)", async () => {
    const store = new MemoryStore();
    const long = "n".repeat(300);
    const ON = { tool_result_compaction_enabled: true };
    const anthropic = (block: object) => ({
      model: "claude-sonnet-4-6",
      max_tokens: 10,
      messages: [{ role: "user", content: [{ type: "text", text: "go" }, block] }],
    });
    const responses = (more: object) => ({ model: "gpt-4.1", input: "go", ...more });
    const cases: [Format, object, string][] = [
      [
        "anthropic",
        anthropic({
          type: "tool_addition",
          tool: { type: "tool_definition", definition: { name: long, input_schema: {} } },
        }),
        "messages[0].content[1].tool.definition.name",
      ],
      [
        "anthropic",
        { ...anthropic({ type: "text", text: "x" }), tools: [{ name: long }] },
        "tools[0].name",
      ],
      [
        "openai-responses",
        responses({
          input: [{ type: "additional_tools", tools: [{ type: "function", name: long }] }],
        }),
        "input[0].tools[0].name",
      ],
      [
        "openai-responses",
        responses({
          tools: [{ type: "namespace", name: "ns", tools: [{ type: "function", name: long }] }],
        }),
        "tools[0].tools[0].name",
      ],
      ["openai-responses", responses({ previous_response_id: long }), "previous_response_id"],
      [
        "openai-responses",
        responses({
          input: [{ type: "function_call", call_id: "c1", name: long, arguments: "{}" }],
        }),
        "input[0].name",
      ],
      [
        "openai-responses",
        responses({ input: [{ type: "function_call_output", call_id: long, output: "ok" }] }),
        "input[0].call_id",
      ],
    ];
    for (const [format, body, path] of cases) {
      const request = JSON.stringify(body);
      const out = await compact({ format, request, session: "s", store, config: ON });
      expect(out.request, path).toBe(request);
      expect(out.report.errors, path).toEqual([
        expect.objectContaining({ code: "invalid_request", path }),
      ]);
    }
  });

  it("reads a media block's absurd media type, source type or title as absent, leaving the block alone", () => {
    const huge = "x".repeat(100_000);
    const text = JSON.stringify({
      model: "claude-sonnet-4-6",
      max_tokens: 10,
      messages: [
        {
          role: "user",
          content: [
            {
              type: "document",
              title: huge,
              source: { type: "base64", media_type: huge, data: "JVBERi0=" },
            },
            {
              type: "image",
              source: { type: huge, media_type: "image/png", data: "iVBORw0KGgo=" },
            },
          ],
        },
      ],
    });
    const [doc, image] = adapterFor("anthropic").analyze(text, parseJsonSpans(text)).media!;
    expect(doc).toMatchObject({ source_type: "base64" });
    expect(doc!.media_type).toBeUndefined();
    expect(doc!.title).toBeUndefined();
    expect(image).toMatchObject({ source_type: "invalid", media_type: "image/png" });
  });
});

describe("x-offload-summary has one shape", () => {
  const keys = (o: object) => Object.keys(o).sort();

  it("the same members on every path: pass-through, a decided turn, shadow, proxied, with its hops", async () => {
    const store = new MemoryStore();
    const request = JSON.stringify({
      model: "claude-opus-4-5",
      messages: [
        { role: "user", content: "go" },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "dump", input: {} }] },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "t1", content: "x".repeat(70_000) }],
        },
        { role: "assistant", content: [{ type: "tool_use", id: "t2", name: "dump", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t2", content: "ok" }] },
      ],
    });
    const on = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };
    const live = await compact({ format: "anthropic", request, session: "a", store, config: on });
    const shadow = await compact({
      format: "anthropic",
      request,
      session: "b",
      store,
      config: { ...on, tool_result_offload_shadow: true },
    });
    const off = passThroughSummary("anthropic");
    const decided = summaryOf(live.report, live.changed, []);
    const shadowed = summaryOf(shadow.report, shadow.changed, []);
    expect(keys(decided)).toEqual(keys(off));
    expect(keys(shadowed)).toEqual(keys(off));
    expect(off).toMatchObject({ seq: null, proxy: null, attachments: null, tool_rules: [] });
    expect(off.note).toContain("off: tool_result_compaction_enabled is false");
    expect(decided.note).toBeNull();
    expect(shadowed.note).toMatch(/^shadow: would save \$\d+\.\d{4} on this call/);
    // The proxy's part: every member present, null until known.
    const before = proxyPart(true, 0);
    const after = withProxy(
      { ...decided, proxy: proxyPart(false, 0) },
      { hops: 1, recalls: 1, ending: "done", memos: [], usages: [] },
      false,
    ).proxy!;
    expect(keys(after)).toEqual(keys(before));
    expect(before).toMatchObject({ hops: null, recalls: null, ending: null, usd: null });
    expect(after).toMatchObject({ hops: 1, recalls: 1, ending: "done", usd: null });
  });
});
