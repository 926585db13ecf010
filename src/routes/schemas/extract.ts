/**
 * POST /v1/extract's shapes, in zod: a file's text, a failure in the one error shape, a batch. The
 * routes validate with these, the tests check responses against them, and /openapi.json is
 * generated from them (openapi.ts), so the three cannot disagree.
 */
import { z } from "zod";

const ExtractedFormat = z.enum([
  "pdf",
  "docx",
  "xlsx",
  "text",
  "csv",
  "tsv",
  "json",
  "html",
  "markdown",
  "xml",
  "png",
  "jpeg",
  "gif",
  "webp",
  "bmp",
  "tiff",
  "heic",
  "avif",
]);

const ExtractCacheFields = {
  cached: z
    .boolean()
    .describe(
      "The outcome came from the tenant's extraction cache (keyed by the file's SHA-256): nothing was parsed.",
    ),
  cache_error: z
    .enum(["read", "write"])
    .optional()
    .describe(
      "The cache could not be read or written; the outcome is still right (the file was extracted).",
    ),
};

export const ExtractSuccessSchema = z
  .object({
    ok: z.literal(true),
    format: ExtractedFormat,
    text: z.string(),
    pages: z.int().optional().describe("PDF: pages in the document."),
    pages_extracted: z.int().optional().describe("PDF: pages read (at most max_pages)."),
    sheets: z.int().optional().describe("XLSX: worksheets in the workbook."),
    width: z.int().optional(),
    height: z.int().optional(),
    confidence: z
      .number()
      .optional()
      .describe("OCR: mean confidence of the words read (0–1, weighted by length)."),
    ocr_pages: z.int().optional().describe("PDF: pages without a text layer read by OCR."),
    ocr_note: z
      .string()
      .optional()
      .describe(
        "OCR: how it read, when a user should know: an image over the pixel limit read at half resolution.",
      ),
    truncated: z
      .boolean()
      .describe(
        "A cap (max_pages, max_chars, max_rows, max_cells, max_sheets) cut the text short.",
      ),
    truncated_by: z
      .enum(["max_pages", "max_chars", "max_rows", "max_cells", "max_sheets"])
      .optional(),
    digest: z.string().describe("SHA-256 of the file's bytes (hex)."),
    ...ExtractCacheFields,
  })
  .describe("The extracted text.");

export const AttachmentErrorBodySchema = z.object({
  type: z.enum([
    "unsupported_attachment",
    "extraction_dependency_missing",
    "extraction_failed",
    "internal",
  ]),
  message: z.string(),
  format: z
    .string()
    .optional()
    .describe("What the bytes were detected as (pdf, doc, webp, unknown…)."),
  reason: z
    .enum(["corrupt", "encrypted", "empty", "too_large", "low_confidence"])
    .optional()
    .describe("extraction_failed only."),
  dependency: z
    .enum(["ocr_engine", "ocr_model", "pdf_engine"])
    .optional()
    .describe("extraction_dependency_missing only."),
  index: z
    .int()
    .optional()
    .describe("Position of the file in a multipart request (on_error=raise)."),
  fallback: z.literal("native").describe("Send the file natively instead."),
});

export const ExtractFailureSchema = z
  .object({
    error: AttachmentErrorBodySchema,
    digest: z.string().optional().describe("SHA-256 of the file's bytes, when they could be read."),
    ...ExtractCacheFields,
  })
  .describe("The file could not be extracted: send it natively.");

const BatchItemFields = {
  index: z.int().describe("Position among the request's files."),
  field: z.string().describe("The multipart field name."),
  filename: z.string().optional(),
};

export const ExtractBatchSchema = z
  .object({
    results: z.array(
      z.union([
        ExtractSuccessSchema.extend(BatchItemFields),
        ExtractFailureSchema.extend({ ...BatchItemFields, ok: z.literal(false) }),
      ]),
    ),
  })
  .describe("One result per file, in order (on_error=warn).");
