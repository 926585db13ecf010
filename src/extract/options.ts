/**
 * Extraction limits: one zod schema with every default, snake_case like the service config, so a route can
 * validate `?max_pages=20` and a caller's options with the same rules. The limits are sized for one Worker
 * isolate (128 MB, several requests at once) and for text that is carried forward into a prompt.
 */
import { z } from "zod";
import { OffloadError } from "../errors.ts";
import type { OcrOptions } from "./ocr.ts";

const MiB = 1024 * 1024;

const fields = {
  max_bytes: z.int().min(1).default(32 * MiB).describe("Largest attachment accepted (decoded bytes); larger ones fail with too_large."),
  max_pages: z.int().min(1).max(10_000).default(50).describe("PDF: pages read, from the first."),
  max_chars: z.int().min(1).max(50_000_000).default(200_000).describe("Cap on the extracted text (JavaScript string units)."),
  max_rows: z.int().min(1).default(5_000).describe("XLSX: rows kept per sheet."),
  max_cells: z.int().min(1).default(100_000).describe("XLSX: cells kept across the workbook."),
  max_sheets: z.int().min(1).default(32).describe("XLSX: worksheets read, in workbook order."),
  sheet_format: z.enum(["csv", "tsv"]).default("csv").describe("XLSX: how each sheet is written."),
  max_zip_entries: z.int().min(1).default(5_000).describe("DOCX/XLSX: entries the archive may list."),
  max_unzipped_entry_bytes: z.int().min(1).default(48 * MiB).describe("DOCX/XLSX: inflated size of one part."),
  max_unzipped_bytes: z.int().min(1).default(96 * MiB).describe("DOCX/XLSX: inflated size of all parts read."),
  max_zip_ratio: z.number().min(1).default(200).describe("DOCX/XLSX: largest compression ratio of a part over 1 MiB."),
};

export const ExtractLimitsSchema = z.strictObject(fields);
export type ExtractLimits = z.infer<typeof ExtractLimitsSchema>;
export type ExtractLimitsInput = z.input<typeof ExtractLimitsSchema>;

export const DEFAULT_EXTRACT_LIMITS: ExtractLimits = ExtractLimitsSchema.parse({});

/** What extractText accepts: any limit (the rest default) and, optionally, OCR. */
export interface ExtractOptions extends Partial<ExtractLimits> {
  ocr?: OcrOptions | undefined;
}

export interface ResolvedExtractOptions extends ExtractLimits {
  ocr: OcrOptions | undefined;
}

/** Validate and fill in defaults; an invalid limit is an `invalid_argument` OffloadError naming it. */
export function resolveExtractOptions(options: ExtractOptions = {}): ResolvedExtractOptions {
  if (typeof options !== "object" || options === null) throw new OffloadError("invalid_argument", "extract options must be an object");
  const { ocr, ...limits } = options;
  const defined = Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined));
  const parsed = ExtractLimitsSchema.safeParse(defined);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.code === "unrecognized_keys" ? issue.keys.join(", ") : issue.path.map(String).join(".");
    throw new OffloadError("invalid_argument", `extract options: ${field}: ${issue.message}`, { path: field });
  }
  return { ...parsed.data, ocr };
}
