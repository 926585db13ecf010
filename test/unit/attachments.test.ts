// The attachment policy of the turn transform (config attachment_policy), in plain Node with the in-memory store.
import { describe, expect, it } from "vitest";
import { imageTokens, PDF_PAGE_IMAGE_TOKENS } from "../../src/core/attachments/text.ts";
import { INLINE_REPLACEMENT_CHARS } from "../../src/core/attachments/types.ts";
import { compact as compactTurn } from "../../src/core/compact.ts";
import type { OffloadStore } from "../../src/core/ports.ts";
import { resolveModel } from "../../src/core/pricing.ts";
import type { SessionInput } from "../../src/core/session.ts";
import type { ResultRecord } from "../../src/core/types.ts";
import type { Extractor } from "../../src/extract/cache.ts";
import { ExtractionDependencyMissingError } from "../../src/extract/errors.ts";
import { extractText } from "../../src/extract/extract.ts";
import { bytesModelSource, type OcrEngine, type OcrOptions } from "../../src/extract/ocr.ts";
import { MAX_SUMMARY_HEADER_CHARS, summaryHeader, summaryOf } from "../../src/http/summary.ts";
import { compact } from "../../src/lib.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { fixture } from "../fixtures/build.ts";
import { png } from "../fixtures/image-writer.ts";
import { textPdf } from "../fixtures/pdf-writer.ts";
import { faultyStore, jsonBody } from "../support/requests.ts";

/** A request's text without cache markers (the anchor a history echoes back stays where it was). */
const unmarked = (r: unknown) =>
  String(r).replace(/,"cache_control":\{"type":"ephemeral"(,"ttl":"1h")?\}/g, "");

type Block = Record<string, unknown>;
type Msg = { role: "user" | "assistant"; content: string | Block[] };
type Req = {
  model: string;
  max_tokens: number;
  system?: unknown;
  tools?: unknown[];
  messages: Msg[];
};

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
const PDF = fixture("multipage.pdf").build(); // 5 pages, "Body text of page N."
const ENCRYPTED = fixture("encrypted.pdf").build();
const IMAGE = png(800, 600);

const EXTRACT = { tool_result_compaction_enabled: true, attachment_policy: "extract" };
const AFTER_FIRST = {
  tool_result_compaction_enabled: true,
  attachment_policy: "extract_after_first",
};

function pdfBlock(bytes: Uint8Array = PDF, extra: Block = {}): Block {
  return {
    type: "document",
    source: { type: "base64", media_type: "application/pdf", data: b64(bytes) },
    title: "report.pdf",
    ...extra,
  };
}
function imageBlock(bytes: Uint8Array = IMAGE): Block {
  return { type: "image", source: { type: "base64", media_type: "image/png", data: b64(bytes) } };
}

/** Turn 0: the user sends a PDF and a screenshot. */
function first(blocks: Block[] = [pdfBlock(), imageBlock()]): Req {
  return {
    model: "claude-opus-4-5",
    max_tokens: 512,
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "Summarise the report; the screenshot shows the error." },
          ...blocks,
        ],
      },
    ],
  };
}

/** One more exchange appended to whatever history the client holds. */
function next(history: Req, k: number): Req {
  return {
    ...history,
    messages: [
      ...history.messages,
      { role: "assistant", content: [{ type: "text", text: `answer ${k}` }] },
      { role: "user", content: `question ${k + 1}` },
    ],
  };
}

function counting(calls: string[], inner: Extractor = extractText): Extractor {
  return async (a, o) => {
    calls.push(String((a as { media_type?: string }).media_type));
    return inner(a, o);
  };
}

async function run(
  request: Req | string,
  store: OffloadStore,
  config: object,
  calls: string[] = [],
  session: SessionInput = "s1",
  extra: Partial<Parameters<typeof compact>[0]> = {},
) {
  const text = typeof request === "string" ? request : JSON.stringify(request);
  return compact({
    request: text,
    session,
    store,
    config,
    attachments: { extract: counting(calls) },
    ...extra,
  });
}

const parse = (s: string): Req => JSON.parse(s) as Req;
const blocksOf = (req: Req, m: number) => req.messages[m]!.content as Block[];

describe("attachment_policy native (the default)", () => {
  it("changes nothing, extracts nothing, reports nothing — also when the umbrella switch is off", async () => {
    const calls: string[] = [];
    const text = JSON.stringify(next(first(), 0));
    for (const config of [
      { tool_result_compaction_enabled: true },
      { attachment_policy: "extract" },
    ]) {
      const out = await run(text, new MemoryStore(), config, calls);
      expect(out.request).toBe(text);
      expect(out.report.attachments).toBeNull();
    }
    expect(calls).toEqual([]);
  });
});

describe('attachment_policy "extract"', () => {
  it("replaces a document by its text on the turn it arrives; the hot image stays native; tokens and dollars are reported", async () => {
    const calls: string[] = [];
    const store = new MemoryStore();
    const out = await run(first(), store, EXTRACT, calls);
    const req = parse(out.request as string);
    const [intro, doc, image] = blocksOf(req, 0);
    expect(intro).toEqual({
      type: "text",
      text: "Summarise the report; the screenshot shows the error.",
    });
    expect(doc!.type).toBe("text");
    expect(doc!.text).toMatch(
      /^\[attachment att_[0-9a-f]{24} document "report\.pdf": pdf, 5 pages, [\d,]+ bytes, sent on turn 0\. Its text, extracted by edge-offload, follows\.\]\n/,
    );
    expect(doc!.text).toContain("Body text of page 5.");
    expect(image).toEqual(imageBlock()); // hot: the model sees the pixels this turn
    expect(calls).toEqual(["application/pdf"]);

    const a = out.report.attachments!;
    expect(a).toMatchObject({
      policy: "extract",
      blocks: 2,
      replaced: 1,
      native: 1,
      failed: 0,
      new_decisions: 1,
      extracted: 1,
    });
    const [d, i] = a.items;
    expect(d).toMatchObject({
      kind: "document",
      action: "text",
      sticky: false,
      turn: 0,
      format: "pdf",
      cached: false,
    });
    // 5 pages natively: 5 page images + the text; as text: the text and a one-line header.
    expect(d!.native_tokens).toBeGreaterThan(5 * PDF_PAGE_IMAGE_TOKENS);
    expect(d!.saved_tokens).toBe(d!.native_tokens! - d!.sent_tokens!);
    expect(d!.saved_usd).toBeCloseTo(
      (d!.saved_tokens * resolveModel("claude-opus-4-5")!.input) / 1e6,
      9,
    );
    expect(i).toMatchObject({
      kind: "image",
      action: "native",
      native_tokens: imageTokens(800, 600),
      saved_tokens: 0,
    });
    expect(i!.reason).toMatch(/^hot/);
    expect(a.estimate).toContain("width×height/750");
    // The request totals count the blocks at their native estimate, and include the saving.
    expect(out.report.tokens_before - out.report.tokens_after).toBe(d!.saved_tokens);
    expect(out.report.saved_usd).toBeCloseTo(d!.saved_usd, 9);
  });

  it("next turn: the document is sticky (same bytes, not extracted again), the image becomes its placeholder", async () => {
    const calls: string[] = [];
    const store = new MemoryStore();
    const t0 = await run(first(), store, EXTRACT, calls);
    const t1 = await run(next(first(), 0), store, EXTRACT, calls);
    const req = parse(t1.request as string);
    const [, doc, image] = blocksOf(req, 0);
    expect(doc).toEqual(blocksOf(parse(t0.request as string), 0)[1]);
    expect(image!.type).toBe("text");
    expect(image!.text).toMatch(
      /^\[attachment att_[0-9a-f]{24} image: png, 800x600 px, [\d,]+ bytes, sent on turn 0\. The image itself is no longer included/,
    );
    expect(calls).toEqual(["application/pdf"]); // nothing parsed again, and a placeholder needs no extraction
    const [d, i] = t1.report.attachments!.items;
    expect(d).toMatchObject({ action: "text", sticky: true });
    expect(i).toMatchObject({
      action: "placeholder",
      sticky: false,
      native_tokens: imageTokens(800, 600),
    });
    expect(i!.sent_tokens).toBeLessThan(60);
  });

  it("is sticky across full and compacted histories, and idempotent", async () => {
    const store = new MemoryStore();
    const t0 = await run(first(), store, EXTRACT);
    const t1full = await run(next(first(), 0), store, EXTRACT);
    const t1compacted = await run(next(parse(t0.request as string), 0), store, EXTRACT);
    expect(t1compacted.request).toBe(t1full.request);
    const t2full = await run(next(next(first(), 0), 1), store, EXTRACT);
    const t2compacted = await run(next(parse(t1full.request as string), 1), store, EXTRACT);
    expect(t2compacted.request).toBe(t2full.request);

    // Compacting a compacted request changes nothing, and reports the same effect.
    const again = await run(t2full.request as string, store, EXTRACT);
    expect(again.changed).toBe(false);
    expect(again.request).toBe(t2full.request);
    expect(again.report.attachments).toMatchObject({ blocks: 2, replaced: 2, new_decisions: 0 });
    expect(again.report.tokens_before).toBe(t2full.report.tokens_before);
    expect(again.report.tokens_after).toBe(t2full.report.tokens_after);
  });

  it("keeps the block's cache_control on its replacement", async () => {
    const cc = { type: "ephemeral", ttl: "1h" };
    const out = await run(
      first([pdfBlock(PDF, { cache_control: cc })]),
      new MemoryStore(),
      EXTRACT,
    );
    expect(blocksOf(parse(out.request as string), 0)[1]).toMatchObject({
      type: "text",
      cache_control: cc,
    });
  });

  it("moves the advancing cache anchor into a replaced block instead of splicing into it", async () => {
    // (without its risk bound: a first call has spent nothing yet)
    const config = {
      ...EXTRACT,
      tool_result_medium_tier: "cache_anchor",
      tool_result_anchor_risk_share: null,
    };
    const req = { ...first([pdfBlock()]), system: "x".repeat(20_000) };
    const out = await run(req, new MemoryStore(), config);
    expect(out.report.anchor?.placed).toBe(true);
    const blocks = blocksOf(parse(out.request as string), 0);
    expect(blocks[1]).toMatchObject({ type: "text", cache_control: { type: "ephemeral" } });
  });

  it("stores a long replacement in the ledger, not in the session's record", async () => {
    const store = new MemoryStore();
    const out = await run(first([pdfBlock()]), store, EXTRACT);
    const text = blocksOf(parse(out.request as string), 0)[1]!.text as string;
    expect(text.length).toBeLessThan(INLINE_REPLACEMENT_CHARS); // the 5-page fixture is short: inline
    const long = textPdf(
      Array.from({ length: 12 }, (_, p) =>
        Array.from(
          { length: 30 },
          (_, l) => `Page ${p + 1}, line ${l + 1}: the quarterly figures in detail.`,
        ),
      ),
    );
    const out2 = await run(first([pdfBlock(long)]), store, EXTRACT, [], "s2");
    const replaced = blocksOf(parse(out2.request as string), 0)[1]!.text as string;
    expect(replaced.length).toBeGreaterThan(INLINE_REPLACEMENT_CHARS);
    const summary = await store.describeSession({ tenant: "default", session: "s2" });
    const record = summary!.records.find((r) => r.tier === "attachment")!;
    expect(record).toMatchObject({ rendered: null, action: "compacted" });
    expect((await store.getBody({ tenant: "default", session: "s2" }, record.mem_id!))?.body).toBe(
      replaced,
    );
    // Replayed from the ledger next turn, byte for byte.
    const t1 = await run(next(first([pdfBlock(long)]), 0), store, EXTRACT, [], "s2");
    expect(blocksOf(parse(t1.request as string), 0)[1]!.text).toBe(replaced);
  });

  it("a failed ledger write leaves the document native, says why, and a later turn replaces it", async () => {
    const long = textPdf(
      Array.from({ length: 12 }, (_, p) =>
        Array.from({ length: 30 }, (_, l) => `P${p} L${l}: figures, more figures, and then some.`),
      ),
    );
    const store = new MemoryStore();
    const req = first([pdfBlock(long)]);
    const out = await run(req, faultyStore(store, { putBody: true }), EXTRACT);
    expect(out.request).toBe(JSON.stringify(req));
    expect(out.report.errors).toEqual([
      expect.objectContaining({
        code: "storage_error",
        tool_use_id: expect.stringMatching(/^att_/),
      }),
    ]);
    expect(out.report.attachments!.items[0]).toMatchObject({ action: "native", sticky: false });
    const healthy = await run(req, store, EXTRACT);
    expect(healthy.report.attachments!.items[0]).toMatchObject({ action: "text", sticky: false });
  });

  it("a failed commit leaves new replacements native (not sticky)", async () => {
    const store = new MemoryStore();
    const req = first();
    const out = await run(req, faultyStore(store, { commit: true }), EXTRACT);
    expect(out.request).toBe(JSON.stringify(req));
    expect(out.report.attachments!.items[0]).toMatchObject({
      action: "native",
      reason: "sent natively: the decision could not be saved",
    });
  });

  it("extracts a file once per tenant: another session reads the store's extraction cache", async () => {
    const calls: string[] = [];
    const store = new MemoryStore();
    await run(first([pdfBlock()]), store, EXTRACT, calls, "a");
    const b = await run(first([pdfBlock()]), store, EXTRACT, calls, "b");
    expect(calls).toHaveLength(1);
    expect(b.report.attachments!.items[0]).toMatchObject({ action: "text", cached: true });
    expect(b.report.attachments!.extracted).toBe(0);
    await run(first([pdfBlock()]), store, EXTRACT, calls, { tenant: "other", session: "a" });
    expect(calls).toHaveLength(2); // the cache is per tenant
  });
});

describe('attachment_policy "extract_after_first"', () => {
  it("sends the document natively on the turn it arrives, as text from the next turn on", async () => {
    const calls: string[] = [];
    const store = new MemoryStore();
    const req0 = first([pdfBlock()]);
    const t0 = await run(req0, store, AFTER_FIRST, calls);
    expect(t0.request).toBe(JSON.stringify(req0));
    expect(t0.changed).toBe(false);
    expect(t0.report.attachments!.items[0]).toMatchObject({
      action: "native",
      native_tokens: null,
    });
    expect(t0.report.attachments!.items[0]!.reason).toContain("extract_after_first");
    expect(calls).toEqual([]); // nothing parsed before it is needed

    const t1 = await run(next(req0, 0), store, AFTER_FIRST, calls);
    const doc = blocksOf(parse(t1.request as string), 0)[1]!;
    expect(doc.type).toBe("text");
    expect(doc.text).toContain("Body text of page 1.");
    expect(t1.report.attachments!.items[0]).toMatchObject({ action: "text", sticky: false });
    expect(t1.report.attachments!.saved_usd).toBeGreaterThan(0);

    const t2 = await run(next(next(req0, 0), 1), store, AFTER_FIRST, calls);
    const t2compacted = await run(next(parse(t1.request as string), 1), store, AFTER_FIRST, calls);
    expect(t2compacted.request).toBe(t2.request);
    expect(t2.report.attachments!.items[0]).toMatchObject({ action: "text", sticky: true });
    expect(calls).toHaveLength(1);
  });
});

describe("the extractor is a port of the core", () => {
  it("the core's compact without one leaves documents native, records nothing, and a wired turn replaces them", async () => {
    const store = new MemoryStore();
    const req = first([pdfBlock()]);
    const bare = await compactTurn({
      request: JSON.stringify(req),
      session: "s",
      store,
      config: EXTRACT,
    });
    expect(bare.changed).toBe(false);
    expect(bare.report.attachments!.items[0]).toMatchObject({
      action: "native",
      sticky: false,
      error: { code: "extraction_dependency_missing" },
    });
    expect(bare.report.attachments!.new_decisions).toBe(0);
    // The library's compact plugs in the default extractor: the same block is replaced on the next turn.
    const wired = await run(next(req, 0), store, EXTRACT);
    expect(wired.report.attachments!.items[0]).toMatchObject({ action: "text", sticky: false });
  });
});

describe("failures leave the block native and say why", () => {
  it("an encrypted PDF: native, reported, sticky (not parsed again next turn)", async () => {
    const calls: string[] = [];
    const store = new MemoryStore();
    const req = first([pdfBlock(ENCRYPTED)]);
    const t0 = await run(req, store, EXTRACT, calls);
    expect(t0.request).toBe(JSON.stringify(req));
    expect(t0.report.attachments).toMatchObject({ failed: 1, replaced: 0 });
    expect(t0.report.attachments!.items[0]).toMatchObject({
      action: "native",
      error: { code: "extraction_failed", reason: "encrypted" },
    });
    expect(t0.report.attachments!.items[0]!.reason).toContain("sent natively");
    const t1 = await run(next(req, 0), store, EXTRACT, calls);
    expect(t1.report.attachments!.items[0]).toMatchObject({
      action: "native",
      sticky: true,
      error: { reason: "encrypted" },
    });
    expect(calls).toHaveLength(1);
  });

  it("a missing dependency is not sticky: the next turn tries again", async () => {
    const calls: string[] = [];
    const missing: Extractor = async () => {
      calls.push("x");
      throw new ExtractionDependencyMissingError("pdf", "pdf_engine", "pdf.js could not be loaded");
    };
    const store = new MemoryStore();
    const req = first([pdfBlock()]);
    const t0 = await compact({
      request: JSON.stringify(req),
      session: "s",
      store,
      config: EXTRACT,
      attachments: { extract: missing },
    });
    expect(t0.changed).toBe(false);
    expect(t0.report.attachments!.items[0]).toMatchObject({
      action: "native",
      error: { code: "extraction_dependency_missing" },
    });
    const t1 = await compact({
      request: JSON.stringify(next(req, 0)),
      session: "s",
      store,
      config: EXTRACT,
      attachments: { extract: missing },
    });
    expect(t1.report.attachments!.items[0]!.error?.code).toBe("extraction_dependency_missing");
    expect(calls).toHaveLength(2);
    // Once it works, the document is replaced.
    const t2 = await run(next(next(req, 0), 1), store, EXTRACT);
    expect(t2.report.attachments!.items[0]!.action).toBe("text");
  });

  it("a document longer than attachment_max_pages stays native: nothing is dropped", async () => {
    const out = await run(first([pdfBlock()]), new MemoryStore(), {
      ...EXTRACT,
      attachment_max_pages: 2,
    });
    expect(out.changed).toBe(false);
    expect(out.report.attachments!.items[0]!.reason).toBe(
      "longer than attachment_max_pages (2 of 5 pages): sent natively so nothing is dropped",
    );
  });

  it("keeps documents that must stay documents or cannot be read: citations, URL sources, text that saves nothing", async () => {
    const blocks = [
      pdfBlock(PDF, { citations: { enabled: true } }),
      { type: "document", source: { type: "url", url: "https://example.com/a.pdf" } },
      {
        type: "document",
        source: { type: "text", media_type: "text/plain", data: "A short plain-text note." },
        title: "note",
      },
      { type: "image", source: { type: "url", url: "https://example.com/a.png" } },
    ];
    const req = first(blocks);
    const out = await run(next(req, 0), new MemoryStore(), EXTRACT);
    expect(out.request).toBe(JSON.stringify(next(req, 0)));
    const reasons = out.report.attachments!.items.map((d) => d.reason);
    expect(reasons[0]).toContain("citations are enabled");
    expect(reasons[1]).toContain("a url source carries no bytes");
    expect(reasons[2]).toMatch(/^no saving/);
    expect(reasons[3]).toContain("a url source carries no bytes");
  });

  it("an image smaller than its placeholder stays native", async () => {
    const out = await run(next(first([imageBlock(png(16, 16))]), 0), new MemoryStore(), EXTRACT);
    expect(out.changed).toBe(false);
    expect(out.report.attachments!.items[0]!.reason).toMatch(/^no saving/);
  });
});

describe("images", () => {
  it("stay native for attachment_image_hot_turns turns, then become a placeholder", async () => {
    const store = new MemoryStore();
    const config = { ...EXTRACT, attachment_image_hot_turns: 2 };
    const req = first([imageBlock()]);
    const t1 = await run(next(req, 0), store, config);
    expect(t1.changed).toBe(false);
    const t2 = await run(next(next(req, 0), 1), store, config);
    expect(blocksOf(parse(t2.request as string), 0)[1]!.text).toContain("800x600 px");
  });

  const OCR_ON = { ...EXTRACT, attachment_ocr: true };

  it("with attachment_ocr and OCR plugged in, the placeholder carries the image's text; an OCR failure leaves a plain placeholder", async () => {
    let calls = 0;
    const engine = (text: string | Error): OcrEngine => ({
      name: "fake-ocr",
      formats: ["png"],
      recognize: async () => {
        calls++;
        if (text instanceof Error) throw text;
        return text;
      },
    });
    const ocr = (text: string | Error) => ({
      attachments: {
        ocr: { enabled: true, engine: engine(text), model: bytesModelSource(new Uint8Array([1])) },
      },
    });
    const req = next(first([imageBlock()]), 0);
    const ok = await compact({
      request: JSON.stringify(req),
      session: "o1",
      store: new MemoryStore(),
      config: OCR_ON,
      ...ocr("ERROR 42: disk full"),
    });
    expect(blocksOf(parse(ok.request as string), 0)[1]!.text).toMatch(
      /no longer included, to save tokens; ask for it again if you need to see it\.\]\nText read from the image \(OCR\):\nERROR 42: disk full$/,
    );
    expect(ok.report.attachments!.items[0]!.ocr).toEqual({
      outcome: "read",
      cached: false,
      reason: "read: 19 characters",
    });
    expect(ok.report.attachments!.ocr).toEqual({ read: 1, not_read: 0 });
    // An image read at half resolution: the decision says so, with the sizes.
    const note = "read at half resolution (1600×1200 → 800×600)";
    const halved = await compact({
      request: JSON.stringify(req),
      session: "o3",
      store: new MemoryStore(),
      config: OCR_ON,
      attachments: {
        ocr: {
          enabled: true,
          engine: { ...engine(""), recognize: async () => ({ text: "ERROR 42: disk full", note }) },
          model: bytesModelSource(new Uint8Array([1])),
        },
      },
    });
    expect(halved.report.attachments!.items[0]!.ocr!.reason).toBe(`read: 19 characters, ${note}`);
    const bad = await compact({
      request: JSON.stringify(req),
      session: "o2",
      store: new MemoryStore(),
      config: OCR_ON,
      ...ocr(new Error("cannot decode")),
    });
    const text = blocksOf(parse(bad.request as string), 0)[1]!.text as string;
    expect(text).not.toContain("OCR");
    expect(bad.report.attachments!.items[0]!.reason).toContain(
      "OCR failed (extraction_failed: corrupt)",
    );
    expect(bad.report.attachments!.items[0]!.ocr).toMatchObject({
      outcome: "failed",
      reason: expect.stringMatching(
        /^extraction_failed: corrupt: the OCR engine fake-ocr could not/,
      ),
    });
    expect(calls).toBe(2);

    // The switch off (the default): the engine is not asked, the placeholder is plain.
    const off = await compact({
      request: JSON.stringify(req),
      session: "o3",
      store: new MemoryStore(),
      config: EXTRACT,
      ...ocr("never read"),
    });
    expect(blocksOf(parse(off.request as string), 0)[1]!.text).not.toContain("OCR");
    expect(calls).toBe(2);
    expect(off.report.attachments!.items[0]!.ocr).toBeUndefined();
    expect(off.report.attachments!.ocr).toBeUndefined();

    // Text that costs more than the image over the horizon is left out (the image's ~640 tokens).
    const long = await compact({
      request: JSON.stringify(req),
      session: "o4",
      store: new MemoryStore(),
      config: OCR_ON,
      ...ocr("word ".repeat(4000)),
    });
    expect(blocksOf(parse(long.request as string), 0)[1]!.text).not.toContain("OCR");
    expect(long.report.attachments!.items[0]!.reason).toMatch(
      /its OCR text is left out: over 5 turns/,
    );
    expect(long.report.attachments!.items[0]!.ocr!.outcome).toBe("dropped");

    // A model without prices: nothing can be priced, so nothing is read.
    const unknown = await compact({
      request: JSON.stringify({ ...req, model: "some-private-model" }),
      session: "o5",
      store: new MemoryStore(),
      config: OCR_ON,
      ...ocr("unpriced"),
    });
    expect(unknown.report.attachments!.items[0]!.reason).toMatch(
      /not read by OCR: the model's prices are unknown/,
    );
    expect(unknown.report.attachments!.items[0]!.ocr).toEqual({
      outcome: "skipped",
      reason: "not worth reading: the model's prices are unknown",
    });
    expect(calls).toBe(3);
  });

  it("with attachment_ocr, every image decided says what OCR did, and the summary says why the others were not read", async () => {
    const reader: OcrEngine = { name: "r", formats: ["png"], recognize: async () => "INVOICE 7" };
    const withModel = {
      enabled: true,
      engine: reader,
      model: bytesModelSource(new Uint8Array([1])),
    };
    const req = first([imageBlock()]);
    const decided = async (request: Req, ocr?: OcrOptions) =>
      (
        await compact({
          request: JSON.stringify(request),
          session: `s-${Math.random()}`,
          store: new MemoryStore(),
          config: OCR_ON,
          ...(ocr === undefined ? {} : { attachments: { ocr } }),
        })
      ).report.attachments!;
    // Hot: native, and read on the turn it leaves its hot turns.
    const hot = await decided(req, withModel);
    expect(hot.items[0]!.ocr).toEqual({
      outcome: "hot",
      reason: "hot: read by OCR when it leaves its hot turns, on turn 1",
    });
    expect(hot.ocr).toEqual({ read: 0, not_read: 1 });
    // Asked for, but no OCR plugged in: said, not ignored.
    expect((await decided(next(req, 0))).items[0]!.ocr).toEqual({
      outcome: "unavailable",
      reason: "the extractor has no OCR engine plugged in",
    });
    // An engine without its model: unavailable, tried again next turn (nothing sticky).
    const noModel = await decided(next(req, 0), { ...withModel, model: bytesModelSource(null) });
    expect(noModel.items[0]!.ocr).toMatchObject({
      outcome: "unavailable",
      reason: expect.stringMatching(/absent: tried again next turn$/),
    });
    expect(noModel.new_decisions).toBe(0);

    // The header lists the images not read, each with its path and reason; read ones are only counted.
    const ten = first(Array.from({ length: 10 }, (_, i) => imageBlock(png(800 + i, 600))));
    const report = await compact({
      request: JSON.stringify(ten),
      session: "s-ten",
      store: new MemoryStore(),
      config: OCR_ON,
      attachments: { ocr: withModel },
    });
    const header = summaryHeader(summaryOf(report.report, report.changed, []));
    expect(header.length).toBeLessThanOrEqual(MAX_SUMMARY_HEADER_CHARS);
    const ocr = (
      JSON.parse(header) as {
        attachments: { ocr: { not_read: number; notes: { path: string; outcome: string }[] } };
      }
    ).attachments.ocr;
    expect(ocr.not_read).toBe(10);
    expect(ocr.notes).toHaveLength(8);
    expect(ocr.notes[0]).toMatchObject({ path: "messages[0].content[1]", outcome: "hot" });
  });
});

describe("attachments inside tool results (invariant 10)", () => {
  const BIG = jsonBody(80_000);
  const OFFLOAD = { ...EXTRACT, tool_result_offload_enabled: true };

  function withTool(doc: Block = pdfBlock(), more: Msg[] = []): Req {
    return {
      model: "claude-opus-4-5",
      max_tokens: 512,
      tools: [
        {
          name: "fetch",
          description: "fetch a file",
          input_schema: { type: "object", properties: {} },
        },
      ],
      messages: [
        { role: "user", content: "Fetch the report." },
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "toolu_1", name: "fetch", input: {} }],
        },
        {
          role: "user",
          content: [
            {
              type: "tool_result",
              tool_use_id: "toolu_1",
              content: [{ type: "text", text: BIG }, doc],
            },
          ],
        },
        ...more,
      ],
    };
  }
  const later: Msg[] = [
    { role: "assistant", content: [{ type: "tool_use", id: "toolu_2", name: "fetch", input: {} }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_2", content: "ok" }] },
  ];

  it("replaces a document inside a tool result; the tool's text is measured without it", async () => {
    const out = await run(withTool(), new MemoryStore(), EXTRACT);
    const content = blocksOf(parse(out.request as string), 2)[0]!.content as Block[];
    expect(content[0]).toEqual({ type: "text", text: BIG });
    expect(content[1]!.text).toMatch(/^\[attachment att_/);
    expect(out.decisions[0]).toMatchObject({ chars: BIG.length });
  });

  it("a stubbed tool result keeps its attachment's replacement in place; full and compacted histories agree", async () => {
    const store = new MemoryStore();
    const t0 = await run(withTool(), store, OFFLOAD);
    const t1full = await run(withTool(pdfBlock(), later), store, OFFLOAD);
    const t1compacted = await run(
      {
        ...parse(t0.request as string),
        messages: [...parse(t0.request as string).messages, ...later],
      },
      store,
      OFFLOAD,
    );
    expect(t1full.decisions[0]).toMatchObject({ action: "offloaded" });
    // (the default anchor may mark each history's own end: compare the bytes without the markers)
    expect(unmarked(t1compacted.request)).toBe(unmarked(t1full.request));
    const content = blocksOf(parse(t1full.request as string), 2)[0]!.content as Block[];
    expect(content).toHaveLength(2);
    expect(content[0]!.text).toMatch(/^\[tool result offloaded/);
    expect(content[1]!.text).toMatch(/^\[attachment att_/);
    // Next turn from the compacted history: no conflict, nothing changes.
    const again = await run(t1full.request as string, store, OFFLOAD);
    expect(again.changed).toBe(false);
    expect(again.report.errors).toEqual([]);
    expect(again.decisions[0]).toMatchObject({ action: "offloaded", sticky: true });
  });

  it("a hot image after text blocks that a stub collapses keeps its id: both histories render it the same", async () => {
    const store = new MemoryStore();
    const config = { ...OFFLOAD, attachment_image_hot_turns: 2 };
    const result = (): Block[] => [
      { type: "text", text: BIG },
      { type: "text", text: "page 2 of the output" },
      imageBlock(),
    ];
    const base = (more: Msg[]): Req => ({
      ...withTool(pdfBlock(), more),
      messages: [
        ...withTool(pdfBlock()).messages.slice(0, 2),
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "toolu_1", content: result() }],
        },
        ...more,
      ],
    });
    const later2: Msg[] = [
      ...later,
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "toolu_3", name: "fetch", input: {} }],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_3", content: "ok" }] },
    ];
    const t1 = await run(base(later), store, config);
    const stubbed = blocksOf(parse(t1.request as string), 2)[0]!.content as Block[];
    expect(stubbed.map((b) => b.type)).toEqual(["text", "image"]); // collapsed text, the image still hot
    const t2full = await run(base(later2), store, config);
    const t2compacted = await run(
      {
        ...parse(t1.request as string),
        messages: [...parse(t1.request as string).messages, ...later2.slice(2)],
      },
      store,
      config,
    );
    expect(
      (blocksOf(parse(t2full.request as string), 2)[0]!.content as Block[])[1]!.text,
    ).toContain("800x600 px");
    expect(unmarked(t2compacted.request)).toBe(unmarked(t2full.request));
  });
});

describe("records", () => {
  it("are stored next to the tool results' records, marked as attachments", async () => {
    const store = new MemoryStore();
    await run(next(first(), 0), store, EXTRACT);
    const records = (await store.describeSession({ tenant: "default", session: "s1" }))!
      .records as ResultRecord[];
    expect(records.map((r) => [r.tier, r.tool_name, r.action])).toEqual([
      ["attachment", "attachment:document", "compacted"],
      ["attachment", "attachment:image", "compacted"],
    ]);
    expect(records[1]!.attachment).toMatchObject({
      kind: "image",
      format: "png",
      width: 800,
      height: 600,
      arrived: 0,
      native_tokens: imageTokens(800, 600),
    });
    expect(records[0]!.tool_use_id).toMatch(/^att_[0-9a-f]{24}$/);
  });
});
