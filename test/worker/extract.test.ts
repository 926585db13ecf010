/**
 * The extraction library inside workerd (vitest's pool; the strict no-eval run is test/unit/extract-wrangler-dev.test.ts).
 * Fixtures are built in memory by the same builders that wrote the committed files: workerd has no disk.
 */
import { beforeAll, describe, expect, it } from "vitest";
import {
  ExtractionFailedError,
  extractText,
  extractTexts,
  UnsupportedAttachmentError,
} from "../../src/extract/entry.ts";
import { fixture } from "../fixtures/build.ts";
import { gridXlsx } from "../fixtures/office-writer.ts";

const attach = (file: string) => {
  const f = fixture(file);
  return { data: f.build(), media_type: f.media_type, filename: file };
};

describe("extraction in workerd", () => {
  // The first PDF loads pdf.js (1.7 MB) through vitest's module runner, which is slow the first time only.
  beforeAll(async () => {
    await extractText(attach("text.pdf"));
  }, 60_000);

  it("reads a PDF's text layer page by page", async () => {
    const r = await extractText(attach("multipage.pdf"), { max_pages: 3 });
    expect(r).toMatchObject({
      format: "pdf",
      pages: 5,
      pages_extracted: 3,
      truncated: true,
      truncated_by: "max_pages",
    });
    expect(r.text).toContain("Body text of page 3.");
  });

  it("maps pdf.js's exceptions: encrypted, corrupt, empty", async () => {
    for (const [file, reason] of [
      ["encrypted.pdf", "encrypted"],
      ["corrupt.pdf", "corrupt"],
      ["scanned.pdf", "empty"],
    ] as const) {
      const e = await extractText(attach(file)).catch((x: unknown) => x);
      expect(e, file).toBeInstanceOf(ExtractionFailedError);
      expect((e as ExtractionFailedError).reason, file).toBe(reason);
    }
  });

  it("extracts the same PDF twice in one isolate (the document is destroyed each time)", async () => {
    const a = await extractText(attach("text.pdf"));
    const b = await extractText(attach("text.pdf"));
    expect(b.text).toBe(a.text);
  });

  it("unzips DOCX and XLSX with the runtime's DecompressionStream", async () => {
    expect((await extractText(attach("report.docx"))).text).toContain("| North | 1,200 | 5% |");
    expect((await extractText(attach("workbook.xlsx"))).text).toContain("東京,2024-03-01,12:00:00");
    const grid = await extractText(
      {
        data: gridXlsx(3000, 6),
        media_type: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
      },
      { max_rows: 2500 },
    );
    expect(grid.truncated_by).toBe("max_rows");
  });

  it("stops a lying ZIP entry as it inflates", async () => {
    const e = (await extractText(attach("lying-size.docx")).catch(
      (x: unknown) => x,
    )) as ExtractionFailedError;
    expect(e.reason).toBe("corrupt");
  });

  it("decodes text the same way as Node (Windows-1252 fallback, HTML)", async () => {
    expect((await extractText(attach("cp1252.txt"))).text).toBe("Prix: 10 € - café\n");
    expect((await extractText(attach("page.html"))).text).toContain("- Ledger: up");
  });

  it("warn mode over a mixed batch", async () => {
    const results = await extractTexts([
      attach("text.pdf"),
      attach("image.webp"),
      attach("table.csv"),
    ]);
    expect(results.map((r) => r.ok)).toEqual([true, false, true]);
    const e = await extractTexts([attach("legacy.xls")], { on_error: "raise" }).catch(
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(UnsupportedAttachmentError);
  });
});
