/**
 * A scanned PDF page's images without pdf.js: the reader finds what a page draws (through forms, inline
 * images, object and cross-reference streams, and a damaged cross-reference rebuilt) without decoding any
 * image; the image OCR reads is decoded here in the usual colour spaces, filters and predictors; and
 * through extractText only that image is decoded, an encoding only pdf.js reads goes to pdf.js only within
 * the page's budget, and an encrypted PDF's images are refused with a reason.
 */
import { zlibSync } from "fflate";
import jpegJs from "jpeg-js";
import { describe, expect, it } from "vitest";
import { ExtractionFailedError } from "../../src/extract/errors.ts";
import { extractText } from "../../src/extract/extract.ts";
import {
  bytesModelSource,
  type OcrEngine,
  type OcrOptions,
  type OcrRaster,
} from "../../src/extract/ocr.ts";
import { pageImageRaster, scanPage } from "../../src/extract/pdf-images.ts";
import { PdfDocument } from "../../src/extract/pdf-objects.ts";
import { greyJpeg } from "../fixtures/image-writer.ts";
import { imagesPdf } from "../fixtures/ocr-hostile.ts";
import { type PdfObject, textPdf, writeCompressedPdf, writePdf } from "../fixtures/pdf-writer.ts";
import { boxHalf } from "../support/box-half.ts";

const latin1 = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0) & 255);
const budget = () => ({ inflate: 32 << 20, objects: 100_000 });

/** Catalog (1), pages (2), page (3) with `resources`, content (4), then `rest` from 5 on. */
function onePage(resources: string, content: string | Uint8Array, rest: PdfObject[]): PdfObject[] {
  return [
    { dict: "<< /Type /Catalog /Pages 2 0 R >>" },
    { dict: "<< /Type /Pages /Kids [3 0 R] /Count 1 >>" },
    {
      dict: `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources ${resources} /Contents 4 0 R >>`,
    },
    { dict: "<< >>", stream: typeof content === "string" ? latin1(content) : content },
    ...rest,
  ];
}

const image = (w: number, h: number, extra: string, data: Uint8Array): PdfObject => ({
  dict: `<< /Type /XObject /Subtype /Image /Width ${w} /Height ${h} ${extra} >>`,
  stream: data,
});

/** A page drawing Im1 twice, a form that draws Im2, and an inline image; listing a large image it never draws. */
function drawingPage(): PdfObject[] {
  return onePage(
    "<< /XObject << /Im1 5 0 R /Fm1 6 0 R /Unused 8 0 R >> >>",
    "q 10 0 0 10 0 0 cm /Im1 Do Q /Im1 Do (a (nested) string /Im9 Do) Tj /Fm1 Do BI /W 3 /H 2 /BPC 8 /CS /G ID \x01\x02\x03\x04\x05\x06 EI",
    [
      image(10, 10, "/ColorSpace /DeviceGray /BitsPerComponent 8", new Uint8Array(100)),
      {
        dict: "<< /Type /XObject /Subtype /Form /BBox [0 0 1 1] /Resources << /XObject << /Im2 7 0 R >> >> >>",
        stream: latin1("/Im2 Do"),
      },
      image(20, 30, "/ColorSpace /DeviceGray /BitsPerComponent 8", new Uint8Array(600)),
      image(3000, 3000, "/ColorSpace /DeviceGray /BitsPerComponent 8", new Uint8Array(9)),
    ],
  );
}

describe("the images a page draws, found without decoding them", () => {
  const cases: [string, Uint8Array][] = [
    ["a cross-reference table", writePdf(drawingPage())],
    ["object and cross-reference streams (PDF 1.5)", writeCompressedPdf(drawingPage())],
    [
      "a damaged cross-reference (rebuilt from the objects' headers)",
      (() => {
        const b = writePdf(drawingPage());
        const text = new TextDecoder("latin1").decode(b);
        // Every offset in the table points 7 bytes off.
        return latin1(
          text.replace(
            /(\d{10}) 00000 n/g,
            (_, o) => `${String(Number(o) + 7).padStart(10, "0")} 00000 n`,
          ),
        );
      })(),
    ],
  ];
  for (const [name, bytes] of cases)
    it(`through ${name}: each drawn image once (forms and inline ones included), the listed-only one not`, () => {
      const doc = new PdfDocument(bytes, budget());
      const scan = scanPage(doc, { num: 3, gen: 0 });
      expect(scan.drawn.map((d) => [d.width, d.height, d.inline])).toEqual([
        [10, 10, false],
        [20, 30, false],
        [3, 2, true],
      ]);
      // What pdf.js would decode counts every image the resources reach, drawn or not.
      expect(scan.reachableBytes).toBe(4 * (100 + 600 + 9_000_000));
    });

  it("bounds the reading: nesting, and what the structure's streams may inflate to", () => {
    const deep = `${"[".repeat(200)}${"]".repeat(200)}`;
    const nested = writePdf(onePage(`<< /X ${deep} >>`, "", []));
    const e1 = (() => {
      try {
        scanPage(new PdfDocument(nested, budget()), { num: 3, gen: 0 });
      } catch (error) {
        return error;
      }
    })() as ExtractionFailedError;
    expect(e1).toBeInstanceOf(ExtractionFailedError);
    expect(e1.message).toMatch(/nested too deep/);
    const big = writePdf(
      onePage("<< >>", "", []).map((o, i) =>
        i === 3
          ? { dict: "<< /Filter /FlateDecode >>", stream: zlibSync(new Uint8Array(40 << 20)) }
          : o,
      ),
    );
    const e2 = (() => {
      try {
        scanPage(new PdfDocument(big, budget()), { num: 3, gen: 0 });
      } catch (error) {
        return error;
      }
    })() as ExtractionFailedError;
    expect(e2.reason).toBe("too_large");
  });
});

/** The page's single image decoded as the engine would get it. */
function paint(pdf: Uint8Array, maxPixels = 1e6): { raster: OcrRaster | null; rgba: number[] } {
  const doc = new PdfDocument(pdf, budget());
  const scan = scanPage(doc, { num: 3, gen: 0 });
  const raster = pageImageRaster(doc, scan.drawn[0]!, maxPixels);
  if (raster === null) return { raster, rgba: [] };
  const out = new Uint8Array(raster.width * raster.height * 4);
  raster.paint(() => out);
  return { raster, rgba: [...out] };
}

const single = (
  dict: string,
  data: Uint8Array,
  w = 2,
  h = 1,
  resources = "<< /XObject << /Im 5 0 R >> >>",
) => writePdf(onePage(resources, "/Im Do", [image(w, h, dict, data)]));

/** PNG predictor rows ("Sub" filter) of bytes, `rowLength` a row. */
function pngPredicted(bytes: number[], rowLength: number, bpp: number): Uint8Array {
  const out: number[] = [];
  for (let r = 0; r < bytes.length; r += rowLength) {
    const row = bytes.slice(r, r + rowLength);
    out.push(1, ...row.map((v, i) => (v - (i >= bpp ? row[i - bpp]! : 0)) & 255));
  }
  return Uint8Array.from(out);
}

/** LZW (PDF's, early change) of bytes, with 9-bit codes only (a short input never needs wider ones). */
function lzw(bytes: number[]): Uint8Array {
  const codes = [256, ...bytes, 257];
  let acc = 0;
  let n = 0;
  const out: number[] = [];
  for (const c of codes) {
    acc = (acc << 9) | c;
    n += 9;
    while (n >= 8) {
      out.push((acc >> (n - 8)) & 255);
      n -= 8;
    }
  }
  if (n > 0) out.push((acc << (8 - n)) & 255);
  return Uint8Array.from(out);
}

const px = (...rgb: number[][]) => rgb.flatMap((c) => [...c, 255]);

/** ASCII85 of whole groups of four bytes. */
function ascii85(bytes: number[]): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 4) {
    let v =
      ((bytes[i]! << 24) | (bytes[i + 1]! << 16) | (bytes[i + 2]! << 8) | bytes[i + 3]!) >>> 0;
    const digits: string[] = [];
    for (let k = 0; k < 5; k++, v = Math.floor(v / 85))
      digits.unshift(String.fromCharCode(33 + (v % 85)));
    s += `${digits.join("")}\n`;
  }
  return s;
}

describe("the image OCR reads, decoded here", () => {
  it("in grey, RGB, CMYK, indexed, ICC-based and one-ink colour spaces, with decode arrays and stencil masks", () => {
    const cases: [string, Uint8Array, number[]][] = [
      [
        "grey",
        single("/ColorSpace /DeviceGray /BitsPerComponent 8", Uint8Array.of(0, 200)),
        px([0, 0, 0], [200, 200, 200]),
      ],
      [
        "inverted grey",
        single("/ColorSpace /DeviceGray /BitsPerComponent 8 /Decode [1 0]", Uint8Array.of(0, 200)),
        px([255, 255, 255], [55, 55, 55]),
      ],
      [
        "RGB",
        single("/ColorSpace /DeviceRGB /BitsPerComponent 8", Uint8Array.of(255, 0, 0, 1, 2, 3)),
        px([255, 0, 0], [1, 2, 3]),
      ],
      [
        "CMYK",
        single(
          "/ColorSpace /DeviceCMYK /BitsPerComponent 8",
          Uint8Array.of(0, 0, 0, 255, 0, 0, 0, 0),
        ),
        px([0, 0, 0], [255, 255, 255]),
      ],
      [
        "indexed, 2-bit",
        single(
          "/ColorSpace [/Indexed /DeviceRGB 1 <FF000000FF00>] /BitsPerComponent 2",
          Uint8Array.of(0b0001_0000),
        ),
        px([255, 0, 0], [0, 255, 0]),
      ],
      [
        "ICC-based (one component)",
        writePdf(
          onePage("<< /XObject << /Im 5 0 R >> >>", "/Im Do", [
            image(2, 1, "/ColorSpace [/ICCBased 6 0 R] /BitsPerComponent 8", Uint8Array.of(10, 20)),
            { dict: "<< /N 1 >>", stream: new Uint8Array(4) },
          ]),
        ),
        px([10, 10, 10], [20, 20, 20]),
      ],
      [
        "a named colour space of the page",
        single(
          "/ColorSpace /CS0 /BitsPerComponent 8",
          Uint8Array.of(7, 9),
          2,
          1,
          "<< /XObject << /Im 5 0 R >> /ColorSpace << /CS0 /DeviceGray >> >>",
        ),
        px([7, 7, 7], [9, 9, 9]),
      ],
      [
        "one ink",
        single(
          "/ColorSpace [/Separation /Black /DeviceCMYK 0 0 R] /BitsPerComponent 8",
          Uint8Array.of(255, 0),
        ),
        px([0, 0, 0], [255, 255, 255]),
      ],
      [
        "a stencil mask",
        single("/ImageMask true", Uint8Array.of(0b01_000000)),
        px([0, 0, 0], [255, 255, 255]),
      ],
      [
        "a 16-bit grey",
        single("/ColorSpace /DeviceGray /BitsPerComponent 16", Uint8Array.of(0xff, 0xff, 0x80, 0)),
        px([255, 255, 255], [128, 128, 128]),
      ],
    ];
    for (const [name, pdf, want] of cases) expect(paint(pdf).rgba, name).toEqual(want);
  });

  it("behind Flate (with PNG and TIFF predictors), LZW, run-length and ASCII filters", () => {
    const rgb = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120];
    const want = px([10, 20, 30], [40, 50, 60], [70, 80, 90], [100, 110, 120]);
    const cases: [string, string, Uint8Array][] = [
      [
        "Flate, PNG predictor",
        "/Filter /FlateDecode /DecodeParms << /Predictor 15 /Colors 3 /Columns 2 >>",
        zlibSync(pngPredicted(rgb, 6, 3)),
      ],
      [
        "Flate, TIFF predictor",
        "/Filter /FlateDecode /DecodeParms << /Predictor 2 /Colors 3 /Columns 2 >>",
        zlibSync(Uint8Array.from([10, 20, 30, 30, 30, 30, 70, 80, 90, 30, 30, 30])),
      ],
      ["LZW", "/Filter /LZWDecode", lzw(rgb)],
      ["run-length", "/Filter /RunLengthDecode", Uint8Array.of(11, ...rgb, 128)],
      [
        "ASCII hex then Flate",
        "/Filter [/ASCIIHexDecode /FlateDecode]",
        latin1(
          `${[...zlibSync(Uint8Array.from(rgb))].map((b) => b.toString(16).padStart(2, "0")).join(" ")}>`,
        ),
      ],
      ["ASCII85", "/Filter /ASCII85Decode", latin1(`${ascii85(rgb)}~>`)],
    ];
    for (const [name, filter, data] of cases)
      expect(
        paint(single(`/ColorSpace /DeviceRGB /BitsPerComponent 8 ${filter}`, data, 2, 2)).rgba,
        name,
      ).toEqual(want);
  });

  it("a JPEG (DCTDecode) through the PDF's colour space and decode array", () => {
    const grey = {
      width: 24,
      height: 16,
      grey: Uint8Array.from({ length: 384 }, (_, i) => (i * 5) & 255),
    };
    const jpeg = greyJpeg(grey, 90);
    const ref = jpegJs.decode(jpeg, { useTArray: true, formatAsRGBA: true });
    const plain = paint(
      single("/ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode", jpeg, 24, 16),
    ).rgba;
    expect(Math.max(...plain.map((v, i) => Math.abs(v - ref.data[i]!)))).toBeLessThanOrEqual(4);
    const inverted = paint(
      single(
        "/ColorSpace /DeviceRGB /BitsPerComponent 8 /Decode [1 0 1 0 1 0] /Filter /DCTDecode",
        jpeg,
        24,
        16,
      ),
    ).rgba;
    expect(inverted.slice(0, 3)).toEqual(plain.slice(0, 3).map((v) => 255 - v));
  });

  it("leaves to pdf.js what only pdf.js reads; refuses more pixels than OCR reads", () => {
    expect(
      paint(
        single(
          "/ColorSpace /DeviceGray /BitsPerComponent 1 /Filter /CCITTFaxDecode",
          new Uint8Array(4),
        ),
      ).raster,
    ).toBeNull();
    expect(
      paint(
        single(
          "/ColorSpace [/Lab << /WhitePoint [1 1 1] >>] /BitsPerComponent 8",
          new Uint8Array(6),
        ),
      ).raster,
    ).toBeNull();
    const e = (() => {
      try {
        paint(
          single("/ColorSpace /DeviceGray /BitsPerComponent 8", new Uint8Array(4), 2000, 2000),
          1000,
        );
      } catch (error) {
        return error;
      }
    })() as ExtractionFailedError;
    expect(e.reason).toBe("too_large");
  });
});

describe("a page's image over the pixel limit, read at half resolution", () => {
  /** 5×3 RGB samples (odd width and height), and their 2×2 box averages as RGBA. */
  const rgb = Array.from({ length: 5 * 3 * 3 }, (_, i) => (i * 37) & 255);
  const rgba = Uint8Array.from({ length: 5 * 3 * 4 }, (_, i) =>
    i % 4 === 3 ? 255 : rgb[(i >> 2) * 3 + (i % 4)]!,
  );
  const want = [...boxHalf(rgba, 5, 3)];

  it("unfiltered or behind Flate: halved as its rows arrive, the exact box average", () => {
    for (const [filter, data] of [
      ["", Uint8Array.from(rgb)],
      ["/Filter /FlateDecode", zlibSync(Uint8Array.from(rgb))],
    ] as const) {
      const { raster, rgba } = paint(
        single(`/ColorSpace /DeviceRGB /BitsPerComponent 8 ${filter}`, data, 5, 3),
        6,
      );
      expect([raster!.width, raster!.height, raster!.from]).toEqual([
        3,
        2,
        { width: 5, height: 3 },
      ]);
      expect(rgba).toEqual(want);
    }
  });

  it("data that ends early leaves the rest white, as at full size", () => {
    const { rgba } = paint(
      single(
        "/ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode",
        zlibSync(Uint8Array.from([0, 100, 200, 50])),
        2,
        4,
      ),
      2,
    );
    // Rows 0 and 1 averaged, row pair 2–3 never came.
    expect(rgba).toEqual([88, 88, 88, 255, 255, 255, 255, 255]);
  });

  it("refuses one behind a filter decoded in memory, and over 4× the limit", () => {
    const refused = (pdf: Uint8Array, max: number) =>
      (() => {
        try {
          paint(pdf, max);
        } catch (error) {
          return error as ExtractionFailedError;
        }
        throw new Error("expected a refusal");
      })();
    const lzwed = refused(
      single("/ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /LZWDecode", lzw(rgb), 5, 3),
      6,
    );
    expect(lzwed.reason).toBe("too_large");
    expect(lzwed.message).toMatch(/behind LZWDecode is not read at half resolution/);
    const over = refused(
      single("/ColorSpace /DeviceRGB /BitsPerComponent 8", Uint8Array.from(rgb), 5, 3),
      5,
    );
    expect(over.message).toMatch(/even at half resolution \(3×2\)/);
  });

  it("through extractText, the result says which page was halved", async () => {
    const r = await extractText(
      { data: imagesPdf([[flateGrey(40, 30)]]), media_type: "application/pdf" },
      { ocr: { ...ocrWith(recorder()), max_pixels: 1000 } },
    );
    expect(r.text).toBe("page of 20×15");
    expect(r.ocr_note).toBe("page 1 read at half resolution (40×30 → 20×15)");
  });
});

/** An engine that records what it was asked to read, decoding each raster, and answers fixed text. */
function recorder(): OcrEngine & { rasters: [number, number][]; pixels: number } {
  const rasters: [number, number][] = [];
  return {
    name: "recorder",
    formats: ["png", "jpeg"],
    rasters,
    pixels: 0,
    async recognize() {
      return "an image";
    },
    async recognizeRaster(raster) {
      rasters.push([raster.width, raster.height]);
      const out = new Uint8Array(raster.width * raster.height * 4);
      raster.paint(() => out);
      return { text: `page of ${raster.width}×${raster.height}`, confidence: 0.9 };
    },
  };
}

const ocrWith = (engine: OcrEngine): OcrOptions => ({
  enabled: true,
  engine,
  model: bytesModelSource(new Uint8Array([1]), "test"),
});

const flateGrey = (w: number, h: number) => ({
  width: w,
  height: h,
  dict: "/ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode",
  data: zlibSync(new Uint8Array(w * h).fill(255)),
});

describe("scanned pages through extractText", () => {
  it("a page drawing many large images: only the largest is decoded", async () => {
    const engine = recorder();
    const pdf = imagesPdf([
      [
        flateGrey(900, 700),
        flateGrey(1200, 1000),
        ...Array.from({ length: 30 }, () => flateGrey(1000, 1000)),
      ],
    ]);
    const r = await extractText(
      { data: pdf, media_type: "application/pdf" },
      { ocr: ocrWith(engine) },
    );
    expect(r.text).toBe("page of 1200×1000");
    expect(engine.rasters).toEqual([[1200, 1000]]);
  });

  it("a colour space only pdf.js reads: refused before pdf.js decodes when the page's images are over budget, read through pdf.js when within it", async () => {
    const data = new Map<number, Uint8Array>();
    const lab = (w: number, h: number) => {
      if (!data.has(w * h)) data.set(w * h, zlibSync(new Uint8Array(w * h * 3).fill(128)));
      return {
        width: w,
        height: h,
        dict: "/ColorSpace [/Lab << /WhitePoint [0.95 1 1.09] >>] /BitsPerComponent 8 /Filter /FlateDecode",
        data: data.get(w * h)!,
      };
    };
    const engine = recorder();
    const over = imagesPdf([Array.from({ length: 40 }, () => lab(2000, 2000))]);
    const refused = await extractText(
      { data: over, media_type: "application/pdf" },
      { ocr: ocrWith(engine) },
    ).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ExtractionFailedError);
    expect((refused as ExtractionFailedError).reason).toBe("too_large");
    expect((refused as Error).message).toMatch(
      /pdf\.js decodes all 40 of the page's images at once/,
    );
    expect(engine.rasters).toEqual([]);

    const within = imagesPdf([[lab(64, 48)]]);
    const read = await extractText(
      { data: within, media_type: "application/pdf" },
      { ocr: ocrWith(engine) },
    );
    expect(read.text).toBe("page of 64×48");
  });

  it("CCITT fax, JBIG2 and JPEG 2000 pages are left unread, and the failure says why", async () => {
    const engine = recorder();
    const fax = imagesPdf([
      [
        {
          width: 1700,
          height: 2200,
          dict: "/ColorSpace /DeviceGray /BitsPerComponent 1 /Filter /CCITTFaxDecode /DecodeParms << /K -1 /Columns 1700 >>",
          data: new Uint8Array(275).fill(255),
        },
      ],
    ]);
    const e = await extractText(
      { data: fax, media_type: "application/pdf" },
      { ocr: ocrWith(engine) },
    ).catch((x: unknown) => x);
    expect((e as ExtractionFailedError).reason).toBe("empty");
    expect((e as Error).message).toMatch(/CCITT fax, JBIG2 or JPEG 2000 \(1 in CCITT fax\)/);
    expect(engine.rasters).toEqual([]);
  });

  it("an encrypted PDF's scanned page is refused with its reason; its text pages are still read", async () => {
    const engine = recorder();
    const scanned = textPdf([null], { encrypt: { user: "", owner: "owner-secret" } });
    const e = await extractText(
      { data: scanned, media_type: "application/pdf" },
      { ocr: ocrWith(engine) },
    ).catch((x: unknown) => x);
    expect((e as ExtractionFailedError).reason).toBe("encrypted");
    expect((e as Error).message).toMatch(/OCR does not read the images of an encrypted PDF/);
    const text = textPdf([["a page of text"]], { encrypt: { user: "", owner: "owner-secret" } });
    expect(
      (await extractText({ data: text, media_type: "application/pdf" }, { ocr: ocrWith(engine) }))
        .text,
    ).toBe("a page of text");
  });
});
