/**
 * The texts that replace an attachment block, and what the native block is estimated to cost. Pure
 * functions of their inputs (no clock, no random id), so the same attachment in the same session
 * always renders the same bytes.
 *
 * Every replacement starts with `[attachment att_<24 hex> `: the format adapter recognises its own
 * output by that marker (a replacement inside a tool result is not the tool's text, so it is
 * neither measured nor collapsed into a stub), and the report finds the sticky record of a
 * replacement the client sent back.
 *
 * Native cost, as Anthropic documents it:
 * - an image costs about width × height / 750 tokens, after it is scaled down to fit a long edge of
 *   1,568 px and about 1.15 megapixels, so at most about 1,600 tokens; an image whose header states
 *   no size is priced at that cap;
 * - a PDF is read as text plus an image of every page: each page ≈ 1,600 tokens of image plus its
 *   text;
 * - a plain-text document costs its text.
 */
import { formatInt, plural } from "../text.ts";

export const ATTACHMENT_ID = /^att_[0-9a-f]{24}$/;
const MARKER = "[attachment att_";

export const IMAGE_PIXELS_PER_TOKEN = 750;
export const IMAGE_MAX_EDGE = 1568;
export const IMAGE_MAX_TOKENS = 1600;
export const PDF_PAGE_IMAGE_TOKENS = 1600;

/** One sentence that states the estimate (it is shown in every report). */
export const NATIVE_ESTIMATE =
  "native tokens are estimated: an image ≈ width×height/750 after scaling to a 1,568 px long edge (at most 1,600; 1,600 when its size is unknown); a PDF ≈ 1,600 per page plus its text; a text document = its text";

/**
 * The id in a replacement's marker, read from the raw JSON string (a few chars, no decoding), or
 * null.
 */
export function attachmentIdIn(raw: string, node: { start: number; end: number }): string | null {
  const at = node.start + 1;
  if (node.end - node.start < MARKER.length + 26 || !raw.startsWith(MARKER, at)) return null;
  const id = raw.slice(at + 12, at + 40);
  return ATTACHMENT_ID.test(id) && raw.charCodeAt(at + 40) === 0x20 ? id : null;
}

/** Estimated tokens of an image sent natively; the cap when its header states no size. */
export function imageTokens(width: number | undefined, height: number | undefined): number {
  if (width === undefined || height === undefined || width <= 0 || height <= 0)
    return IMAGE_MAX_TOKENS;
  const scale = Math.min(1, IMAGE_MAX_EDGE / Math.max(width, height));
  return Math.min(
    IMAGE_MAX_TOKENS,
    Math.max(1, Math.ceil((width * scale * height * scale) / IMAGE_PIXELS_PER_TOKEN)),
  );
}

/** A document sent natively: PDFs per page (image + text), anything else as its text. */
export function documentTokens(
  format: string,
  pages: number | undefined,
  pagesRead: number | undefined,
  textTokens: number,
): number {
  if (format !== "pdf") return textTokens;
  const total = pages ?? pagesRead ?? 1;
  const read = Math.max(1, pagesRead ?? total);
  return total * PDF_PAGE_IMAGE_TOKENS + Math.round((textTokens * total) / read);
}

function quoted(title: string | undefined): string {
  if (title === undefined || title.trim() === "") return "";
  const t = title.length > 200 ? `${title.slice(0, 200)}…` : title;
  return ` ${JSON.stringify(t)}`;
}

export interface DocumentTextInput {
  id: string;
  title?: string | undefined;
  format: string;
  pages?: number | undefined;
  bytes: number;
  /** The turn it arrived on. */
  turn: number;
  text: string;
}

export function renderDocumentText(d: DocumentTextInput): string {
  const facts = [
    d.format,
    ...(d.pages === undefined ? [] : [plural(d.pages, "page")]),
    `${formatInt(d.bytes)} bytes`,
  ];
  return `${MARKER}${d.id.slice(4)} document${quoted(d.title)}: ${facts.join(", ")}, sent on turn ${d.turn}. Its text, extracted by edge-offload, follows.]\n${d.text}`;
}

export interface ImagePlaceholderInput {
  id: string;
  format: string;
  width?: number | undefined;
  height?: number | undefined;
  bytes: number;
  turn: number;
  /** Text read from the image when OCR is on. */
  ocr_text?: string | undefined;
}

export function renderImagePlaceholder(i: ImagePlaceholderInput): string {
  const size = i.width !== undefined && i.height !== undefined ? [`${i.width}x${i.height} px`] : [];
  const head = `${MARKER}${i.id.slice(4)} image: ${[i.format, ...size, `${formatInt(i.bytes)} bytes`].join(", ")}, sent on turn ${i.turn}. The image itself is no longer included, to save tokens; ask for it again if you need to see it.]`;
  return i.ocr_text === undefined
    ? head
    : `${head}\nText read from the image (OCR):\n${i.ocr_text}`;
}
