/**
 * The cheap probe: what an attachment is, from its magic bytes first and its declared type and file name
 * second (magic wins: a PDF labelled image/png is a PDF). Only headers and, for ZIP containers, the central
 * directory's names are read; nothing is inflated or parsed.
 */

import { imageFormatOf } from "../core/bytes/image.ts";
import { OLE_MAGIC, oleKind } from "./cfb.ts";
import { looksLikeText } from "./decode.ts";
import { extensionOf, type NormalizedAttachment } from "./input.ts";
import type { OcrOptions } from "./ocr.ts";
import type {
  AttachmentKind,
  AttachmentProbe,
  DetectedFormat,
  ImageFormat,
  TextFormat,
} from "./types.ts";
import { type ZipEntry, zipDirectory } from "./zip.ts";

/** The probe reads at most this many directory entries (OOXML's main parts come early; a huge directory is
 * refused later, by extraction's own cap). */
const PROBE_ZIP_ENTRIES = 10_000;

const DECLARED: Record<string, DetectedFormat> = {
  "application/pdf": "pdf",
  "application/x-pdf": "pdf",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.template": "docx",
  "application/vnd.ms-word.document.macroenabled.12": "docx",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.template": "xlsx",
  "application/vnd.ms-excel.sheet.macroenabled.12": "xlsx",
  "application/vnd.ms-excel.sheet.binary.macroenabled.12": "xlsb",
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
  "application/msword": "doc",
  "application/vnd.ms-excel": "xls",
  "application/vnd.ms-powerpoint": "ppt",
  "application/rtf": "rtf",
  "text/rtf": "rtf",
  "application/zip": "zip",
  "text/plain": "text",
  "text/csv": "csv",
  "application/csv": "csv",
  "text/tab-separated-values": "tsv",
  "application/json": "json",
  "application/x-ndjson": "json",
  "application/jsonl": "json",
  "text/html": "html",
  "application/xhtml+xml": "html",
  "text/markdown": "markdown",
  "text/x-markdown": "markdown",
  "application/xml": "xml",
  "text/xml": "xml",
  "image/png": "png",
  "image/jpeg": "jpeg",
  "image/jpg": "jpeg",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/bmp": "bmp",
  "image/tiff": "tiff",
  "image/heic": "heic",
  "image/heif": "heic",
  "image/avif": "avif",
};

const EXTENSIONS: Record<string, DetectedFormat> = {
  pdf: "pdf",
  docx: "docx",
  docm: "docx",
  dotx: "docx",
  xlsx: "xlsx",
  xlsm: "xlsx",
  xltx: "xlsx",
  xlsb: "xlsb",
  pptx: "pptx",
  doc: "doc",
  xls: "xls",
  ppt: "ppt",
  rtf: "rtf",
  odt: "opendocument",
  ods: "opendocument",
  odp: "opendocument",
  zip: "zip",
  txt: "text",
  text: "text",
  log: "text",
  csv: "csv",
  tsv: "tsv",
  tab: "tsv",
  json: "json",
  jsonl: "json",
  ndjson: "json",
  html: "html",
  htm: "html",
  xhtml: "html",
  md: "markdown",
  markdown: "markdown",
  xml: "xml",
  png: "png",
  jpg: "jpeg",
  jpeg: "jpeg",
  gif: "gif",
  webp: "webp",
  bmp: "bmp",
  tif: "tiff",
  tiff: "tiff",
  heic: "heic",
  heif: "heic",
  avif: "avif",
};

const TEXT_FORMATS = new Set<DetectedFormat>([
  "text",
  "csv",
  "tsv",
  "json",
  "html",
  "markdown",
  "xml",
]);
const IMAGE_FORMATS = new Set<DetectedFormat>([
  "png",
  "jpeg",
  "gif",
  "webp",
  "bmp",
  "tiff",
  "heic",
  "avif",
]);

export function isTextFormat(f: DetectedFormat): f is TextFormat {
  return TEXT_FORMATS.has(f);
}
export function isImageFormat(f: DetectedFormat): f is ImageFormat {
  return IMAGE_FORMATS.has(f);
}

export function kindOf(f: DetectedFormat): AttachmentKind {
  if (f === "pdf" || f === "docx" || f === "xlsx") return "document";
  if (isTextFormat(f)) return "text";
  if (isImageFormat(f)) return "image";
  return "other";
}

function declaredFormat(a: NormalizedAttachment): DetectedFormat | undefined {
  const byType = a.media_type === undefined ? undefined : DECLARED[a.media_type];
  if (byType !== undefined && byType !== "text" && byType !== "zip") return byType;
  // A generic declaration (text/plain, application/octet-stream, zip) is refined by the file name.
  const byName = EXTENSIONS[extensionOf(a.filename) ?? ""];
  if (byName !== undefined) return byName;
  if (byType !== undefined) return byType;
  if (a.media_type?.endsWith("+json")) return "json";
  if (a.media_type?.endsWith("+xml")) return "xml";
  if (a.media_type?.startsWith("text/")) return "text";
  return undefined;
}

export interface Sniffed {
  format: DetectedFormat;
  /** The central directory, when the bytes are a readable ZIP (so extraction does not list it twice). */
  zip?: ZipEntry[];
}

function zipKind(entries: ZipEntry[]): DetectedFormat {
  const names = new Set(entries.map((e) => e.name));
  if (names.has("word/document.xml")) return "docx";
  if (names.has("xl/workbook.xml")) return "xlsx";
  if (names.has("xl/workbook.bin")) return "xlsb";
  if (names.has("ppt/presentation.xml")) return "pptx";
  if (names.has("mimetype") && names.has("content.xml")) return "opendocument";
  // OOXML written with a non-standard main part name still has its folder.
  for (const n of names) {
    if (n.startsWith("word/")) return "docx";
    if (n.startsWith("xl/")) return "xlsx";
  }
  return "zip";
}

function startsWithAscii(b: Uint8Array, s: string, at = 0): boolean {
  if (b.length < at + s.length) return false;
  for (let i = 0; i < s.length; i++) if (b[at + i] !== s.charCodeAt(i)) return false;
  return true;
}

function hasPdfHeader(b: Uint8Array): boolean {
  // pdf.js, like Acrobat, accepts the header anywhere in the first KiB.
  const end = Math.min(b.length - 5, 1024);
  for (let i = 0; i <= end; i++) if (b[i] === 0x25 && startsWithAscii(b, "%PDF-", i)) return true;
  return false;
}

function sniffText(b: Uint8Array): TextFormat {
  let i = 0;
  if (b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) i = 3;
  while (i < b.length && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++;
  const head = new TextDecoder().decode(b.subarray(i, i + 15)).toLowerCase();
  if (head.startsWith("<!doctype html") || head.startsWith("<html")) return "html";
  return "text";
}

export function sniff(a: NormalizedAttachment): Sniffed {
  const b = a.bytes;
  const declared = declaredFormat(a);
  if (a.text !== undefined)
    return { format: declared !== undefined && isTextFormat(declared) ? declared : "text" };
  if (hasPdfHeader(b)) return { format: "pdf" };
  if (startsWithAscii(b, "PK\x03\x04") || startsWithAscii(b, "PK\x05\x06")) {
    try {
      const { entries, complete } = zipDirectory(b, PROBE_ZIP_ENTRIES, "zip", true);
      return complete ? { format: zipKind(entries), zip: entries } : { format: zipKind(entries) };
    } catch {
      return { format: declared === "docx" || declared === "xlsx" ? declared : "zip" };
    }
  }
  if (OLE_MAGIC.every((v, i) => b[i] === v)) {
    const kind = oleKind(b);
    return {
      format:
        kind === "ole" && (declared === "doc" || declared === "xls" || declared === "ppt")
          ? declared
          : kind,
    };
  }
  const image = imageFormatOf(b);
  if (image !== null) return { format: image };
  if (startsWithAscii(b, "{\\rtf")) return { format: "rtf" };
  if (declared !== undefined && !isTextFormat(declared)) return { format: declared };
  if (!looksLikeText(b)) return { format: "unknown" };
  return { format: declared ?? sniffText(b) };
}

const FOREIGN_REASONS: Partial<Record<DetectedFormat, string>> = {
  doc: "legacy Word (.doc) files are not extracted",
  xls: "legacy Excel (.xls) files are not extracted",
  ppt: "legacy PowerPoint (.ppt) files are not extracted",
  ooxml_encrypted: "the Office document is password-protected (encrypted OOXML)",
  pptx: "PowerPoint (.pptx) files are not extracted",
  xlsb: "binary Excel (.xlsb) files are not extracted",
  opendocument: "OpenDocument files are not extracted",
  rtf: "RTF files are not extracted",
  zip: "ZIP archives are not extracted",
  ole: "this OLE compound file is not a format we extract",
  remote: "the source carries no bytes (URL or file reference)",
  unknown: "unrecognised binary content",
};

/** Whether the probe's "no" means unsupported or a missing dependency, and why. */
export function judge(
  format: DetectedFormat,
  ocr: OcrOptions | undefined,
): Pick<AttachmentProbe, "extractable" | "reason"> & {
  error?: "unsupported_attachment" | "extraction_dependency_missing";
  dependency?: "ocr_engine" | "ocr_model";
} {
  if (kindOf(format) === "document" || isTextFormat(format)) return { extractable: true };
  if (isImageFormat(format)) {
    if (!ocr?.enabled)
      return {
        extractable: false,
        error: "unsupported_attachment",
        reason: `${format} image: OCR is off`,
      };
    if (!ocr.engine)
      return {
        extractable: false,
        error: "extraction_dependency_missing",
        dependency: "ocr_engine",
        reason: "OCR is on but no OCR engine is configured",
      };
    if (!ocr.engine.formats.includes(format)) {
      return {
        extractable: false,
        error: "unsupported_attachment",
        reason: `the OCR engine ${ocr.engine.name} does not read ${format} images`,
      };
    }
    if (!ocr.model)
      return {
        extractable: false,
        error: "extraction_dependency_missing",
        dependency: "ocr_model",
        reason: "OCR is on but no OCR model source is configured",
      };
    return { extractable: true };
  }
  return {
    extractable: false,
    error: "unsupported_attachment",
    reason: FOREIGN_REASONS[format] ?? `${format} files are not extracted`,
  };
}
