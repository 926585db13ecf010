import { describe, expect, it } from "vitest";
import { docxXmlToText } from "../../src/extract/docx.ts";
import { ExtractionFailedError, extractText } from "../../src/extract/entry.ts";
import { loadFixture } from "../fixtures/load.ts";
import { docx, para, table, zipParts } from "../fixtures/office-writer.ts";

const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"';
const body = (xml: string): string =>
  docxXmlToText(`<w:document ${W}><w:body>${xml}</w:body></w:document>`);

async function failure(p: Promise<unknown>): Promise<ExtractionFailedError> {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(ExtractionFailedError);
  return e as ExtractionFailedError;
}

describe("DOCX extraction", () => {
  it("renders the report fixture: headings, runs, lists, tabs, breaks, a table; skips deletions, field codes, fallbacks", async () => {
    const r = await extractText(loadFixture("report.docx"));
    expect(r).toEqual({
      format: "docx",
      truncated: false,
      text: [
        "# Quarterly Report",
        "# Summary",
        "Revenue grew 12% in Q3 & costs fell.",
        "Tracked: kept",
        "Name\tValue",
        "Next line",
        "- First point",
        "  - Nested point",
        "",
        "| Region | Sales | Growth |",
        "| --- | --- | --- |",
        "| North | 1,200 | 5% |",
        "| South \\| East | 900 | -2% |",
        "",
        "Text box body",
        "",
        "End of report.",
      ].join("\n"),
    });
  });

  it("keeps several paragraphs of one cell in that cell, and nested tables inside their cell", () => {
    const nested = table([["inner a", "inner b"]]);
    const text = body(
      `<w:tbl><w:tr><w:tc>${para("one")}${para("two")}</w:tc><w:tc>${nested}</w:tc></w:tr></w:tbl>`,
    );
    expect(text).toBe("| one two | inner a; inner b |");
  });

  it("a line break inside a table cell does not break the row", () => {
    expect(
      body(
        `<w:tbl><w:tr><w:tc><w:p><w:r><w:t>a</w:t><w:br/><w:t>b</w:t></w:r></w:p></w:tc></w:tr></w:tbl>`,
      ),
    ).toBe("| a b |");
  });

  it("decodes entities and CDATA, and ignores comments and processing instructions", () => {
    expect(
      body(
        `<!-- c --><?pi x?><w:p><w:r><w:t>&lt;a&gt; &#x41;&#66; <![CDATA[<raw>]]></w:t></w:r></w:p>`,
      ),
    ).toBe("<a> AB <raw>");
  });

  it("finds the main part through _rels/.rels when it is not word/document.xml", async () => {
    const bytes = zipParts({
      "_rels/.rels": `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="r1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="/word/main.xml"/></Relationships>`,
      "word/main.xml": `<w:document ${W}><w:body>${para("from main.xml")}</w:body></w:document>`,
    });
    expect((await extractText({ data: bytes, media_type: DOCX })).text).toBe("from main.xml");
  });

  it("a document without text fails as empty", async () => {
    const e = await failure(extractText({ data: docx("<w:p/>"), media_type: DOCX }));
    expect(e.reason).toBe("empty");
  });

  it("malformed XML fails as corrupt", async () => {
    const bytes = zipParts({
      "word/document.xml": `<w:document ${W}><w:body><w:p><w:r><w:t>unterminated`,
    });
    const e = await failure(extractText({ data: bytes, media_type: DOCX }));
    expect(e.reason).toBe("corrupt");
  });

  it("a package without its document part fails as corrupt", async () => {
    const e = await failure(
      extractText({ data: zipParts({ "word/styles.xml": "<x/>" }), media_type: DOCX }),
    );
    expect(e.reason).toBe("corrupt");
    expect(e.message).toMatch(/document part/);
  });

  it("a truncated archive fails as corrupt", async () => {
    const bytes = (loadFixture("report.docx").data as Uint8Array).subarray(0, 600);
    const e = await failure(extractText({ data: bytes, media_type: DOCX }));
    expect(e.reason).toBe("corrupt");
    expect(e.format).toBe("docx");
  });

  it("the max_chars cap truncates", async () => {
    const r = await extractText(loadFixture("report.docx"), { max_chars: 20 });
    expect(r.text).toBe("# Quarterly Report\n#");
    expect(r.truncated_by).toBe("max_chars");
  });
});

describe("zip-bomb guards", () => {
  // The bomb declares 20 MB, over the default per-part cap: these lift the size caps to reach the others.
  const ROOMY = {
    max_unzipped_entry_bytes: 32 * 1024 * 1024,
    max_unzipped_bytes: 64 * 1024 * 1024,
  };

  it("with the default limits, its declared size alone refuses it, without inflating it", async () => {
    const e = await failure(extractText(loadFixture("bomb.docx")));
    expect(e.reason).toBe("too_large");
    expect(e.message).toMatch(/declares 200\d+ bytes/);
  });

  it("a part with a compression ratio over the cap fails as too_large without inflating it", async () => {
    const e = await failure(extractText(loadFixture("bomb.docx"), ROOMY));
    expect(e.reason).toBe("too_large");
    expect(e.message).toMatch(/ratio/);
  });

  it("with the ratio cap lifted, the declared size still meets the per-part cap", async () => {
    const e = await failure(
      extractText(loadFixture("bomb.docx"), {
        max_zip_ratio: 10_000,
        max_unzipped_entry_bytes: 1_000_000,
      }),
    );
    expect(e.reason).toBe("too_large");
    expect(e.message).toMatch(/declares 200\d+ bytes/);
  });

  it("and the total cap across parts", async () => {
    const e = await failure(
      extractText(loadFixture("bomb.docx"), {
        max_zip_ratio: 10_000,
        max_unzipped_entry_bytes: ROOMY.max_unzipped_entry_bytes,
        max_unzipped_bytes: 1_000_000,
      }),
    );
    expect(e.reason).toBe("too_large");
    expect(e.message).toMatch(/inflate to more than/);
  });

  it("inside every cap, the same file is read (the guards, not the parser, refused it)", async () => {
    const e = await failure(
      extractText(loadFixture("bomb.docx"), { ...ROOMY, max_zip_ratio: 10_000 }),
    );
    expect(e.reason).toBe("empty"); // 20 MB of spaces
  });

  it("a part that inflates past its declared size is refused as corrupt", async () => {
    const e = await failure(extractText(loadFixture("lying-size.docx")));
    expect(e.reason).toBe("corrupt");
    expect(e.message).toMatch(/past its declared 512 bytes/);
  });

  it("an archive listing more entries than allowed fails as too_large", async () => {
    const e = await failure(extractText(loadFixture("report.docx"), { max_zip_entries: 2 }));
    expect(e.reason).toBe("too_large");
    expect(e.message).toMatch(/entries/);
  });

  it("a directory of 12,000 entries: the probe reads the first names, extraction refuses it as too_large", async () => {
    const parts: Record<string, string> = {
      "word/document.xml": `<w:document ${W}><w:body>${para("hi")}</w:body></w:document>`,
    };
    for (let i = 0; i < 12_000; i++) parts[`junk/${i}`] = "";
    const attachment = { data: zipParts(parts, 0) };
    const { probeAttachment } = await import("../../src/extract/entry.ts");
    expect(probeAttachment(attachment).format).toBe("docx");
    const e = await failure(extractText(attachment));
    expect(e.reason).toBe("too_large");
    expect(e.message).toMatch(/12001 entries/);
    // Raising the cap reads it.
    expect((await extractText(attachment, { max_zip_entries: 20_000 })).text).toBe("hi");
  });

  it("a ZIP-encrypted part fails as encrypted", async () => {
    const bytes = (loadFixture("report.docx").data as Uint8Array).slice();
    // Set the "encrypted" general-purpose flag on every central-directory entry.
    for (let p = 0; p + 4 < bytes.length; p++) {
      if (
        bytes[p] === 0x50 &&
        bytes[p + 1] === 0x4b &&
        bytes[p + 2] === 0x01 &&
        bytes[p + 3] === 0x02
      )
        bytes[p + 8]! |= 1;
    }
    const e = await failure(extractText({ data: bytes, media_type: DOCX }));
    expect(e.reason).toBe("encrypted");
  });
});
