import { describe, expect, it } from "vitest";
import { extractText, isExtractable, probeAttachment } from "../../src/extract/entry.ts";
import { fixtureBytes, loadFixture } from "../fixtures/load.ts";
import { oleFile, zipParts } from "../fixtures/office-writer.ts";

describe("probeAttachment / isExtractable", () => {
  it("recognises the other ZIP-based formats by their parts", () => {
    const cases: [Record<string, string>, string][] = [
      [{ "ppt/presentation.xml": "<p/>" }, "pptx"],
      [{ "xl/workbook.bin": "x" }, "xlsb"],
      [
        { mimetype: "application/vnd.oasis.opendocument.text", "content.xml": "<x/>" },
        "opendocument",
      ],
      [{ "hello.txt": "hi" }, "zip"],
    ];
    for (const [parts, format] of cases) {
      const probe = probeAttachment({ data: zipParts(parts) });
      expect(probe.format).toBe(format);
      expect(probe.extractable).toBe(false);
    }
  });

  it("tells OLE files apart by their streams, and falls back to the declared type", () => {
    expect(
      probeAttachment({ data: oleFile({ "PowerPoint Document": new Uint8Array(10) }) }).format,
    ).toBe("ppt");
    expect(probeAttachment({ data: oleFile({ Other: new Uint8Array(10) }) }).format).toBe("ole");
    expect(
      probeAttachment({
        data: oleFile({ Other: new Uint8Array(10) }),
        media_type: "application/msword",
      }).format,
    ).toBe("doc");
    // Only the header survives: the directory cannot be read.
    expect(
      probeAttachment({ data: fixtureBytes("legacy.xls").subarray(0, 600), filename: "old.xls" })
        .format,
    ).toBe("xls");
  });

  it("detects images by magic bytes, with the dimensions their headers state", () => {
    expect(probeAttachment(loadFixture("image.jpg"))).toEqual({
      format: "jpeg",
      kind: "image",
      extractable: false,
      reason: "jpeg image: OCR is off",
      bytes: 159,
      width: 8,
      height: 8,
    });
    expect(probeAttachment(loadFixture("image.webp"))).toMatchObject({
      format: "webp",
      width: 32,
      height: 16,
    });
    const gif = new TextEncoder().encode("GIF89a\x01\x00\x01\x00");
    expect(probeAttachment({ data: gif }).format).toBe("gif");
  });

  it("a damaged ZIP declared as DOCX probes as DOCX (extraction will say corrupt)", () => {
    const probe = probeAttachment({
      data: fixtureBytes("report.docx").subarray(0, 300),
      filename: "r.docx",
    });
    expect(probe).toMatchObject({ format: "docx", extractable: true });
  });

  it("RTF is recognised and unsupported", () => {
    expect(
      probeAttachment({
        data: new TextEncoder().encode("{\\rtf1\\ansi hello}"),
        media_type: "text/plain",
      }).format,
    ).toBe("rtf");
  });

  it("never throws, even for malformed input", () => {
    expect(isExtractable(null as never)).toBe(false);
    expect(isExtractable({ type: "base64", media_type: "application/pdf", data: "@@@" })).toBe(
      false,
    );
    expect(
      probeAttachment({ type: "document", source: { type: "url", url: "https://x" } }).format,
    ).toBe("remote");
  });

  it("is cheap: it never inflates anything (a zip bomb probes as DOCX without being opened)", () => {
    const original = globalThis.DecompressionStream;
    let inflations = 0;
    globalThis.DecompressionStream = class extends original {
      constructor(format: CompressionFormat) {
        super(format);
        inflations++;
      }
    };
    try {
      expect(probeAttachment(loadFixture("bomb.docx")).extractable).toBe(true);
      expect(probeAttachment(loadFixture("workbook.xlsx")).format).toBe("xlsx");
      expect(inflations).toBe(0);
    } finally {
      globalThis.DecompressionStream = original;
    }
  });

  it("(the counter above does see inflation when extraction runs)", async () => {
    const original = globalThis.DecompressionStream;
    let inflations = 0;
    globalThis.DecompressionStream = class extends original {
      constructor(format: CompressionFormat) {
        super(format);
        inflations++;
      }
    };
    try {
      await extractText(loadFixture("workbook.xlsx"));
      expect(inflations).toBeGreaterThan(0);
    } finally {
      globalThis.DecompressionStream = original;
    }
  });
});
