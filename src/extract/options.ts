/**
 * Extraction limits: one zod schema with every default, snake_case like the service config, so a
 * route can validate `?max_pages=20` and a caller's options with the same rules. The limits are
 * sized for one Worker isolate (128 MB, several requests at once) and for text that is carried
 * forward into a prompt.
 */
import { z } from "zod";
import { OffloadError, zodError } from "../errors.ts";
import { type OcrOptions, ocrVariant } from "./ocr.ts";

const MiB = 1024 * 1024;

const fields = {
  max_bytes: z
    .int()
    .min(1)
    .default(32 * MiB)
    .describe("Largest attachment accepted (decoded bytes); larger ones fail with too_large."),
  max_pages: z.int().min(1).max(10_000).default(50).describe("PDF: pages read, from the first."),
  max_chars: z
    .int()
    .min(1)
    .max(50_000_000)
    .default(200_000)
    .describe("Cap on the extracted text (JavaScript string units)."),
  max_rows: z.int().min(1).default(5_000).describe("XLSX: rows kept per sheet."),
  max_cells: z.int().min(1).default(100_000).describe("XLSX: cells kept across the workbook."),
  max_sheets: z.int().min(1).default(32).describe("XLSX: worksheets read, in workbook order."),
  sheet_format: z.enum(["csv", "tsv"]).default("csv").describe("XLSX: how each sheet is written."),
  max_zip_entries: z
    .int()
    .min(1)
    .default(5_000)
    .describe("DOCX/XLSX: entries the archive may list."),
  max_unzipped_entry_bytes: z
    .int()
    .min(1)
    .default(48 * MiB)
    .describe("DOCX/XLSX: inflated size of one part."),
  max_unzipped_bytes: z
    .int()
    .min(1)
    .default(96 * MiB)
    .describe("DOCX/XLSX: inflated size of all parts read."),
  max_zip_ratio: z
    .number()
    .min(1)
    .default(200)
    .describe("DOCX/XLSX: largest compression ratio of a part over 1 MiB."),
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

/**
 * Validate and fill in defaults; an invalid limit is an `invalid_argument` OffloadError naming it.
 */
export function resolveExtractOptions(options: ExtractOptions = {}): ResolvedExtractOptions {
  if (typeof options !== "object" || options === null)
    throw new OffloadError("invalid_argument", "extract options must be an object");
  const { ocr, ...limits } = options;
  const defined = Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined));
  const parsed = ExtractLimitsSchema.safeParse(defined);
  if (!parsed.success)
    throw zodError("invalid_argument", parsed.error, { label: "extract options" });
  return { ...parsed.data, ocr };
}

const NUMERIC = Object.keys(fields).filter((k) => k !== "sheet_format") as (keyof ExtractLimits)[];

/**
 * Limits from a query string (`?max_pages=20&sheet_format=tsv`), validated like any other options:
 * a value that is not a number fails as invalid_argument. Parameters that are not limits (on_error,
 * …) are ignored.
 */
export function extractOptionsFromQuery(params: URLSearchParams): Partial<ExtractLimits> {
  const out: Record<string, unknown> = {};
  for (const key of NUMERIC) {
    const raw = params.get(key);
    if (raw !== null) out[key] = raw.trim() === "" ? Number.NaN : Number(raw);
  }
  const format = params.get("sheet_format");
  if (format !== null) out.sheet_format = format;
  const { ocr: _ocr, ...limits } = resolveExtractOptions(out as ExtractOptions);
  return Object.fromEntries(Object.keys(out).map((k) => [k, limits[k as keyof ExtractLimits]]));
}

/**
 * A stable name for the options that change an extraction's text, for caching the text of one file
 * once per variant (`<sha256>/<variant>`): the same bytes with the same variant always extract to
 * the same text. Size and zip caps are left out: they only decide whether extraction runs, not what
 * it writes.
 */
export function extractionVariant(options: ExtractOptions = {}): string {
  const o = resolveExtractOptions(options);
  const ocr = o.ocr?.enabled ? ocrVariant(o.ocr) : "ocr-off";
  return `p${o.max_pages}.c${o.max_chars}.r${o.max_rows}.x${o.max_cells}.s${o.max_sheets}.${o.sheet_format}.${ocr}`;
}
