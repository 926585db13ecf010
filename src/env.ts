/**
 * The Worker's bindings and vars (wrangler.toml, `.dev.vars` locally, `wrangler secret put` in
 * production), and the service settings read from them.
 */
import type { SessionDO } from "./store/session-do.ts";
import type { TenantDO } from "./store/tenant-do.ts";

export interface Env {
  SESSIONS: DurableObjectNamespace<SessionDO>;
  /** The tenant's learning (the adaptive gate's statistics, the estimates' calibration). */
  TENANTS: DurableObjectNamespace<TenantDO>;
  LEDGER: R2Bucket;
  INDEX: KVNamespace;
  /** Secret: `tenant:key,tenant:key`. */
  OFFLOAD_API_KEYS?: string;
  /** Secret: keys mem_ids (HMAC). */
  OFFLOAD_SECRET?: string;
  /** Deployment default config layer (JSON). */
  OFFLOAD_DEFAULT_CONFIG?: string;
  /** Request body limit in bytes (default 32 MiB). */
  OFFLOAD_MAX_BODY_BYTES?: string;
  /**
   * Ceilings of the extraction limits (JSON object, e.g. `{"max_pages":200}`; the built-in ones for
   * the rest): callers may lower a limit below its ceiling, never raise it.
   */
  OFFLOAD_EXTRACT_LIMITS?: string;
  /** Idle session retention in seconds (default 7 days, 0 = until deleted). */
  OFFLOAD_RETENTION_SECONDS?: string;
  /**
   * Proxy upstreams, as the official SDKs mean them (defaults: https://api.anthropic.com,
   * https://api.openai.com/v1).
   */
  ANTHROPIC_BASE_URL?: string;
  OPENAI_BASE_URL?: string;
  /** Extra provider calls one proxied call may make to answer recall_tool_result (default 3). */
  OFFLOAD_PROXY_MAX_HOPS?: string;
  /** "on": images and scanned PDF pages may be read by OCR when a request asks (default off). */
  OFFLOAD_OCR?: string;
  /** OCR ceilings (JSON): max_pixels, max_pages, cpu_ms, languages, min_confidence. */
  OFFLOAD_OCR_LIMITS?: string;
  /** "on": `GET /?key=` signs in to the dashboard (local use; the key lands in URLs). Off by default. */
  OFFLOAD_DASHBOARD_URL_KEYS?: string;
}
