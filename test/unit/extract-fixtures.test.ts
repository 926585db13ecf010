import { describe, expect, it } from "vitest";
import { extractText, isAttachmentError, probeAttachment } from "../../src/extract/entry.ts";
import { FIXTURES } from "../fixtures/build.ts";
import { fixtureBytes, loadFixture } from "../fixtures/load.ts";

/** What each committed fixture must produce: a format, or an error type (and reason). */
const EXPECTED: Record<
  string,
  { format: string; error?: string; reason?: string; extractable: boolean }
> = {
  "text.pdf": { format: "pdf", extractable: true },
  "multipage.pdf": { format: "pdf", extractable: true },
  "scanned.pdf": { format: "pdf", extractable: true, error: "extraction_failed", reason: "empty" },
  "encrypted.pdf": {
    format: "pdf",
    extractable: true,
    error: "extraction_failed",
    reason: "encrypted",
  },
  "owner-locked.pdf": { format: "pdf", extractable: true },
  "corrupt.pdf": {
    format: "pdf",
    extractable: true,
    error: "extraction_failed",
    reason: "corrupt",
  },
  "report.docx": { format: "docx", extractable: true },
  "workbook.xlsx": { format: "xlsx", extractable: true },
  "encrypted.docx": {
    format: "ooxml_encrypted",
    extractable: false,
    error: "unsupported_attachment",
  },
  "legacy.doc": { format: "doc", extractable: false, error: "unsupported_attachment" },
  "legacy.xls": { format: "xls", extractable: false, error: "unsupported_attachment" },
  "image.webp": { format: "webp", extractable: false, error: "unsupported_attachment" },
  "image.png": { format: "png", extractable: false, error: "unsupported_attachment" },
  "image.jpg": { format: "jpeg", extractable: false, error: "unsupported_attachment" },
  // The OCR fixtures with OCR off (test/unit/ocr-engine.test.ts reads them with it on).
  "ocr-text.png": { format: "png", extractable: false, error: "unsupported_attachment" },
  "ocr-text.jpg": { format: "jpeg", extractable: false, error: "unsupported_attachment" },
  "ocr-scan.pdf": { format: "pdf", extractable: true, error: "extraction_failed", reason: "empty" },
  "ocr-photo.png": { format: "png", extractable: false, error: "unsupported_attachment" },
  "ocr-huge.png": { format: "png", extractable: false, error: "unsupported_attachment" },
  "ocr-corrupt.png": { format: "png", extractable: false, error: "unsupported_attachment" },
  "page.html": { format: "html", extractable: true },
  "table.csv": { format: "csv", extractable: true },
  "data.json": { format: "json", extractable: true },
  "cp1252.txt": { format: "text", extractable: true },
  "bomb.docx": {
    format: "docx",
    extractable: true,
    error: "extraction_failed",
    reason: "too_large",
  },
  "lying-size.docx": {
    format: "docx",
    extractable: true,
    error: "extraction_failed",
    reason: "corrupt",
  },
};

describe("committed fixtures", () => {
  // Building every fixture is seconds of CPU: a shared machine's load stretches it past the 5 s default.
  it("are what their builders write (run `node test/fixtures/make-fixtures.ts` after changing a builder)", {
    timeout: 60_000,
  }, () => {
    for (const f of FIXTURES)
      expect(
        Buffer.compare(Buffer.from(fixtureBytes(f.file)), Buffer.from(f.build())),
        f.file,
      ).toBe(0);
  });

  it("every fixture has an expectation and every expectation a fixture", () => {
    expect(FIXTURES.map((f) => f.file).sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  for (const f of FIXTURES) {
    const want = EXPECTED[f.file]!;
    it(`${f.file}: probe says ${want.format}/${want.extractable}, extraction ${want.error ? `fails with ${want.error}${want.reason ? `/${want.reason}` : ""}` : "succeeds"}`, async () => {
      const attachment = loadFixture(f.file);
      const probe = probeAttachment(attachment);
      expect(probe.format).toBe(want.format);
      expect(probe.extractable).toBe(want.extractable);
      if (want.error === undefined) {
        const result = await extractText(attachment);
        expect(result.format).toBe(want.format);
        expect(result.text.trim()).not.toBe("");
        return;
      }
      const error = await extractText(attachment).then(
        () => null,
        (e: unknown) => e,
      );
      expect(isAttachmentError(error)).toBe(true);
      if (!isAttachmentError(error)) return;
      expect(error.type).toBe(want.error);
      expect(error.fallback).toBe("native");
      expect(error.format).toBe(want.format);
      expect(error.body().reason).toBe(want.reason);
    });
  }
});
