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
import { parseRetention } from "../session/state.ts";
import type { ServiceStore } from "../store/ports.ts";
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
  };
};

/**
 * The attachment policy's extractor for one request, given its bindings and its effective config
 * (the deployment's OCR joins it when the config asks for OCR).
 */
export type ExtractorFor = (env: Env, config: OffloadConfig) => AttachmentExtractor;

const CONTROL_BODY_BYTES = 1024 * 1024;
let cachedDefault: { raw: string; patch: OffloadConfigPatch } | undefined;

function deploymentConfig(raw: string | undefined): OffloadConfigPatch {
  const text = raw ?? "";
  if (cachedDefault?.raw === text) return cachedDefault.patch;
  let patch: OffloadConfigPatch;
  try {
    patch = text.trim() === "" ? {} : parseConfigPatch(JSON.parse(text), "OFFLOAD_DEFAULT_CONFIG");
  } catch (cause) {
    // A deployment mistake, not the caller's: a 500 for them, the reason for the operator's log.
    throw new OffloadError("internal", "service misconfigured: OFFLOAD_DEFAULT_CONFIG is invalid", {
      cause,
    });
  }
  cachedDefault = { raw: text, patch };
  return patch;
}

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
  };
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
 * (x-offload-config).
 */
export function effectiveConfig(
  settings: Settings,
  session: OffloadConfigPatch,
  request: OffloadConfigPatch = {},
): OffloadConfig {
  return resolveConfig(settings.defaultConfig, session, request);
}
