/** The vocabulary of attachment extraction: what goes in, what is detected, what comes out. */
import type { ImageFormat } from "../core/bytes/image.ts";

export type { ImageFormat };

/**
 * Image formats the OCR path decodes to pixels (image-decode.ts). Kept here so that naming them does
 * not load the decoders, which are optional dependencies loaded on first use.
 */
export const DECODED_FORMATS: readonly ImageFormat[] = ["png", "jpeg"];

/**
 * Raw bytes with what the sender declared about them. The declared type may be wrong: magic bytes
 * win.
 */
export interface BytesAttachment {
  data: Uint8Array | ArrayBuffer;
  media_type?: string | undefined;
  filename?: string | undefined;
}

/** An Anthropic `base64` source (`document` or `image` block), optionally named. */
export interface Base64Source {
  type: "base64";
  media_type: string;
  data: string;
  filename?: string | undefined;
}

/** An Anthropic plain-text `document` source. */
export interface TextSource {
  type: "text";
  media_type?: string | undefined;
  data: string;
  filename?: string | undefined;
}

/**
 * Sources that carry no bytes here (a URL, a Files API id, inline content blocks): never
 * extractable.
 */
export interface RemoteSource {
  type: "url" | "file" | "content";
  [key: string]: unknown;
}

/** A whole Anthropic `document` or `image` content block; its `title` is used as the file name. */
export interface MediaBlock {
  type: "document" | "image";
  source: Base64Source | TextSource | RemoteSource;
  title?: string | undefined;
  [key: string]: unknown;
}

export type Attachment = BytesAttachment | Base64Source | TextSource | MediaBlock;

/** What the bytes are, independent of whether we can read them. */
export type DocumentFormat = "pdf" | "docx" | "xlsx";
export type TextFormat = "text" | "csv" | "tsv" | "json" | "html" | "markdown" | "xml";
/**
 * Recognised but never extracted here (legacy binary Office, encrypted OOXML, other containers).
 */
export type ForeignFormat =
  | "doc"
  | "xls"
  | "ppt"
  | "ooxml_encrypted"
  | "pptx"
  | "xlsb"
  | "opendocument"
  | "rtf"
  | "zip"
  | "ole"
  | "remote"
  | "unknown";
export type DetectedFormat = DocumentFormat | TextFormat | ImageFormat | ForeignFormat;
export type ExtractedFormat = DocumentFormat | TextFormat | ImageFormat;

export type AttachmentKind = "document" | "text" | "image" | "other";

/** Answer of the cheap probe: magic bytes and declared type only, nothing is parsed. */
export interface AttachmentProbe {
  format: DetectedFormat;
  kind: AttachmentKind;
  /**
   * True when extractText is expected to succeed on a well-formed file of this format with these
   * options.
   */
  extractable: boolean;
  /**
   * Why not, when `extractable` is false (the same wording the UnsupportedAttachmentError would
   * carry).
   */
  reason?: string;
  /** Size of the decoded bytes. */
  bytes: number;
  /**
   * Images: pixel dimensions, when the header gives them (for a placeholder that names the image).
   */
  width?: number;
  height?: number;
}

export type TruncatedBy = "max_pages" | "max_chars" | "max_rows" | "max_cells" | "max_sheets";

export interface ExtractResult {
  text: string;
  format: ExtractedFormat;
  /** PDF: pages in the document. */
  pages?: number;
  /** PDF: pages actually read (≤ pages). */
  pages_extracted?: number;
  /** XLSX: worksheets in the workbook. */
  sheets?: number;
  /** Images: pixel dimensions when the header gives them. */
  width?: number;
  height?: number;
  /** OCR: mean confidence of the words read (0–1, weighted by length; the lowest page's for a PDF). */
  confidence?: number;
  /** PDF: pages whose text was read by OCR (no text layer). */
  ocr_pages?: number;
  /** OCR: what a user should know about how it read (an image over the pixel limit read at half resolution). */
  ocr_note?: string;
  /** True when a cap cut the text short; `truncated_by` names the first cap that did. */
  truncated: boolean;
  truncated_by?: TruncatedBy;
}
