/**
 * The real OCR engine (tesseract-wasm, English best_int model) on the generated fixtures: text rendered into a
 * PNG, a JPEG and a scanned PDF page is read with a measured character accuracy; a photo without text, a huge
 * image and a corrupt one fail typed with `fallback: "native"`; the limits refuse before the work.
 */
import { describe, expect, it } from "vitest";
import { ExtractionFailedError, extractText } from "../../src/extract/entry.ts";
import { decodeImage } from "../../src/extract/image-decode.ts";
import { OcrLimitsSchema, ocrFromQuery, ocrLimitsFor } from "../../src/extract/ocr-service.ts";
import { OCR_TEXT } from "../fixtures/build.ts";
import { greyJpeg, greyPng } from "../fixtures/image-writer.ts";
import { fixtureBytes, loadFixture } from "../fixtures/load.ts";
import { type GreyImage, renderText } from "../fixtures/text-image.ts";
import { charAccuracy, nodeOcr } from "../support/ocr-node.ts";

async function failure(p: Promise<unknown>): Promise<ExtractionFailedError> {
  const e = await p.then(
    () => null,
    (error: unknown) => error,
  );
  expect(e).toBeInstanceOf(ExtractionFailedError);
  expect((e as ExtractionFailedError).fallback).toBe("native");
  return e as ExtractionFailedError;
}

describe("OCR with tesseract-wasm", { timeout: 60_000 }, () => {
  for (const file of ["ocr-text.png", "ocr-text.jpg", "ocr-scan.pdf"]) {
    it(`reads ${file} with at least 95% character accuracy and an honest confidence`, async () => {
      const r = await extractText(loadFixture(file), { ocr: nodeOcr() });
      const accuracy = charAccuracy(OCR_TEXT[file]!.join("\n"), r.text);
      console.log(`${file}: character accuracy ${accuracy.toFixed(4)}, confidence ${r.confidence}`);
      expect(accuracy).toBeGreaterThanOrEqual(0.95);
      expect(r.confidence).toBeGreaterThan(0.6);
      expect(r.confidence).toBeLessThanOrEqual(1);
      if (file.endsWith(".pdf")) expect(r).toMatchObject({ format: "pdf", pages: 1, ocr_pages: 1 });
    });
  }

  it("a photo without text, a huge image and a corrupt one fail typed", async () => {
    const photo = await failure(extractText(loadFixture("ocr-photo.png"), { ocr: nodeOcr() }));
    expect(["empty", "low_confidence"]).toContain(photo.reason);
    // 4000×4000: over 4× a 3 MP limit (its half, 4 MP, too), refused from the header.
    const huge = await failure(
      extractText(loadFixture("ocr-huge.png"), { ocr: nodeOcr({ max_pixels: 3_000_000 }) }),
    );
    expect(huge.reason).toBe("too_large");
    expect(huge.message).toMatch(/even at half resolution \(2000×2000\)/);
    const corrupt = await failure(extractText(loadFixture("ocr-corrupt.png"), { ocr: nodeOcr() }));
    expect(corrupt.reason).toBe("corrupt");
  });

  for (const [file, encode] of [
    ["PNG", greyPng],
    ["JPEG", (page: GreyImage) => greyJpeg(page, 85)],
  ] as const)
    it(`reads a ${file} one pixel over the limit at half resolution, and says so`, async () => {
      // The fixture's text drawn twice as large: halved, it is the size the engine reads at 100 %.
      const page = renderText(OCR_TEXT["ocr-text.png"]!, { cap: 60 });
      const [w, h] = [page.width, page.height];
      const bytes = encode(page);
      const media_type = file === "PNG" ? "image/png" : "image/jpeg";
      const r = await extractText(
        { data: bytes, media_type },
        { ocr: nodeOcr({ max_pixels: w * h - 1 }) },
      );
      const accuracy = charAccuracy(OCR_TEXT["ocr-text.png"]!.join("\n"), r.text);
      console.log(`${file} ${w}×${h} halved: character accuracy ${accuracy.toFixed(4)}`);
      expect(accuracy).toBeGreaterThanOrEqual(0.95);
      expect(r.ocr_note).toBe(
        `read at half resolution (${w}×${h} → ${Math.ceil(w / 2)}×${Math.ceil(h / 2)})`,
      );
    });

  it("refuses over the CPU budget (estimated after layout) and under the confidence floor", async () => {
    const budget = await failure(
      extractText(loadFixture("ocr-text.png"), { ocr: nodeOcr({ cpu_ms: 5 }) }),
    );
    expect(budget.reason).toBe("too_large");
    expect(budget.message).toMatch(/ms of CPU, over the OCR budget of 5 ms/);
    const doubtful = await failure(
      extractText(loadFixture("ocr-text.jpg"), { ocr: nodeOcr({ min_confidence: 0.999 }) }),
    );
    expect(doubtful.reason).toBe("low_confidence");
    expect(doubtful.message).toMatch(/under the 0.999 required/);
  });

  it("a scanned PDF needing more OCR pages than allowed is too_large; a text PDF never runs OCR", async () => {
    const scan = await failure(
      extractText(loadFixture("scanned.pdf"), { ocr: nodeOcr({ max_pages: 1 }) }),
    );
    expect(scan.reason).toBe("too_large");
    const text = await extractText(loadFixture("text.pdf"), { ocr: nodeOcr() });
    expect(text.ocr_pages).toBeUndefined();
  });
});

describe("image decoding bounds", () => {
  it("stops a PNG whose data inflates past what its header declares", () => {
    // The header says 10×10; the data is a 4000×4000 image's.
    const big = greyPng({ width: 4000, height: 4000, grey: new Uint8Array(16_000_000) });
    const liar = big.slice();
    liar.set([0, 0, 0, 10, 0, 0, 0, 10], 16);
    // The IHDR's CRC no longer matches: the decoder here does not check it, the inflation cap must hold.
    const e = (() => {
      try {
        decodeImage(liar, "png", 1e9);
      } catch (error) {
        return error;
      }
    })();
    expect((e as ExtractionFailedError).reason).toBe("corrupt");
    expect((e as Error).message).toMatch(/inflates past/);
  });

  it("refuses more pixels than the limit, whatever the format", () => {
    expect(() => decodeImage(fixtureBytes("ocr-text.jpg"), "jpeg", 10_000)).toThrow(/pixels/);
    expect(() => decodeImage(fixtureBytes("ocr-text.png"), "png", 10_000)).toThrow(/pixels/);
  });
});

describe("OCR limits: a request may only lower the deployment's", () => {
  const deployment = OcrLimitsSchema.parse({ languages: ["eng", "fra"], max_pixels: 4_000_000 });

  it("lowers, and names the ceiling when asked for more", () => {
    expect(ocrLimitsFor(deployment, { max_pixels: 1000, language: "fra" })).toMatchObject({
      max_pixels: 1000,
      language: "fra",
      min_confidence: 0.6,
    });
    expect(() => ocrLimitsFor(deployment, { max_pixels: 5_000_000 })).toThrow(
      /at most 4000000 on this deployment/,
    );
    expect(() => ocrLimitsFor(deployment, { min_confidence: 0.1 })).toThrow(/at least 0.6/);
    expect(() => ocrLimitsFor(deployment, { language: "deu" })).toThrow(/reads eng, fra/);
  });

  it("reads the query: off unless ocr=true, invalid values are invalid_argument naming the parameter", () => {
    const env = { OFFLOAD_OCR: "on", LEDGER: { get: async () => null } };
    expect(ocrFromQuery(new URLSearchParams(""), env)).toBeUndefined();
    expect(ocrFromQuery(new URLSearchParams("ocr=false&ocr_max_pixels=5"), env)).toBeUndefined();
    expect(ocrFromQuery(new URLSearchParams("ocr=true&ocr_max_pixels=5"), env)).toMatchObject({
      enabled: true,
      max_pixels: 5,
      language: "eng",
    });
    expect(() => ocrFromQuery(new URLSearchParams("ocr=yes"), env)).toThrow(/ocr/);
    expect(() => ocrFromQuery(new URLSearchParams("ocr=true&ocr_max_pixels=-1"), env)).toThrow(
      /ocr_max_pixels/,
    );
    expect(() =>
      ocrFromQuery(new URLSearchParams("ocr=true&ocr_max_pixels=99999999"), env),
    ).toThrow(/ocr_max_pixels: at most/);
    // Asked for on a deployment with OCR off: no engine, so each image answers a missing dependency.
    expect(ocrFromQuery(new URLSearchParams("ocr=true"), { ...env, OFFLOAD_OCR: "off" })).toEqual({
      enabled: true,
    });
  });
});
