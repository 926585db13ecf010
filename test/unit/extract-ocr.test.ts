import { describe, expect, it } from "vitest";
import {
  bucketModelSource,
  bytesModelSource,
  ExtractionDependencyMissingError,
  type ExtractionFailedError,
  extractText,
  imageInfo,
  isExtractable,
  type OcrEngine,
  type OcrImage,
  probeAttachment,
  UnsupportedAttachmentError,
} from "../../src/extract/entry.ts";
import { fixtureBytes, loadFixture } from "../fixtures/load.ts";

/** An engine double: records what it was given and answers a fixed text. */
function fakeEngine(
  answer: string | Error,
  formats: OcrEngine["formats"] = ["png", "jpeg"],
): OcrEngine & { calls: { image: OcrImage; model: Uint8Array }[] } {
  const calls: { image: OcrImage; model: Uint8Array }[] = [];
  return {
    name: "fake",
    formats,
    calls,
    async recognize(image, model) {
      calls.push({ image, model });
      if (answer instanceof Error) throw answer;
      return answer;
    },
  };
}
const MODEL = bytesModelSource(new Uint8Array([1, 2, 3]), "test-model");

async function thrown(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => null,
    (e: unknown) => e,
  );
}

describe("images and the OCR port", () => {
  it("OCR off (the default): images are unsupported, so they are sent natively", async () => {
    for (const file of ["image.png", "image.jpg", "image.webp"]) {
      const e = await thrown(extractText(loadFixture(file)));
      expect(e).toBeInstanceOf(UnsupportedAttachmentError);
      expect((e as UnsupportedAttachmentError).message).toMatch(/OCR is off/);
    }
    expect(
      isExtractable(loadFixture("image.png"), {
        ocr: { enabled: false, engine: fakeEngine("x"), model: MODEL },
      }),
    ).toBe(false);
  });

  it("OCR on without an engine: the dependency is missing", async () => {
    const e = await thrown(
      extractText(loadFixture("image.png"), { ocr: { enabled: true, model: MODEL } }),
    );
    expect(e).toBeInstanceOf(ExtractionDependencyMissingError);
    expect((e as ExtractionDependencyMissingError).dependency).toBe("ocr_engine");
  });

  it("OCR on without a model source, or with an absent model: the model is missing", async () => {
    const engine = fakeEngine("text");
    const noSource = await thrown(
      extractText(loadFixture("image.png"), { ocr: { enabled: true, engine } }),
    );
    expect((noSource as ExtractionDependencyMissingError).dependency).toBe("ocr_model");
    const absent = await thrown(
      extractText(loadFixture("image.png"), {
        ocr: { enabled: true, engine, model: bytesModelSource(null, "r2:eng") },
      }),
    );
    expect(absent).toBeInstanceOf(ExtractionDependencyMissingError);
    expect((absent as ExtractionDependencyMissingError).message).toMatch(/r2:eng/);
    const failing = { name: "broken", load: async () => Promise.reject(new Error("R2 down")) };
    const unreadable = await thrown(
      extractText(loadFixture("image.png"), { ocr: { enabled: true, engine, model: failing } }),
    );
    expect((unreadable as ExtractionDependencyMissingError).dependency).toBe("ocr_model");
    expect(engine.calls).toHaveLength(0);
  });

  it("OCR on with engine and model: the engine gets the bytes, format, size and model", async () => {
    const engine = fakeEngine("  Recognised words \n");
    const r = await extractText(loadFixture("image.png"), {
      ocr: { enabled: true, engine, model: MODEL },
    });
    expect(r).toEqual({
      text: "Recognised words",
      format: "png",
      truncated: false,
      width: 40,
      height: 20,
    });
    expect(engine.calls[0]!.image.format).toBe("png");
    expect(engine.calls[0]!.image.bytes.length).toBe(fixtureBytes("image.png").length);
    expect([...engine.calls[0]!.model]).toEqual([1, 2, 3]);
    expect(
      probeAttachment(loadFixture("image.png"), { ocr: { enabled: true, engine, model: MODEL } })
        .extractable,
    ).toBe(true);
  });

  it("a format the engine does not read (WebP) is unsupported even with OCR on", async () => {
    const e = await thrown(
      extractText(loadFixture("image.webp"), {
        ocr: { enabled: true, engine: fakeEngine("x"), model: MODEL },
      }),
    );
    expect(e).toBeInstanceOf(UnsupportedAttachmentError);
    expect((e as UnsupportedAttachmentError).format).toBe("webp");
  });

  it("an engine failure is a corrupt image; no text is empty; too many pixels is too_large", async () => {
    const bad = await thrown(
      extractText(loadFixture("image.jpg"), {
        ocr: { enabled: true, engine: fakeEngine(new Error("decode")), model: MODEL },
      }),
    );
    expect((bad as ExtractionFailedError).reason).toBe("corrupt");
    const blank = await thrown(
      extractText(loadFixture("image.jpg"), {
        ocr: { enabled: true, engine: fakeEngine(" "), model: MODEL },
      }),
    );
    expect((blank as ExtractionFailedError).reason).toBe("empty");
    const big = await thrown(
      extractText(loadFixture("image.png"), {
        ocr: { enabled: true, engine: fakeEngine("x"), model: MODEL, max_pixels: 100 },
      }),
    );
    expect((big as ExtractionFailedError).reason).toBe("too_large");
  });

  it("bucketModelSource reads the model once, and retries an absent or failed read", async () => {
    let gets = 0;
    let stored: Uint8Array | null = null;
    let fail = false;
    const bucket = {
      async get(key: string) {
        gets++;
        expect(key).toBe("ocr/eng.traineddata");
        if (fail) throw new Error("R2 unavailable");
        const body = stored;
        return body === null ? null : { arrayBuffer: async () => body.slice().buffer };
      },
    };
    const source = bucketModelSource(bucket, "ocr/eng.traineddata");
    expect(await source.load()).toBeNull();
    fail = true;
    await expect(source.load()).rejects.toThrow("R2 unavailable");
    fail = false;
    stored = new Uint8Array([9, 9]);
    expect([...(await source.load())!]).toEqual([9, 9]);
    expect([...(await source.load())!]).toEqual([9, 9]);
    expect(gets).toBe(3);
  });
});

describe("imageInfo", () => {
  it("reads dimensions from PNG, JPEG, WebP and GIF headers", () => {
    expect(imageInfo(fixtureBytes("image.png"))).toEqual({ format: "png", width: 40, height: 20 });
    expect(imageInfo(fixtureBytes("image.jpg"))).toEqual({ format: "jpeg", width: 8, height: 8 });
    expect(imageInfo(fixtureBytes("image.webp"))).toEqual({
      format: "webp",
      width: 32,
      height: 16,
    });
    expect(imageInfo(new TextEncoder().encode("GIF89a\x05\x00\x03\x00"))).toEqual({
      format: "gif",
      width: 5,
      height: 3,
    });
    expect(imageInfo(new TextEncoder().encode("not an image"))).toBeNull();
  });
});
