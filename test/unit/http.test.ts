import { describe, expect, it } from "vitest";
import { bearerKey, parseApiKeys, tenantOf } from "../../src/http/auth.ts";
import { parseJsonBody, readBytes, readText } from "../../src/http/body.ts";
import { passThroughSummary, summaryHeader } from "../../src/http/summary.ts";

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
  it("maps keys to tenants, trimming entries split by commas or newlines", async () => {
    const keys = await parseApiKeys("acme:k1, globex:k:2\nacme:k3", () => {});
    expect(await tenantOf(keys, "k1")).toBe("acme");
    expect(await tenantOf(keys, "k:2")).toBe("globex"); // a key may contain ":"; the tenant may not
    expect(await tenantOf(keys, "k3")).toBe("acme");
    expect(await tenantOf(keys, "k")).toBeNull();
    expect(await tenantOf(keys, "k1 ")).toBeNull();
  });

  it("drops malformed and ambiguous entries, warning by position only", async () => {
    const warnings: string[] = [];
    const keys = await parseApiKeys(":nokey,notenant,a b:k,ok:good,x:dup,y:dup,z:", (w) =>
      warnings.push(w),
    );
    expect(keys.map((k) => k.tenant)).toEqual(["ok"]);
    expect(warnings).toHaveLength(6);
    expect(warnings.join()).not.toMatch(/nokey|good|dup/);
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
