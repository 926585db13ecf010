import { describe, expect, it } from "vitest";
import { compact, emptyReport } from "../../src/core/compact.ts";
import { bearerKey, parseApiKeys, presentedKey, tenantOf } from "../../src/http/auth.ts";
import { parseJsonBody, readBytes, readText } from "../../src/http/body.ts";
import { issuePath } from "../../src/http/errors.ts";
import {
  MAX_SUMMARY_HEADER_CHARS,
  passThroughSummary,
  summaryHeader,
  summaryOf,
} from "../../src/http/summary.ts";
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
  it("formats zod paths", () => {
    expect(issuePath("", ["a", 0, "b"])).toBe("a[0].b");
    expect(issuePath("query", ["limit"])).toBe("query.limit");
    expect(issuePath("", [])).toBe("");
  });

  it("keeps the summary header ASCII", () => {
    const header = summaryHeader({
      ...passThroughSummary("anthropic"),
      errors: [{ type: "storage_error", message: "échec ☕ \n" }],
      errors_total: 1,
    });
    expect(/^[\x20-\x7e]+$/.test(header)).toBe(true);
    expect(JSON.parse(header).errors[0].message).toBe("échec ☕ \n");
  });
});

describe("x-offload-summary is bounded", () => {
  it("cuts every echoed field and the header as a whole, keeping the totals", () => {
    const long = "m".repeat(5000);
    const report = {
      ...emptyReport("anthropic", true, true),
      model: long,
      priced_as: "☕".repeat(300),
    };
    const summary = summaryOf(
      {
        ...report,
        errors: Array.from({ length: 40 }, (_, i) => ({
          type: "storage_error" as const,
          tool_use_id: `toolu_${"x".repeat(100_000)}${i}`,
          message: long,
        })),
      },
      true,
      [{ type: "index_error", mem_id: "trm_".padEnd(100_000, "0"), message: long }],
    );
    const header = summaryHeader(summary);
    expect(header.length).toBeLessThanOrEqual(MAX_SUMMARY_HEADER_CHARS);
    expect(/^[\x20-\x7e]+$/.test(header)).toBe(true);
    const parsed = JSON.parse(header);
    expect(parsed.errors_total).toBe(41);
    expect(parsed.errors.length).toBeGreaterThan(0);
    expect(parsed.model.length).toBeLessThanOrEqual(257);
  });

  it("refuses a request whose model, call id or tool name is absurd, naming the field (400)", async () => {
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
    for (const [model, id, name, path] of cases)
      await expect(
        compact({ request: turn(model, id, name), session, store, config: ON }),
      ).rejects.toMatchObject({
        type: "invalid_request",
        status: 400,
        path: expect.stringMatching(path),
      });
    const fine = await compact({
      request: turn("m".repeat(256), `toolu_${"x".repeat(250)}`, "n".repeat(256)),
      session,
      store,
      config: ON,
    });
    expect(fine.report.model).toHaveLength(256);
  });
});
