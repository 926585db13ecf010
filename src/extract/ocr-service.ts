/**
 * OCR in the service. A deployment turns it on with the var `OFFLOAD_OCR=on` and sets its ceilings in
 * `OFFLOAD_OCR_LIMITS` (JSON, OcrLimitsSchema); a request asks for it (`/v1/extract?ocr=true`, the config key
 * `attachment_ocr` for the turn transform) and may only lower the ceilings: fewer pixels, pages or CPU, a
 * higher confidence floor, one of the deployment's languages. Asking more than the deployment allows is a
 * 400 that names the ceiling; an image over a limit is the usual 422 with `fallback: "native"`.
 *
 * The engine (tesseract-wasm) is created once per isolate and its compiled wasm module is imported lazily, on
 * the first image: a deployment that never OCRs never evaluates it. The trained data of a language lives in
 * the ledger's bucket at `ocr/<language>.traineddata` (gzipped or not) and is read once per isolate; without
 * it an image answers `extraction_dependency_missing` (`ocr_model`), so the caller sends it natively, as
 * before OCR existed. `npm run ocr:setup` uploads the English model; `npm start` seeds the local bucket.
 * `edge-offload serve` has no bucket: it plugs in its own OcrHost (ocr-node.ts).
 */
import { z } from "zod";
import { OffloadError } from "../errors.ts";
import {
  bucketModelSource,
  DEFAULT_OCR_LANGUAGE,
  DEFAULT_OCR_MAX_PAGES,
  DEFAULT_OCR_MAX_PIXELS,
  DEFAULT_OCR_MIN_CONFIDENCE,
  type ModelBucket,
  type OcrEngine,
  type OcrModelSource,
  type OcrOptions,
} from "./ocr.ts";
import { tesseractEngine } from "./ocr-tesseract.ts";
import { beyondCeiling } from "./options.ts";

/** The R2 key of a language's trained data. */
export const ocrModelKey = (language: string): string => `ocr/${language}.traineddata`;

export const OcrLimitsSchema = z.strictObject({
  max_pixels: z
    .int()
    .min(1)
    .max(50_000_000)
    .default(DEFAULT_OCR_MAX_PIXELS)
    .describe(
      "Largest image read whole, in pixels (width × height); one whose half is within it is read at half resolution.",
    ),
  max_pages: z
    .int()
    .min(1)
    .max(1000)
    .default(DEFAULT_OCR_MAX_PAGES)
    .describe("Most pages without a text layer read by OCR in one PDF."),
  cpu_ms: z
    .int()
    .min(1)
    .max(300_000)
    .default(20_000)
    .describe("Estimated CPU budget of one image or page, in ms (checked before recognition)."),
  languages: z
    .array(z.string().regex(/^[a-z][a-z0-9_]{1,31}$/))
    .min(1)
    .max(16)
    .default([DEFAULT_OCR_LANGUAGE])
    .describe("Languages whose trained data the deployment has; the first is the default."),
  min_confidence: z
    .number()
    .min(0)
    .max(1)
    .default(DEFAULT_OCR_MIN_CONFIDENCE)
    .describe("Lowest confidence (0–1) at which OCR text replaces an image."),
});
export type OcrLimits = z.infer<typeof OcrLimitsSchema>;

/** What a caller may ask for: any of the deployment's limits, lowered (or a higher confidence floor). */
export type OcrRequest = Partial<Omit<OcrLimits, "languages">> & { language?: string };

export interface OcrDeployment {
  enabled: boolean;
  limits: OcrLimits;
}

/** The vars this reads (a subset of the Worker's Env). */
export interface OcrEnv {
  OFFLOAD_OCR?: string;
  OFFLOAD_OCR_LIMITS?: string;
  LEDGER: ModelBucket;
}

let parsed: { key: string; value: OcrDeployment } | undefined;

/** The deployment's OCR switch and ceilings; a malformed var is the operator's mistake (a 500 naming it). */
export function ocrDeployment(env: Omit<OcrEnv, "LEDGER">): OcrDeployment {
  const switchVar = (env.OFFLOAD_OCR ?? "").trim().toLowerCase();
  const limitsVar = env.OFFLOAD_OCR_LIMITS ?? "";
  const key = `${switchVar}\u0000${limitsVar}`;
  if (parsed?.key === key) return parsed.value;
  if (!["", "on", "off"].includes(switchVar))
    throw new OffloadError("internal", 'service misconfigured: OFFLOAD_OCR must be "on" or "off"');
  let limits: OcrLimits;
  try {
    limits = OcrLimitsSchema.parse(limitsVar.trim() === "" ? {} : JSON.parse(limitsVar));
  } catch (cause) {
    throw new OffloadError("internal", "service misconfigured: OFFLOAD_OCR_LIMITS is invalid", {
      cause,
    });
  }
  const value = { enabled: switchVar === "on", limits };
  parsed = { key, value };
  return value;
}

function invalid(path: string, message: string): OffloadError {
  return new OffloadError("invalid_argument", `${path}: ${message}`, { path });
}

/** The request's limits within the deployment's: a request may lower them, never raise them. */
export function ocrLimitsFor(
  deployment: OcrLimits,
  request: OcrRequest,
  names: Partial<Record<keyof OcrRequest, string>> = {},
): OcrLimits & { language: string } {
  const name = (k: keyof OcrRequest) => names[k] ?? k;
  const lower = (k: "max_pixels" | "max_pages" | "cpu_ms"): number => {
    const asked = request[k];
    if (asked === undefined) return deployment[k];
    if (asked > deployment[k]) throw beyondCeiling(name(k), deployment[k], asked);
    return asked;
  };
  const floor = request.min_confidence ?? deployment.min_confidence;
  if (floor < deployment.min_confidence)
    throw beyondCeiling(name("min_confidence"), deployment.min_confidence, floor, { floor: true });
  const language = request.language ?? deployment.languages[0]!;
  if (!deployment.languages.includes(language))
    throw invalid(
      name("language"),
      `this deployment reads ${deployment.languages.join(", ")} (asked ${language})`,
    );
  return {
    ...deployment,
    max_pixels: lower("max_pixels"),
    max_pages: lower("max_pages"),
    cpu_ms: lower("cpu_ms"),
    min_confidence: floor,
    language,
  };
}

/**
 * Where a deployment's OCR engine and trained data come from. The Worker's (workerOcrHost): the engine's
 * wasm imported as a precompiled module, the data in the ledger's bucket. `edge-offload serve` plugs in
 * its own (ocr-node.ts: the installed tesseract-wasm, a local directory), having no bucket.
 */
export interface OcrHost {
  /** The engine, created on first use (its wasm is loaded on the first image, not before). */
  engine(): OcrEngine;
  /** Where the trained data of this request's bindings is read. */
  model(env: OcrEnv): OcrModelSource;
}

let engine: OcrEngine | undefined;
const models = new WeakMap<object, OcrModelSource>();

/** The Worker's OCR: one engine per isolate, its wasm module imported then; models read from LEDGER. */
export const workerOcrHost: OcrHost = {
  engine() {
    engine ??= tesseractEngine({ wasm: () => import("./ocr-wasm.ts").then((m) => m.default) });
    return engine;
  },
  model(env) {
    let model = models.get(env.LEDGER);
    if (model === undefined) {
      model = bucketModelSource(env.LEDGER, ocrModelKey);
      models.set(env.LEDGER, model);
    }
    return model;
  },
};

/**
 * The OCR options of one request, or undefined when it does not ask for OCR. Asked for on a deployment that
 * has it off, the options carry no engine: each image then answers `extraction_dependency_missing`.
 */
export function serviceOcr(
  env: OcrEnv,
  request: OcrRequest & { enabled: boolean },
  host: OcrHost = workerOcrHost,
): OcrOptions | undefined {
  if (!request.enabled) return undefined;
  const deployment = ocrDeployment(env);
  if (!deployment.enabled) return { enabled: true };
  const limits = ocrLimitsFor(deployment.limits, request);
  return {
    enabled: true,
    engine: host.engine(),
    model: host.model(env),
    max_pixels: limits.max_pixels,
    max_pages: limits.max_pages,
    cpu_ms: limits.cpu_ms,
    language: limits.language,
    min_confidence: limits.min_confidence,
  };
}

/** `/v1/extract`'s OCR parameters, by query name. */
const QUERY: Record<string, keyof OcrRequest> = {
  ocr_lang: "language",
  ocr_max_pixels: "max_pixels",
  ocr_max_pages: "max_pages",
  ocr_cpu_ms: "cpu_ms",
  ocr_min_confidence: "min_confidence",
};
export const OCR_QUERY_KEYS: readonly string[] = ["ocr", ...Object.keys(QUERY)];

function flag(value: string | null): boolean {
  if (value === null || value === "" || value === "false" || value === "0") return false;
  if (value === "true" || value === "1") return true;
  throw invalid("ocr", 'must be "true" or "false"');
}

/** OCR options from `?ocr=true&ocr_lang=eng&ocr_max_pixels=…` (the limits are ignored without `ocr=true`). */
export function ocrFromQuery(
  params: URLSearchParams,
  env: OcrEnv,
  host: OcrHost = workerOcrHost,
): OcrOptions | undefined {
  const enabled = flag(params.get("ocr"));
  const request: OcrRequest = {};
  const names: Partial<Record<keyof OcrRequest, string>> = {};
  for (const [param, field] of Object.entries(QUERY)) {
    const raw = params.get(param);
    if (raw === null) continue;
    names[field] = param;
    if (field === "language") request.language = raw;
    else {
      const n = raw.trim() === "" ? Number.NaN : Number(raw);
      const ok = field === "min_confidence" ? n >= 0 && n <= 1 : Number.isInteger(n) && n > 0;
      if (!ok)
        throw invalid(
          param,
          field === "min_confidence" ? "a number from 0 to 1" : "a positive whole number",
        );
      request[field] = n;
    }
  }
  if (!enabled) return undefined;
  const deployment = ocrDeployment(env);
  if (deployment.enabled) ocrLimitsFor(deployment.limits, request, names); // a 400 names the query parameter
  return serviceOcr(env, { ...request, enabled }, host);
}
