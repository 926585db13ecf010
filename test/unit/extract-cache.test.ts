// extractCached: what is cached, under which key, and what a broken cache does (src/extract/cache.ts).
import { describe, expect, it } from "vitest";
import type { CachedExtraction, ExtractionCache } from "../../src/core/ports.ts";
import { type Extractor, extractCached, isCacheableFailure } from "../../src/extract/cache.ts";
import { ExtractionDependencyMissingError } from "../../src/extract/errors.ts";
import { extractText } from "../../src/extract/extract.ts";
import { MemoryExtractionCache } from "../../src/store/memory-extractions.ts";
import { loadFixture } from "../fixtures/load.ts";

const enc = new TextEncoder();

function counting(calls: unknown[], inner: Extractor = extractText): Extractor {
  return async (a, o) => {
    calls.push(a);
    return inner(a, o);
  };
}

describe("extractCached", () => {
  it("extracts once, then answers from the cache with the same outcome", async () => {
    const cache = new MemoryExtractionCache();
    const calls: unknown[] = [];
    const a = await extractCached({
      attachment: loadFixture("text.pdf"),
      tenant: "t",
      cache,
      extract: counting(calls),
    });
    const b = await extractCached({
      attachment: loadFixture("text.pdf"),
      tenant: "t",
      cache,
      extract: counting(calls),
    });
    expect(calls).toHaveLength(1);
    expect([a.cached, b.cached]).toEqual([false, true]);
    expect(b.outcome).toEqual(a.outcome);
    expect(a.key).toMatch(/^[0-9a-f]{64}\/pdf\/p50\.c200000\./);
    expect(a.digest).toBe(a.key!.slice(0, 64));
  });

  it("hands the extractor decoded bytes (base64 is decoded once) and keeps text sources as text", async () => {
    const calls: unknown[] = [];
    const pdf = loadFixture("text.pdf");
    await extractCached({
      attachment: {
        type: "base64",
        media_type: "application/pdf",
        data: Buffer.from(pdf.data as Uint8Array).toString("base64"),
      },
      tenant: "t",
      extract: counting(calls),
    });
    expect((calls[0] as { data: unknown }).data).toBeInstanceOf(Uint8Array);
    const text = { type: "text" as const, media_type: "text/plain", data: "lone \ud800 stays" };
    const out = await extractCached({ attachment: text, tenant: "t", extract: counting(calls) });
    expect(calls[1]).toBe(text);
    expect(out.outcome).toMatchObject({ ok: true, result: { text: "lone \ud800 stays" } });
  });

  it("keys by what changes the text: limits, the format the bytes are read as, the charset", async () => {
    const cache = new MemoryExtractionCache();
    const html = enc.encode("<p>Hello &amp; welcome</p>");
    const asHtml = await extractCached({
      attachment: { data: html, media_type: "text/html" },
      tenant: "t",
      cache,
    });
    const asText = await extractCached({
      attachment: { data: html, media_type: "text/plain" },
      tenant: "t",
      cache,
    });
    expect(asHtml.key).not.toBe(asText.key);
    expect(asHtml.outcome).toMatchObject({ ok: true, result: { text: "Hello & welcome" } });
    expect(asText.outcome).toMatchObject({
      ok: true,
      result: { text: "<p>Hello &amp; welcome</p>" },
    });
    const latin = await extractCached({
      attachment: { data: html, media_type: "text/plain; charset=iso-8859-1" },
      tenant: "t",
      cache,
    });
    expect(latin.key).not.toBe(asText.key);
    const fewer = await extractCached({
      attachment: loadFixture("multipage.pdf"),
      options: { max_pages: 2 },
      tenant: "t",
      cache,
    });
    const all = await extractCached({
      attachment: loadFixture("multipage.pdf"),
      tenant: "t",
      cache,
    });
    expect(fewer.key).not.toBe(all.key);
    expect(all.cached).toBe(false);
  });

  it("caches failures of the bytes (corrupt, encrypted, empty) but not too_large, a missing dependency or an unsupported format", async () => {
    const cache = new MemoryExtractionCache();
    for (const file of ["encrypted.pdf", "corrupt.pdf", "scanned.pdf"]) {
      await extractCached({ attachment: loadFixture(file), tenant: "t", cache });
      expect(
        (await extractCached({ attachment: loadFixture(file), tenant: "t", cache })).cached,
        file,
      ).toBe(true);
    }
    const size = cache.size;
    const big = await extractCached({
      attachment: loadFixture("text.pdf"),
      options: { max_bytes: 10 },
      tenant: "t",
      cache,
    });
    expect(big.outcome).toMatchObject({ ok: false, error: { reason: "too_large" } });
    await extractCached({ attachment: loadFixture("legacy.doc"), tenant: "t", cache });
    const missing: Extractor = async () =>
      Promise.reject(new ExtractionDependencyMissingError("pdf", "pdf_engine", "no pdf.js"));
    const dep = await extractCached({
      attachment: loadFixture("multipage.pdf"),
      options: { max_pages: 3 },
      tenant: "t",
      cache,
      extract: missing,
    });
    expect(dep.outcome).toMatchObject({
      ok: false,
      error: { type: "extraction_dependency_missing" },
    });
    expect(cache.size).toBe(size);
    expect(
      isCacheableFailure({
        type: "extraction_failed",
        reason: "too_large",
        message: "",
        format: "pdf",
      }),
    ).toBe(false);
  });

  it("a malformed attachment is an outcome, invalid options are the caller's bug", async () => {
    const bad = await extractCached({
      attachment: { type: "base64", media_type: "application/pdf", data: "not*base64" },
      tenant: "t",
    });
    expect(bad).toMatchObject({
      outcome: { ok: false, error: { type: "extraction_failed", reason: "corrupt" } },
      key: null,
      digest: null,
      bytes: 0,
    });
    await expect(
      extractCached({
        attachment: loadFixture("text.pdf"),
        options: { max_pages: 0 },
        tenant: "t",
      }),
    ).rejects.toMatchObject({ type: "invalid_argument" });
    const unexpected: Extractor = async () => Promise.reject(new TypeError("bug"));
    await expect(
      extractCached({ attachment: loadFixture("text.pdf"), tenant: "t", extract: unexpected }),
    ).rejects.toThrow("bug");
  });

  it("survives a cache that cannot be read or written, and treats an unreadable entry as a miss", async () => {
    const down = (which: "get" | "put"): ExtractionCache => {
      const inner = new MemoryExtractionCache();
      return {
        getExtraction:
          which === "get"
            ? async () => Promise.reject(new Error("down"))
            : (t, k) => inner.getExtraction(t, k),
        putExtraction:
          which === "put"
            ? async () => Promise.reject(new Error("down"))
            : (t, k, v) => inner.putExtraction(t, k, v),
      };
    };
    for (const which of ["get", "put"] as const) {
      const out = await extractCached({
        attachment: loadFixture("text.pdf"),
        tenant: "t",
        cache: down(which),
      });
      expect(out).toMatchObject({
        outcome: { ok: true },
        cached: false,
        cache_error: which === "get" ? "read" : "write",
      });
    }
    const garbage: ExtractionCache = {
      getExtraction: async () => ({ nonsense: true }) as unknown as CachedExtraction,
      putExtraction: async () => {},
    };
    expect(
      (await extractCached({ attachment: loadFixture("text.pdf"), tenant: "t", cache: garbage }))
        .cached,
    ).toBe(false);
  });
});
