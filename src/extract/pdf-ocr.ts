/**
 * Scanned PDF pages through OCR. A page without a text layer is, in almost every scan, one large image drawn
 * over the page, and OCR reads the largest image the page draws. Workers have no canvas, so a page is never
 * rendered: vector-drawn text without a text layer (outlined glyphs) stays unread.
 *
 * Only that image is decoded. The page's content is scanned first (pdf-images.ts: no image decoded, each
 * known by its declared size), the largest is checked against `max_pixels` and decoded straight into the
 * engine's buffer, like an image file. A colour space read only by pdf.js is handed to pdf.js, which decodes
 * every image of the page at once while it builds the page's operator list: that is allowed only when all of
 * them, and the engine's own copy of the one read, fit the memory one OCR may use (ocr.ts); a page over it
 * is refused (`too_large`) before pdf.js decodes anything. CCITT fax, JBIG2 and JPEG 2000 images are read by
 * nothing here (pdf.js decodes them with WebAssembly compiled from bytes, which production Workers forbid):
 * such a page is left unread, and the PDF's "no text layer" failure says why.
 *
 * Bounded like any upload: `max_pages` caps how many pages OCR reads (a PDF that needs more is refused,
 * `too_large`), reading the file's structure has a budget of its own (pdf-objects.ts), and the engine checks
 * its CPU estimate per page.
 */
import { ExtractionFailedError } from "./errors.ts";
import {
  DEFAULT_OCR_MAX_PAGES,
  halfNote,
  OCR_PEAK_BUDGET_BYTES,
  OCR_PEAK_BYTES_PER_PIXEL,
  type OcrOptions,
  type OcrPixels,
  type OcrRaster,
  type OcrRunLimits,
  type OcrText,
  ocrRunLimits,
} from "./ocr.ts";
import { loadOcrModel, recognized } from "./ocr-run.ts";
import { type PageImage, pageImageRaster, scanPage } from "./pdf-images.ts";
import { type DocumentBudget, PdfDocument } from "./pdf-objects.ts";
import { pixelsRaster } from "./raster.ts";

/** What pdf.js hands back for a decoded image (kind 1: 1 bit grey, 2: RGB, 3: RGBA). */
interface PdfImage {
  width?: number;
  height?: number;
  kind?: number;
  data?: Uint8Array | Uint8ClampedArray;
}

/** The parts of a pdf.js page this needs. */
export interface OcrablePage {
  /** The page's object (pdf.js's PDFPageProxy.ref). */
  ref?: { num: number; gen: number } | null;
  getOperatorList(params?: { annotationMode?: number }): Promise<{
    fnArray: number[];
    argsArray: unknown[][];
  }>;
  objs: { get(id: string, callback: (data: unknown) => void): unknown };
  commonObjs: { get(id: string, callback: (data: unknown) => void): unknown };
}

export interface PdfOps {
  paintImageXObject: number;
  paintInlineImageXObject: number;
  /** pdf.js's AnnotationMode.DISABLE: annotations' appearances (and their images) are left out. */
  annotationsDisabled: number;
}

const MiB = 1024 * 1024;

/** How much reading a PDF's structure for OCR may inflate (content, object and cross-reference streams). */
const STRUCTURE_INFLATE_BYTES = 32 * MiB;

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

/** The largest image pdf.js decoded for the page, or null when it drew none it could decode. */
async function largestDecoded(page: OcrablePage, ops: PdfOps): Promise<OcrPixels | null> {
  const list = await page.getOperatorList({ annotationMode: ops.annotationsDisabled });
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

/** An attachment error of the image decoders, said of the PDF. */
function ofPdf(error: unknown, n: number): unknown {
  if (!(error instanceof ExtractionFailedError) || error.format === "pdf") return error;
  return new ExtractionFailedError(
    "pdf",
    error.reason ?? "corrupt",
    `page ${n}: ${error.message}`,
    error,
  );
}

const mb = (bytes: number) => `${Math.round(bytes / MiB)} MB`;

/** Encodings nothing here decodes (pdf.js would need WebAssembly compiled from bytes). */
const UNREAD = new Set(["CCITTFaxDecode", "JBIG2Decode", "JPXDecode"]);
const CODEC_NAMES: Record<string, string> = {
  CCITTFaxDecode: "CCITT fax",
  JBIG2Decode: "JBIG2",
  JPXDecode: "JPEG 2000",
};

/** OCR of the pages of one document: the model is loaded on the first page that needs it. */
export class PdfOcr {
  readonly #ocr: OcrOptions;
  readonly #ops: PdfOps;
  readonly #bytes: Uint8Array;
  #doc: PdfDocument | undefined;
  #model: Promise<{ model: Uint8Array; limits: OcrRunLimits }> | undefined;
  /** Pages OCR ran on so far. */
  pages = 0;
  /** The lowest confidence among them. */
  confidence: number | undefined;
  /** Pages left unread because their image's encoding is read by nothing here, by encoding. */
  readonly #unread = new Map<string, number>();
  /** Pages whose image was read at half resolution, with the sizes. */
  readonly #halved: string[] = [];

  /** `bytes`: the PDF itself (kept as it is: pdf.js reads its own copy). */
  constructor(ocr: OcrOptions, ops: PdfOps, bytes: Uint8Array) {
    this.#ocr = ocr;
    this.#ops = ops;
    this.#bytes = bytes;
  }

  /** True when these options can OCR a page at all (on, with an engine that reads pixels and a model). */
  static usable(ocr: OcrOptions | undefined): ocr is OcrOptions {
    return (
      ocr?.enabled === true &&
      (ocr.engine?.recognizeRaster !== undefined || ocr.engine?.recognizePixels !== undefined) &&
      ocr.model !== undefined
    );
  }

  #document(): PdfDocument {
    if (this.#doc === undefined) {
      const budget: DocumentBudget = {
        inflate: STRUCTURE_INFLATE_BYTES,
        // Objects parsed: at most one for every few bytes of the file.
        objects: Math.max(10_000, Math.floor(this.#bytes.length / 4)),
      };
      this.#doc = new PdfDocument(this.#bytes, budget);
    }
    return this.#doc;
  }

  /** The text of page `n` (1-based) read by OCR, or "" when it has no image or the image has no text. */
  async read(page: OcrablePage, n: number): Promise<string> {
    const max = this.#ocr.max_pages ?? DEFAULT_OCR_MAX_PAGES;
    const maxPixels = ocrRunLimits(this.#ocr).max_pixels;
    if (page.ref === undefined || page.ref === null) return "";
    const doc = this.#document();
    if (doc.encrypted)
      throw new ExtractionFailedError(
        "pdf",
        "encrypted",
        `page ${n} has no text layer, and OCR does not read the images of an encrypted PDF`,
      );
    const scan = scanPage(doc, page.ref);
    if (scan.drawn.length === 0) return "";
    const chosen = scan.drawn.reduce((a, b) => (b.width * b.height > a.width * a.height ? b : a));
    if (UNREAD.has(chosen.codec ?? "")) {
      this.#unread.set(chosen.codec!, (this.#unread.get(chosen.codec!) ?? 0) + 1);
      return "";
    }
    if (this.pages >= max)
      throw new ExtractionFailedError(
        "pdf",
        "too_large",
        `more than ${max} pages have no text layer, and OCR reads at most ${max} per PDF`,
      );
    let raster: OcrRaster | null;
    try {
      raster = pageImageRaster(doc, chosen, maxPixels);
    } catch (error) {
      throw ofPdf(error, n);
    }
    if (raster === null) {
      this.#withinPageBudget(scan.reachableBytes, scan.drawn, chosen, n);
      const pixels = await largestDecoded(page, this.#ops);
      if (pixels === null) return "";
      raster = pixelsRaster(pixels);
    }
    this.#model ??= loadOcrModel(this.#ocr, "pdf");
    const { model, limits } = await this.#model;
    this.pages++;
    try {
      const read = await recognized(this.#ocr, "pdf", `page ${n}`, () =>
        this.#recognize(raster, model, limits),
      );
      if (read.confidence !== undefined)
        this.confidence = Math.min(this.confidence ?? 1, read.confidence);
      const note = halfNote(raster);
      if (note !== undefined) this.#halved.push(`page ${n} ${note}`);
      return read.text;
    } catch (error) {
      // A blank scanned page is not a failure of the document.
      if (error instanceof ExtractionFailedError && error.reason === "empty") return "";
      throw ofPdf(error, n);
    }
  }

  /** Pages read at half resolution, for the result (the first three named), or undefined. */
  note(): string | undefined {
    const h = this.#halved;
    if (h.length === 0) return undefined;
    return h.length <= 3
      ? h.join("; ")
      : `${h.slice(0, 3).join("; ")}; ${h.length - 3} more pages too`;
  }

  /** Why pages without a text layer stayed unread, for the PDF's failure (or ""). */
  unreadNote(): string {
    if (this.#unread.size === 0) return "";
    const parts = [...this.#unread].map(([codec, n]) => `${n} in ${CODEC_NAMES[codec] ?? codec}`);
    return `; OCR read no page whose image is CCITT fax, JBIG2 or JPEG 2000 (${parts.join(", ")})`;
  }

  #recognize(
    raster: OcrRaster,
    model: Uint8Array,
    limits: OcrRunLimits,
  ): Promise<string | OcrText> {
    const engine = this.#ocr.engine!;
    if (engine.recognizeRaster !== undefined) return engine.recognizeRaster(raster, model, limits);
    const data = new Uint8Array(raster.width * raster.height * 4);
    raster.paint(() => data);
    return engine.recognizePixels!(
      { width: raster.width, height: raster.height, channels: 4, data },
      model,
      limits,
    );
  }

  /**
   * pdf.js decodes every image the page reaches, all at once: refused unless they and the engine's copy of
   * the one read fit the memory one OCR may use.
   */
  #withinPageBudget(reachable: number, drawn: PageImage[], chosen: PageImage, n: number): void {
    // Inline images are in the content, not the resources.
    const decoded = drawn.reduce((s, d) => s + (d.inline ? d.pdfjsBytes : 0), reachable);
    const peak = decoded + OCR_PEAK_BYTES_PER_PIXEL * chosen.width * chosen.height;
    if (peak > OCR_PEAK_BUDGET_BYTES)
      throw new ExtractionFailedError(
        "pdf",
        "too_large",
        `page ${n}'s image is in a colour space only pdf.js reads, and pdf.js decodes all ${drawn.length} of the page's images at once: about ${mb(peak)} to OCR, over the ${mb(OCR_PEAK_BUDGET_BYTES)} one OCR may use`,
      );
  }
}
