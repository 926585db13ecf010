/**
 * Extraction limits: one zod schema with every default, snake_case like the service config, so a
 * route can validate `?max_pages=20` and a caller's options with the same rules. The limits are
 * sized for one Worker isolate (128 MB, with another request in flight: a part's inflated bytes and
 * its decoded string must fit next to theirs) and for text that is carried forward into a prompt.
 *
 * A deployment sets ceilings (OFFLOAD_EXTRACT_LIMITS); a caller may only lower a limit below its
 * ceiling. A caller's value above one is refused (400 naming the field), never raised to: the
 * guards against zip bombs and runaway PDFs are the deployment's, not the uploader's.
 */
import { z } from "zod";
import { OffloadError, zodError } from "../errors.ts";
import { type OcrOptions, ocrVariant } from "./ocr.ts";

const MiB = 1024 * 1024;

const fields = {
  max_bytes: z
    .int()
    .min(1)
    .default(16 * MiB)
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
    .default(16 * MiB)
    .describe("DOCX/XLSX: inflated size of one part."),
  max_unzipped_bytes: z
    .int()
    .min(1)
    .default(32 * MiB)
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

/** The limits that have a ceiling: every numeric one (a smaller value is always the stricter one). */
export type ExtractCeilings = Omit<ExtractLimits, "sheet_format">;
const NUMERIC = Object.keys(fields).filter(
  (k) => k !== "sheet_format",
) as (keyof ExtractCeilings)[];

/**
 * The ceilings a deployment has when OFFLOAD_EXTRACT_LIMITS names none: the defaults, and room above them
 * only where it costs CPU rather than memory (pages, rows, cells, sheets, entries).
 */
export const DEFAULT_EXTRACT_CEILINGS: ExtractCeilings = {
  max_bytes: DEFAULT_EXTRACT_LIMITS.max_bytes,
  max_pages: 500,
  max_chars: 2_000_000,
  max_rows: 100_000,
  max_cells: 1_000_000,
  max_sheets: 256,
  max_zip_entries: 10_000,
  max_unzipped_entry_bytes: DEFAULT_EXTRACT_LIMITS.max_unzipped_entry_bytes,
  max_unzipped_bytes: DEFAULT_EXTRACT_LIMITS.max_unzipped_bytes,
  max_zip_ratio: DEFAULT_EXTRACT_LIMITS.max_zip_ratio,
};

/** The numeric limits without their defaults: a ceiling left out is the built-in one, not the default. */
const CeilingsSchema = z.strictObject(
  Object.fromEntries(NUMERIC.map((k) => [k, fields[k].unwrap().optional()])) as {
    [K in keyof ExtractCeilings]: z.ZodOptional<ReturnType<(typeof fields)[K]["unwrap"]>>;
  },
);

/**
 * A deployment's ceilings from its OFFLOAD_EXTRACT_LIMITS (a JSON object of limits; the built-in
 * ceilings for the rest). Throws an `invalid_argument` OffloadError naming the field (the service
 * reports it as its own misconfiguration).
 */
export function parseExtractCeilings(raw: string | undefined): ExtractCeilings {
  if (raw === undefined || raw.trim() === "") return DEFAULT_EXTRACT_CEILINGS;
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new OffloadError("invalid_argument", "OFFLOAD_EXTRACT_LIMITS is not valid JSON");
  }
  const parsed = CeilingsSchema.safeParse(json);
  if (!parsed.success)
    throw zodError("invalid_argument", parsed.error, { label: "OFFLOAD_EXTRACT_LIMITS" });
  const given = Object.fromEntries(
    Object.entries(parsed.data).filter(([, v]) => v !== undefined),
  ) as Partial<ExtractCeilings>;
  return { ...DEFAULT_EXTRACT_CEILINGS, ...given };
}

/**
 * The one refusal of a caller asking for more than the deployment allows, for every limit a caller
 * may only lower (extraction and OCR ceilings, the config keys that reach extraction) or, for a
 * floor (OCR's confidence), only raise: a 400 naming the field.
 */
export function beyondCeiling(
  path: string,
  bound: number,
  asked: number,
  options: { type?: "invalid_argument" | "invalid_config"; floor?: boolean } = {},
): OffloadError {
  const [side, may] = options.floor === true ? ["least", "raise"] : ["most", "lower"];
  return new OffloadError(
    options.type ?? "invalid_argument",
    `${path}: at ${side} ${bound} on this deployment (got ${asked}); a caller may only ${may} it`,
    { path },
  );
}

/** Refuses a caller's limit above its ceiling: an `invalid_argument` OffloadError naming the field. */
export function checkCeilings(limits: Partial<ExtractLimits>, ceilings: ExtractCeilings): void {
  for (const key of NUMERIC) {
    const v = limits[key];
    if (v !== undefined && v > ceilings[key]) throw beyondCeiling(key, ceilings[key], v);
  }
}

/**
 * Options as extraction runs them under `ceilings`: a value above its ceiling is brought down to it (callers
 * were refused before; this is for trusted layers, e.g. a stored config older than the ceiling), and an
 * absent one is its default or its ceiling, whichever is lower.
 */
export function underCeilings(options: ExtractOptions, ceilings: ExtractCeilings): ExtractOptions {
  const out: ExtractOptions = { ...options };
  for (const key of NUMERIC)
    out[key] = Math.min(options[key] ?? DEFAULT_EXTRACT_LIMITS[key], ceilings[key]);
  return out;
}

/**
 * Limits from a query string (`?max_pages=20&sheet_format=tsv`), validated like any other options:
 * a value that is not a number fails as invalid_argument, and so does one above the deployment's
 * ceiling. Parameters that are not limits (on_error, …) are ignored.
 */
export function extractOptionsFromQuery(
  params: URLSearchParams,
  ceilings: ExtractCeilings = DEFAULT_EXTRACT_CEILINGS,
): Partial<ExtractLimits> {
  const out: Record<string, unknown> = {};
  for (const key of NUMERIC) {
    const raw = params.get(key);
    if (raw !== null) out[key] = raw.trim() === "" ? Number.NaN : Number(raw);
  }
  const format = params.get("sheet_format");
  if (format !== null) out.sheet_format = format;
  const { ocr: _ocr, ...limits } = resolveExtractOptions(out as ExtractOptions);
  const given = Object.fromEntries(
    Object.keys(out).map((k) => [k, limits[k as keyof ExtractLimits]]),
  ) as Partial<ExtractLimits>;
  checkCeilings(given, ceilings);
  return given;
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
