/**
 * What every route sees: the bindings, the authenticated tenant, the request's store and the
 * settings.
 */
import {
  type OffloadConfig,
  type OffloadConfigPatch,
  parseConfigPatch,
  resolveConfig,
} from "../config.ts";
import type { AttachmentExtractor } from "../core/ports.ts";
import type { Env } from "../env.ts";
import { OffloadError } from "../errors.ts";
import type { Extractor } from "../extract/cache.ts";
import type { OcrHost } from "../extract/ocr-service.ts";
import { beyondCeiling, type ExtractCeilings, parseExtractCeilings } from "../extract/options.ts";
import type { ServiceStore } from "../store/ports.ts";
import { parseRetention } from "../store/state.ts";
import { DEFAULT_MAX_BODY_BYTES } from "./body.ts";

export interface Settings {
  /** Limit on a compact request's body. */
  maxBodyBytes: number;
  /** Limit on the small JSON bodies (recall, config). */
  controlBodyBytes: number;
  retentionSeconds: number;
  /** The deployment's config layer (OFFLOAD_DEFAULT_CONFIG). */
  defaultConfig: OffloadConfigPatch;
  secret: string | undefined;
  /** The deployment's extraction ceilings (OFFLOAD_EXTRACT_LIMITS): callers may only go below them. */
  extractCeilings: ExtractCeilings;
}

export type AppEnv = {
  Bindings: Env;
  Variables: {
    tenant: string;
    store: ServiceStore;
    settings: Settings;
    /**
     * The extraction engine (extractText unless createApp was given another, e.g. a test's spy).
     */
    extract: Extractor;
    /** The attachment policy's extractor over `extract` for a request's config, for compaction. */
    extractor: ExtractorFor;
    /** Where `/v1/extract?ocr=true` finds the OCR engine and trained data. */
    ocr: OcrHost;
  };
};

/**
 * The attachment policy's extractor for one request, given its bindings, its effective config (the
 * deployment's OCR joins it when the config asks for OCR) and the deployment's extraction ceilings.
 */
export type ExtractorFor = (
  env: Env,
  config: OffloadConfig,
  ceilings: ExtractCeilings,
) => AttachmentExtractor;

const CONTROL_BODY_BYTES = 1024 * 1024;
/**
 * A JSON var read once per value (vars do not change within an isolate). A bad one is a deployment mistake,
 * not the caller's: a 500 for them, the reason for the operator's log.
 */
function cachedVar<T>(name: string, read: (text: string) => T): (raw: string | undefined) => T {
  let cached: { raw: string; value: T } | undefined;
  return (raw) => {
    const text = raw ?? "";
    if (cached?.raw === text) return cached.value;
    let value: T;
    try {
      value = read(text);
    } catch (cause) {
      throw new OffloadError("internal", `service misconfigured: ${name} is invalid`, { cause });
    }
    cached = { raw: text, value };
    return value;
  };
}

const deploymentConfig = cachedVar("OFFLOAD_DEFAULT_CONFIG", (text) =>
  text.trim() === "" ? {} : parseConfigPatch(JSON.parse(text), "OFFLOAD_DEFAULT_CONFIG"),
);

const extractCeilings = cachedVar("OFFLOAD_EXTRACT_LIMITS", parseExtractCeilings);

function byteLimit(raw: string | undefined, override: number | undefined): number {
  if (override !== undefined) return override;
  if (raw === undefined || raw.trim() === "") return DEFAULT_MAX_BODY_BYTES;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0)
    throw new OffloadError(
      "internal",
      "service misconfigured: OFFLOAD_MAX_BODY_BYTES must be a positive whole number of bytes",
    );
  return n;
}

export function settingsOf(env: Env, overrides: { maxBodyBytes?: number } = {}): Settings {
  const maxBodyBytes = byteLimit(env.OFFLOAD_MAX_BODY_BYTES, overrides.maxBodyBytes);
  return {
    maxBodyBytes,
    controlBodyBytes: Math.min(maxBodyBytes, CONTROL_BODY_BYTES),
    retentionSeconds: parseRetention(env.OFFLOAD_RETENTION_SECONDS),
    defaultConfig: deploymentConfig(env.OFFLOAD_DEFAULT_CONFIG),
    secret:
      env.OFFLOAD_SECRET === undefined || env.OFFLOAD_SECRET === ""
        ? undefined
        : env.OFFLOAD_SECRET,
    extractCeilings: extractCeilings(env.OFFLOAD_EXTRACT_LIMITS),
  };
}

/** The config keys that reach extraction, and the ceiling each one is bound by. */
const CEILED: {
  key: "attachment_max_pages" | "attachment_max_chars";
  limit: keyof ExtractCeilings;
}[] = [
  { key: "attachment_max_pages", limit: "max_pages" },
  { key: "attachment_max_chars", limit: "max_chars" },
];

/**
 * Refuses a caller's config layer (a session's PUT, a request's header) that asks extraction for more than
 * the deployment's ceilings: an `invalid_config` error naming the field.
 */
export function checkConfigCeilings(
  settings: Settings,
  patch: OffloadConfigPatch,
  where: string,
): void {
  for (const { key, limit } of CEILED) {
    const v = patch[key];
    const ceiling = settings.extractCeilings[limit];
    if (v !== undefined && v > ceiling)
      throw beyondCeiling(`${where}.${key}`, ceiling, v, { type: "invalid_config" });
  }
}

/** The `x-offload-config` header: a JSON config patch for this request only. */
export function headerConfig(value: string | undefined): OffloadConfigPatch {
  if (value === undefined || value.trim() === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new OffloadError("invalid_json", "the x-offload-config header is not valid JSON", {
      path: "x-offload-config",
    });
  }
  return parseConfigPatch(parsed, "x-offload-config");
}

/**
 * Defaults ← deployment (OFFLOAD_DEFAULT_CONFIG) ← session (PUT …/config) ← request
 * (x-offload-config). The request's layer is refused above the extraction ceilings; a stored
 * session layer older than a lowered ceiling, or the deployment's own layer, is brought down to it.
 */
export function effectiveConfig(
  settings: Settings,
  session: OffloadConfigPatch,
  request: OffloadConfigPatch = {},
): OffloadConfig {
  checkConfigCeilings(settings, request, "x-offload-config");
  const config = resolveConfig(settings.defaultConfig, session, request);
  for (const { key, limit } of CEILED)
    config[key] = Math.min(config[key], settings.extractCeilings[limit]);
  return config;
}
