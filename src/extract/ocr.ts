/**
 * The OCR port. OCR is off unless a caller turns it on and plugs in an engine and a model source: engines are
 * heavy (Tesseract's LSTM takes seconds of CPU for a full page) and models are megabytes read from R2, so
 * neither is loaded before the first image. With OCR off an image is unsupported (send it natively); with OCR
 * on but no engine or no model, the dependency is missing. The engine that ships is tesseract-wasm
 * (ocr-tesseract.ts); the service wires it from its vars (ocr-service.ts).
 */
import type { ImageFormat } from "./types.ts";

export interface OcrImage {
  bytes: Uint8Array;
  format: ImageFormat;
  width?: number | undefined;
  height?: number | undefined;
}

/** Decoded pixels (a scanned PDF page's image): 1 (grey), 3 (RGB) or 4 (RGBA) bytes per pixel. */
export interface OcrPixels {
  width: number;
  height: number;
  channels: 1 | 3 | 4;
  data: Uint8Array;
}

/**
 * An image whose header was read and checked against the limits, its pixels not decoded yet: `paint`
 * decodes them as 8-bit RGBA (row by row, transparency flattened onto white) into the buffer that
 * `target()` returns (at least 4 × width × height bytes). It calls `target` once, when it is ready to write:
 * a decoder that needs a working set first (a progressive JPEG's coefficients) has shrunk it by then, so an
 * engine that hands out its own memory (tesseract-wasm's image buffer) never holds the image twice.
 * Throws an AttachmentError (`corrupt`, `too_large`) when the data is not what the header promised.
 */
export interface OcrRaster {
  width: number;
  height: number;
  /** The picture's own size when it is painted at half resolution (see ocrScale). */
  from?: { width: number; height: number } | undefined;
  paint(target: () => Uint8Array): void;
}

/**
 * How a picture of `width`×`height` is read under `maxPixels`: whole (1), at half resolution (2: each 2×2
 * block averaged into one pixel while decoding, so the full picture never exists in memory), or not at all
 * (null: even its half, ⌈w/2⌉·⌈h/2⌉, is over the limit, about 4× it). One level only: halving keeps every
 * stroke of a 300 dpi scan or a 4K screenshot's text at a size Tesseract reads.
 */
export function ocrScale(width: number, height: number, maxPixels: number): 1 | 2 | null {
  if (width * height <= maxPixels) return 1;
  if (width > OCR_HALF_MAX_WIDTH) return null;
  return half(width) * half(height) <= maxPixels ? 2 : null;
}

/** A side at half resolution: an odd last row or column is a pixel of its own. */
const half = (n: number): number => Math.ceil(n / 2);

/**
 * The raster of a `width`×`height` picture read at half resolution (ocrScale said 2): `paint` writes the
 * half, and `from` keeps the picture's own size for what the user is told (halfNote).
 */
export function halfRaster(width: number, height: number, paint: OcrRaster["paint"]): OcrRaster {
  return { width: half(width), height: half(height), from: { width, height }, paint };
}

/**
 * The widest picture read at half resolution: its decoder's rows (at most ≈ 34 bytes a pixel of width, a
 * 16-bit RGBA PNG's two packed rows, samples, an RGBA row and the sums) stay within the budget's fixed part.
 */
export const OCR_HALF_MAX_WIDTH = 65_536;

/** Why a picture is not read: over the limit even at half resolution, or `why` it is not halved. */
export function overPixelsMessage(
  what: string,
  width: number,
  height: number,
  maxPixels: number,
  why?: string,
): string {
  const over = `${what} has ${width}×${height} pixels, more than the ${maxPixels} OCR reads`;
  if (why === undefined && width > OCR_HALF_MAX_WIDTH)
    return `${over}, and a picture over ${OCR_HALF_MAX_WIDTH} pixels wide is not read at half resolution`;
  return why === undefined
    ? `${over}, even at half resolution (${half(width)}×${half(height)})`
    : `${over}, and ${why}`;
}

/** What a user is told about a raster read at half resolution (undefined when read whole). */
export function halfNote(raster: OcrRaster): string | undefined {
  if (raster.from === undefined) return undefined;
  return `read at half resolution (${raster.from.width}×${raster.from.height} → ${raster.width}×${raster.height})`;
}

/** What an engine read: the text and, when it knows, its confidence (0–1). */
export interface OcrText {
  text: string;
  /** Mean confidence of the words read, weighted by their length, 0–1. */
  confidence?: number | undefined;
  /** What the reader did that a user should know (an image read at half resolution). */
  note?: string | undefined;
}

/** The limits one recognition runs under (resolved from OcrOptions). */
export interface OcrRunLimits {
  max_pixels: number;
  /** Estimated CPU budget of one image in ms; over it the engine refuses with `too_large`. */
  cpu_ms?: number | undefined;
  language: string;
}

export interface OcrEngine {
  readonly name: string;
  /** Image formats the engine decodes itself (a format outside this list is unsupported, not failed). */
  readonly formats: readonly ImageFormat[];
  /**
   * Recognised text. Throwing an AttachmentError (`too_large` over a limit) passes it on; throwing anything
   * else means the image could not be read (reported as corrupt).
   */
  recognize(image: OcrImage, model: Uint8Array, limits?: OcrRunLimits): Promise<string | OcrText>;
  /** Text of already decoded pixels (a scanned PDF page). Without it such pages stay unread. */
  recognizePixels?(
    pixels: OcrPixels,
    model: Uint8Array,
    limits?: OcrRunLimits,
  ): Promise<string | OcrText>;
  /**
   * Text of an image decoded straight into the engine's memory (a scanned PDF page's image, read by
   * edge-offload's own decoders): preferred to recognizePixels, which needs the pixels in a buffer first.
   */
  recognizeRaster?(
    raster: OcrRaster,
    model: Uint8Array,
    limits?: OcrRunLimits,
  ): Promise<string | OcrText>;
}

export interface OcrModelSource {
  readonly name: string;
  /** The model of a language (default "eng"), or null when it is absent. */
  load(language?: string): Promise<Uint8Array | null>;
}

export interface OcrOptions {
  enabled: boolean;
  engine?: OcrEngine | undefined;
  model?: OcrModelSource | undefined;
  /** Largest image accepted, in pixels (width × height): decoding and OCR cost, and memory, grow with it. */
  max_pixels?: number | undefined;
  /** Model language (a traineddata name such as "eng"); default "eng". */
  language?: string | undefined;
  /** Scanned PDF: most pages without a text layer read by OCR; a PDF needing more is refused (`too_large`). */
  max_pages?: number | undefined;
  /** Estimated CPU budget per image or page, in ms (checked after layout analysis, before recognition). */
  cpu_ms?: number | undefined;
  /** Below this confidence (0–1) the text is refused (`low_confidence`): the image is better sent natively. */
  min_confidence?: number | undefined;
}

const MiB = 1024 * 1024;

/**
 * The memory one OCR may take at its peak, above an idle engine: half of a Worker isolate's 128 MB, so the
 * engine at rest (its model and code), the request's own bytes and another request in flight fit beside it.
 */
export const OCR_PEAK_BUDGET_BYTES = 64 * MiB;
/**
 * Peak bytes per pixel of one OCR, for every format, bit depth and layout read here (measured by the
 * budgets suite, test/unit/work-budgets.test.ts): the engine's image buffer, decoded into in place (4), and
 * Tesseract's own copy of it (4), its grey and binary versions reusing the first.
 */
export const OCR_PEAK_BYTES_PER_PIXEL = 8;
/**
 * The part of the peak that does not grow with the image: Tesseract's working set for a page's layout and
 * text (a few MB on a dense page), a decoder's rows and inflation slices, with room to spare.
 */
export const OCR_PEAK_FIXED_BYTES = 8 * MiB;
/**
 * The largest image OCR reads by default, derived from the budget: (64 MiB − 8 MiB) / 8 bytes, rounded
 * down: 7.3 megapixels. A 1080p or 1440p screenshot (2.1, 3.7 MP) or an A4 page at 270 dpi (7.1 MP) is
 * read; a 4K screenshot (8.3 MP), an A4 page at 300 dpi (8.7 MP) or a phone's 12 MP photo is over it and
 * read at half resolution (ocrScale). A deployment may raise it (OFFLOAD_OCR_LIMITS) knowing each megapixel costs 8 MB more.
 */
export const DEFAULT_OCR_MAX_PIXELS =
  Math.floor((OCR_PEAK_BUDGET_BYTES - OCR_PEAK_FIXED_BYTES) / OCR_PEAK_BYTES_PER_PIXEL / 100_000) *
  100_000;
/**
 * An engine whose memory grew past this is dropped after its image (WebAssembly memory never shrinks): an
 * idle isolate then holds the engine at about its resting size (≈ 28 MiB with the English model), not at its
 * largest image's.
 */
export const DEFAULT_OCR_MAX_HEAP_BYTES = 48 * MiB;
export const DEFAULT_OCR_LANGUAGE = "eng";
export const DEFAULT_OCR_MAX_PAGES = 10;
export const DEFAULT_OCR_MIN_CONFIDENCE = 0.6;

/** The limits of one recognition under these options. */
export function ocrRunLimits(ocr: OcrOptions): OcrRunLimits {
  return {
    max_pixels: ocr.max_pixels ?? DEFAULT_OCR_MAX_PIXELS,
    cpu_ms: ocr.cpu_ms,
    language: ocr.language ?? DEFAULT_OCR_LANGUAGE,
  };
}

/** The part of an extraction's cache variant that OCR decides: what reads the text, and what it accepts. */
export function ocrVariant(ocr: OcrOptions): string {
  const floor = ocr.min_confidence ?? DEFAULT_OCR_MIN_CONFIDENCE;
  return `ocr-${ocr.engine?.name ?? "none"}-${ocr.model?.name ?? "none"}-${ocr.language ?? DEFAULT_OCR_LANGUAGE}-k${floor}`;
}

/** An engine's answer as text and confidence. */
export function ocrTextOf(answer: string | OcrText): OcrText {
  return typeof answer === "string" ? { text: answer } : answer;
}

/** The structural part of an R2 bucket this needs (so the library does not depend on Workers types). */
export interface ModelBucket {
  get(key: string): Promise<{ arrayBuffer(): Promise<ArrayBuffer> } | null>;
}

/** Gzip's magic bytes: models may be stored compressed (the npm packages ship them so). */
function isGzip(b: Uint8Array): boolean {
  return b.length > 2 && b[0] === 0x1f && b[1] === 0x8b;
}

async function gunzip(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>])
    .stream()
    .pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/**
 * Models read once from a bucket (R2) and kept for the life of the source: create it at module scope in a
 * Worker so every request of an isolate shares one copy. `key` is the object's key, or a function of the
 * language; a gzipped object is inflated once. An absent model or a failed read is not cached.
 */
export function bucketModelSource(
  bucket: ModelBucket,
  key: string | ((language: string) => string),
): OcrModelSource {
  const pending = new Map<string, Promise<Uint8Array | null>>();
  const keyOf = typeof key === "string" ? () => key : key;
  return {
    name: typeof key === "string" ? `bucket:${key}` : `bucket:${key("{lang}")}`,
    load(language = DEFAULT_OCR_LANGUAGE) {
      const k = keyOf(language);
      const known = pending.get(k);
      if (known) return known;
      const current = (async () => {
        const object = await bucket.get(k);
        if (object === null) return null;
        const bytes = new Uint8Array(await object.arrayBuffer());
        return isGzip(bytes) ? gunzip(bytes) : bytes;
      })();
      pending.set(k, current);
      // Only a model that was read is kept: an absent one may be uploaded later, a failed read retried.
      current.then(
        (model) => {
          if (model === null && pending.get(k) === current) pending.delete(k);
        },
        () => {
          if (pending.get(k) === current) pending.delete(k);
        },
      );
      return current;
    },
  };
}

/** A model already in memory (tests, Node callers that read it from disk). */
export function bytesModelSource(bytes: Uint8Array | null, name = "bytes"): OcrModelSource {
  return { name, load: async () => bytes };
}
