/**
 * PDF text through unpdf's serverless pdf.js build. Pages are read one at a time (unpdf's own extractText
 * reads them all at once) so max_pages and max_chars stop the work, not just the output; the document is
 * always destroyed through its loading task. pdf.js is imported lazily: callers that never see a PDF do not
 * pay for loading 1.7 MB of code.
 */
import { safeCut } from "../core/text.ts";
import {
  AttachmentError,
  ExtractionDependencyMissingError,
  ExtractionFailedError,
} from "./errors.ts";
import { ocrRunLimits } from "./ocr.ts";
import type { ResolvedExtractOptions } from "./options.ts";
import { PdfOcr } from "./pdf-ocr.ts";
import type { ExtractResult, TruncatedBy } from "./types.ts";

interface TextItemLike {
  str?: string;
  hasEOL?: boolean;
}

type PdfJs = Awaited<ReturnType<typeof import("unpdf").getResolvedPDFJS>>;

/** The Node version when it is older than 22 (the runtime unpdf 1.9 and later need), else "". */
function oldNode(): string {
  const v = (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node;
  return v !== undefined && Number(v.split(".")[0]) < 22 ? v : "";
}

let pdfjs: Promise<PdfJs> | undefined;
function loadPdfJs(): Promise<PdfJs> {
  pdfjs ??= import("unpdf")
    .then((m) => m.getResolvedPDFJS())
    .catch((cause: unknown) => {
      pdfjs = undefined;
      // Not the file's fault: the runtime could not load pdf.js (a bundle without unpdf, say, or a Node
      // older than the installed unpdf needs).
      throw new ExtractionDependencyMissingError(
        "pdf",
        "pdf_engine",
        `pdf.js (unpdf) could not be loaded${oldNode() ? ` on Node ${oldNode()} (unpdf 1.9 and later need Node 22 or newer; on Node 20 install unpdf@1.8)` : ""}`,
        cause,
      );
    });
  return pdfjs;
}

function pageText(items: readonly TextItemLike[]): string {
  let s = "";
  for (const item of items) {
    if (typeof item.str !== "string") continue;
    s += item.str;
    if (item.hasEOL) s += "\n";
  }
  // Same normalisation as unpdf's merged text: runs of spaces collapse, line structure survives.
  return s
    .replace(/[^\S\n]+/g, " ")
    .replace(/ ?\n ?/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

function mapPdfError(error: unknown): ExtractionFailedError {
  const name = (error as { name?: unknown } | null)?.name;
  if (name === "PasswordException")
    return new ExtractionFailedError("pdf", "encrypted", "the PDF is password-protected", error);
  return new ExtractionFailedError(
    "pdf",
    "corrupt",
    name === "InvalidPDFException" ? "the PDF is invalid or damaged" : "the PDF could not be read",
    error,
  );
}

export async function extractPdf(
  bytes: Uint8Array,
  options: ResolvedExtractOptions,
): Promise<ExtractResult> {
  const { getDocument, OPS, AnnotationMode } = await loadPdfJs();
  // With OCR on, pages without a text layer are read from their images (pdf-ocr.ts).
  const ocr = PdfOcr.usable(options.ocr)
    ? new PdfOcr(options.ocr, { ...OPS, annotationsDisabled: AnnotationMode.DISABLE }, bytes)
    : undefined;
  // pdf.js transfers (detaches) the buffer it is given: hand it a copy so the caller's bytes stay intact. A
  // plain Uint8Array: pdf.js refuses a Node Buffer, and a Buffer's slice() is a view, not a copy.
  const task = getDocument({
    data: new Uint8Array(bytes),
    // No wasm compiled from bytes, no eval, no font loading: production Workers forbid the first two and
    // text extraction needs none of them.
    useWasm: false,
    isEvalSupported: false,
    isOffscreenCanvasSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    stopAtErrors: false,
    verbosity: 0,
    // Images are decoded by pdf.js only for OCR, and only for encodings read nowhere else: none larger than
    // OCR reads.
    ...(ocr === undefined ? {} : { maxImageSize: ocrRunLimits(options.ocr!).max_pixels }),
  } as Parameters<PdfJs["getDocument"]>[0]);
  try {
    let doc;
    try {
      doc = await task.promise;
    } catch (error) {
      throw mapPdfError(error);
    }
    const total = doc.numPages;
    const last = Math.min(total, options.max_pages);
    const parts: string[] = [];
    let chars = 0;
    let read = 0;
    let truncatedBy: TruncatedBy | undefined;
    for (let n = 1; n <= last; n++) {
      let text: string;
      try {
        const page = await doc.getPage(n);
        const content = await page.getTextContent();
        text = pageText(content.items as TextItemLike[]);
        if (text === "" && ocr !== undefined) text = await ocr.read(page, n);
        page.cleanup();
      } catch (error) {
        if (error instanceof AttachmentError) throw error;
        throw mapPdfError(error);
      }
      read = n;
      const sep = parts.length > 0 && text !== "" ? 2 : 0;
      if (chars + sep + text.length > options.max_chars) {
        const room = options.max_chars - chars - sep;
        if (room > 0) parts.push(text.slice(0, safeCut(text, room)));
        truncatedBy = "max_chars";
        break;
      }
      if (text !== "") {
        parts.push(text);
        chars += sep + text.length;
      }
    }
    if (truncatedBy === undefined && last < total) truncatedBy = "max_pages";
    const text = parts.join("\n\n");
    if (text.trim() === "") {
      throw new ExtractionFailedError(
        "pdf",
        "empty",
        `no text layer in the ${read === total ? "" : `first ${read} of ${total} `}page${read === 1 ? "" : "s"} read (a scanned PDF?)${ocr?.unreadNote() ?? ""}`,
      );
    }
    return {
      text,
      format: "pdf",
      pages: total,
      pages_extracted: read,
      ...(ocr === undefined || ocr.pages === 0
        ? {}
        : {
            ocr_pages: ocr.pages,
            ...(ocr.confidence === undefined ? {} : { confidence: ocr.confidence }),
            ...(ocr.note() === undefined ? {} : { ocr_note: ocr.note() }),
          }),
      truncated: truncatedBy !== undefined,
      ...(truncatedBy === undefined ? {} : { truncated_by: truncatedBy }),
    };
  } finally {
    await task.destroy().catch(() => {});
  }
}
