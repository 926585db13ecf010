import { describe, expect, it } from "vitest";
import { ExtractionFailedError, extractText } from "../../src/extract/entry.ts";
import { loadFixture } from "../fixtures/load.ts";
import { textPdf } from "../fixtures/pdf-writer.ts";

const pdf = (data: Uint8Array, media_type = "application/pdf") => ({ data, media_type });

async function failure(p: Promise<unknown>): Promise<ExtractionFailedError> {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(ExtractionFailedError);
  return e as ExtractionFailedError;
}

describe("PDF extraction", () => {
  it("reads the text layer with its line structure", async () => {
    const r = await extractText(loadFixture("text.pdf"));
    expect(r).toEqual({
      text: "Invoice 2024-017\nTotal due: EUR 1,250.00 (net 30)\nThank you for your business.",
      format: "pdf",
      pages: 1,
      pages_extracted: 1,
      truncated: false,
    });
  });

  it("reads a Node Buffer (what fs.readFile gives) and leaves it intact", async () => {
    const bytes = Buffer.from(textPdf([["From a Buffer"]]));
    const before = Buffer.from(bytes);
    const r = await extractText(pdf(bytes));
    expect(r.text).toBe("From a Buffer");
    expect(bytes.equals(before)).toBe(true);
  });

  it("separates pages by a blank line and reads them all under the page cap", async () => {
    const r = await extractText(loadFixture("multipage.pdf"));
    expect(r.pages).toBe(5);
    expect(r.pages_extracted).toBe(5);
    expect(r.truncated).toBe(false);
    expect(r.text.split("\n\n")).toHaveLength(5);
    expect(r.text).toContain("Body text of page 5.");
  });

  it("stops at max_pages and says so", async () => {
    const r = await extractText(loadFixture("multipage.pdf"), { max_pages: 2 });
    expect(r.pages).toBe(5);
    expect(r.pages_extracted).toBe(2);
    expect(r.truncated).toBe(true);
    expect(r.truncated_by).toBe("max_pages");
    expect(r.text).toContain("page 2");
    expect(r.text).not.toContain("page 3");
  });

  it("stops reading pages once max_chars is reached", async () => {
    const r = await extractText(loadFixture("multipage.pdf"), { max_chars: 40 });
    expect(r.text.length).toBeLessThanOrEqual(40);
    expect(r.text.startsWith("Page 1 heading")).toBe(true);
    expect(r.truncated_by).toBe("max_chars");
    expect(r.pages_extracted).toBeLessThan(5);
  });

  it("max_chars never splits a surrogate pair", async () => {
    // Helvetica/WinAnsi cannot carry astral characters, so test the shared cut on the text path.
    const r = await extractText({ type: "text", data: "ab😀cd" }, { max_chars: 3 });
    expect(r.text).toBe("ab");
  });

  it("a scanned PDF (images, no text layer) fails as empty", async () => {
    const e = await failure(extractText(loadFixture("scanned.pdf")));
    expect(e.reason).toBe("empty");
    expect(e.message).toMatch(/no text layer/);
  });

  it("a blank page before the text does not make the document empty", async () => {
    const r = await extractText(pdf(textPdf([null, ["Second page text"]])));
    expect(r.text).toBe("Second page text");
    expect(r.pages_extracted).toBe(2);
  });

  it("a user-password PDF fails as encrypted (pdf.js PasswordException)", async () => {
    const e = await failure(extractText(loadFixture("encrypted.pdf")));
    expect(e.reason).toBe("encrypted");
    expect((e.cause as Error).name).toBe("PasswordException");
  });

  it("the encrypted fixture is a genuine encrypted PDF: pdf.js opens it with its password", async () => {
    const { getResolvedPDFJS } = await import("unpdf");
    const { getDocument } = await getResolvedPDFJS();
    const task = getDocument({
      data: loadFixture("encrypted.pdf").data as Uint8Array,
      password: "secret",
      useWasm: false,
      verbosity: 0,
    });
    const doc = await task.promise;
    const content = await (await doc.getPage(1)).getTextContent();
    expect(content.items.map((i) => ("str" in i ? i.str : ""))).toContain("Confidential");
    await task.destroy();
  });

  it("an owner-password-only PDF opens without a password and is extracted", async () => {
    expect((await extractText(loadFixture("owner-locked.pdf"))).text).toBe(
      "Readable but not editable",
    );
  });

  it("a damaged PDF fails as corrupt (pdf.js InvalidPDFException)", async () => {
    const e = await failure(extractText(loadFixture("corrupt.pdf")));
    expect(e.reason).toBe("corrupt");
    expect((e.cause as Error).name).toBe("InvalidPDFException");
  });

  it("bytes declared as PDF without a PDF header fail as corrupt", async () => {
    const e = await failure(extractText(pdf(new TextEncoder().encode("hello, not a pdf"))));
    expect(e.reason).toBe("corrupt");
    expect(e.format).toBe("pdf");
  });

  it("magic bytes win over the declared type", async () => {
    const r = await extractText(pdf(loadFixture("text.pdf").data as Uint8Array, "image/png"));
    expect(r.format).toBe("pdf");
  });

  it("fails as too_large above max_bytes, before parsing", async () => {
    const e = await failure(extractText(loadFixture("text.pdf"), { max_bytes: 100 }));
    expect(e.reason).toBe("too_large");
  });

  it("leaves the caller's bytes intact (pdf.js detaches the buffer it is given)", async () => {
    const attachment = loadFixture("text.pdf");
    const bytes = attachment.data as Uint8Array;
    const before = bytes.slice();
    await extractText(attachment);
    expect(bytes.byteLength).toBe(before.byteLength);
    expect(Buffer.compare(Buffer.from(bytes), Buffer.from(before))).toBe(0);
    // A second extraction of the same object still works.
    expect((await extractText(attachment)).text).toContain("Invoice");
  });
});
