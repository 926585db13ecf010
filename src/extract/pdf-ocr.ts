/**
 * Scanned PDF pages through OCR. A page without a text layer is, in almost every scan, one large image drawn
 * over the page: pdf.js already decodes it (JPEG, JBIG2, CCITT, Flate) while building the page's operator
 * list, so the largest image drawn is handed to the engine as pixels. Workers have no canvas, so a page is
 * never rendered: vector-drawn text without a text layer (outlined glyphs) stays unread.
 *
 * Bounded like any upload: pdf.js is told not to decode images over `max_pixels` (getDocument's maxImageSize),
 * `max_pages` caps how many pages OCR reads (a PDF that needs more is refused, `too_large`), and the engine
 * checks its CPU estimate per page.
 */
import { ExtractionFailedError } from "./errors.ts";
import type { OcrOptions, OcrPixels, OcrRunLimits } from "./ocr.ts";
import { DEFAULT_OCR_MAX_PAGES } from "./ocr.ts";
import { loadOcrModel, recognized } from "./ocr-run.ts";

/** What pdf.js hands back for a decoded image (kind 1: 1 bit grey, 2: RGB, 3: RGBA). */
interface PdfImage {
  width?: number;
  height?: number;
  kind?: number;
  data?: Uint8Array | Uint8ClampedArray;
}

/** The parts of a pdf.js page this needs. */
export interface OcrablePage {
  getOperatorList(): Promise<{ fnArray: number[]; argsArray: unknown[][] }>;
  objs: { get(id: string, callback: (data: unknown) => void): unknown };
  commonObjs: { get(id: string, callback: (data: unknown) => void): unknown };
}

export interface PdfOps {
  paintImageXObject: number;
  paintInlineImageXObject: number;
}

function pixelsOf(image: PdfImage): OcrPixels | null {
  const { width, height, kind, data } = image;
  if (!width || !height || data === undefined) return null;
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (kind === 2 || kind === 3) {
    const channels = kind === 2 ? 3 : 4;
    return bytes.length >= width * height * channels
      ? { width, height, channels, data: bytes }
      : null;
  }
  if (kind === 1) {
    // Packed rows, one bit per pixel, set = white.
    const stride = Math.ceil(width / 8);
    if (bytes.length < stride * height) return null;
    const grey = new Uint8Array(width * height);
    for (let y = 0; y < height; y++)
      for (let x = 0; x < width; x++)
        grey[y * width + x] = (bytes[y * stride + (x >> 3)]! >> (7 - (x & 7))) & 1 ? 255 : 0;
    return { width, height, channels: 1, data: grey };
  }
  return null;
}

/** The largest image the page draws, decoded, or null when it draws none within the limits. */
async function largestImage(page: OcrablePage, ops: PdfOps): Promise<OcrPixels | null> {
  const list = await page.getOperatorList();
  let best: OcrPixels | null = null;
  for (let i = 0; i < list.fnArray.length; i++) {
    const fn = list.fnArray[i];
    let image: unknown;
    if (fn === ops.paintInlineImageXObject) image = list.argsArray[i]?.[0];
    else if (fn === ops.paintImageXObject) {
      const id = list.argsArray[i]?.[0];
      if (typeof id !== "string") continue;
      const objs = id.startsWith("g_") ? page.commonObjs : page.objs;
      image = await new Promise((resolve) => objs.get(id, resolve));
    } else continue;
    const pixels = typeof image === "object" && image !== null ? pixelsOf(image as PdfImage) : null;
    if (
      pixels !== null &&
      (best === null || pixels.width * pixels.height > best.width * best.height)
    )
      best = pixels;
  }
  return best;
}

/** OCR of the pages of one document: the model is loaded on the first page that needs it. */
export class PdfOcr {
  readonly #ocr: OcrOptions;
  readonly #ops: PdfOps;
  #model: Promise<{ model: Uint8Array; limits: OcrRunLimits }> | undefined;
  /** Pages OCR ran on so far. */
  pages = 0;
  /** The lowest confidence among them. */
  confidence: number | undefined;

  constructor(ocr: OcrOptions, ops: PdfOps) {
    this.#ocr = ocr;
    this.#ops = ops;
  }

  /** True when these options can OCR a page at all (on, with an engine that reads pixels and a model). */
  static usable(ocr: OcrOptions | undefined): ocr is OcrOptions {
    return (
      ocr?.enabled === true && ocr.engine?.recognizePixels !== undefined && ocr.model !== undefined
    );
  }

  /** The text of page `n` (1-based) read by OCR, or "" when it has no image or the image has no text. */
  async read(page: OcrablePage, n: number): Promise<string> {
    const max = this.#ocr.max_pages ?? DEFAULT_OCR_MAX_PAGES;
    const image = await largestImage(page, this.#ops);
    if (image === null) return "";
    if (this.pages >= max)
      throw new ExtractionFailedError(
        "pdf",
        "too_large",
        `more than ${max} pages have no text layer, and OCR reads at most ${max} per PDF`,
      );
    this.#model ??= loadOcrModel(this.#ocr, "pdf");
    const { model, limits } = await this.#model;
    const engine = this.#ocr.engine!;
    this.pages++;
    try {
      const read = await recognized(this.#ocr, "pdf", `page ${n}`, () =>
        engine.recognizePixels!(image, model, limits),
      );
      if (read.confidence !== undefined)
        this.confidence = Math.min(this.confidence ?? 1, read.confidence);
      return read.text;
    } catch (error) {
      // A blank scanned page is not a failure of the document.
      if (error instanceof ExtractionFailedError && error.reason === "empty") return "";
      throw error;
    }
  }
}
