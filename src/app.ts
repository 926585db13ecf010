/**
 * The HTTP service: `createApp(deps?)` builds the Hono app the Worker serves (src/index.ts). Routes
 * are one sub-app per resource (src/routes); everything under /v1 needs `Authorization: Bearer
 * <key>`, and the key names the tenant that scopes every object the request touches. The dashboard
 * at / takes the same keys in a login form (src/routes/dashboard.ts). One error handler turns every
 * failure into `{"error":{"type","message","path?"}}`.
 *
 * `deps` exist for tests and embedders: `store` builds the request's store from the bindings (wrap
 * a binding to inject a fault), `maxBodyBytes` overrides OFFLOAD_MAX_BODY_BYTES, `log` receives
 * operator log lines, `extract` replaces the attachment extractor (a test's spy, or an extractor
 * with OCR plugged in). `fetch` makes the proxy routes' provider calls. `ocr` is where the OCR engine and
 * trained data come from (the Worker's: its wasm module import and the LEDGER bucket; serve's: ocr-node.ts).
 */
import { Hono } from "hono";
import { z } from "zod";
import type { Env } from "./env.ts";
import { OffloadError } from "./errors.ts";
import { attachmentExtractor } from "./extract/attachment-extractor.ts";
import { type Extractor, withCeilings } from "./extract/cache.ts";
import { extractText } from "./extract/extract.ts";
import { type OcrHost, serviceOcr, workerOcrHost } from "./extract/ocr-service.ts";
import { authenticate, bearerKey } from "./http/auth.ts";
import { type AppEnv, type ExtractorFor, type Settings, settingsOf } from "./http/context.ts";
import { type Defer, deferOf } from "./http/defer.ts";
import { errorResponse, toOffloadError } from "./http/errors.ts";
import { compactRoutes } from "./routes/compact.ts";
import { configRoutes } from "./routes/config.ts";
import { dashboardRoutes } from "./routes/dashboard.ts";
import { extractRoutes } from "./routes/extract.ts";
import { healthRoutes } from "./routes/health.ts";
import { memoryRoutes } from "./routes/memories.ts";
import { openApiRoutes } from "./routes/openapi.ts";
import { proxyRoutes } from "./routes/proxy.ts";
import { proxyPassThroughRoutes } from "./routes/proxy-passthrough.ts";
import { recallRoutes } from "./routes/recall.ts";
import { sessionReportRoutes, tenantReportRoutes } from "./routes/report.ts";
import { sessionRoutes } from "./routes/sessions.ts";
import { usageRoutes } from "./routes/usage.ts";
import { ComposedStore, type StoreParts } from "./store/composed.ts";
import { durableSessionState, durableTenants } from "./store/durable.ts";
import { KvIndex } from "./store/kv.ts";
import type { ServiceStore } from "./store/ports.ts";
import { R2Ledger } from "./store/r2.ts";
import { R2ExtractionCache } from "./store/r2-extractions.ts";
import { indexTtlSeconds } from "./store/state.ts";
import { tenantCacheOf } from "./store/tenant-cache.ts";

// Production Workers forbid `new Function`; zod would only probe for it, but the probe is not worth
// a failure.
z.config({ jitless: true });

export interface AppDeps {
  store?: (
    env: Env,
    settings: Settings,
    log: (line: string) => void,
    defer?: Defer,
  ) => ServiceStore;
  maxBodyBytes?: number;
  log?: (line: string) => void;
  extract?: Extractor;
  /** The proxy routes' provider calls (default: the runtime's fetch). */
  fetch?: typeof fetch;
  /** Where OCR's engine and trained data come from (default: the Worker's, workerOcrHost). */
  ocr?: OcrHost;
}

/**
 * The production backends: session state in the SessionDO, bodies and cached extractions in R2, the
 * index in KV, the tenant's learning in the TenantDO, read through the isolate's cache.
 */
export function defaultParts(
  env: Env,
  settings: Settings,
  log: (line: string) => void,
  defer?: Defer,
) {
  return {
    sessions: durableSessionState(env.SESSIONS),
    ledger: new R2Ledger(env.LEDGER),
    index: new KvIndex(env.INDEX, { ttlSeconds: indexTtlSeconds(settings.retentionSeconds) }),
    tenants: tenantCacheOf(durableTenants(env.TENANTS)),
    extractions: new R2ExtractionCache(env.LEDGER),
    log,
    defer,
  } satisfies StoreParts;
}

/** The production store: the production backends composed. */
export function defaultStore(
  env: Env,
  settings: Settings,
  log: (line: string) => void,
  defer?: Defer,
): ServiceStore {
  return new ComposedStore(defaultParts(env, settings, log, defer));
}

/**
 * The attachment policy's extractor for a request: over `extract` under the deployment's extraction
 * ceilings (OFFLOAD_EXTRACT_LIMITS), with the deployment's OCR (OFFLOAD_OCR; its engine and model from
 * `ocr`) when the request's config asks for it (`attachment_ocr`).
 */
function extractorsFor(extract: Extractor, ocr: OcrHost): ExtractorFor {
  return (env, config, ceilings) =>
    attachmentExtractor({
      extract: withCeilings(extract, ceilings),
      ocr: config.attachment_ocr ? serviceOcr(env, { enabled: true }, ocr) : undefined,
    });
}

export function createApp(deps: AppDeps = {}): Hono<AppEnv> {
  const log = deps.log ?? ((line: string) => console.error(line));
  const makeStore = deps.store ?? defaultStore;
  const extract = deps.extract ?? extractText;
  const ocr = deps.ocr ?? workerOcrHost;
  const extractor = extractorsFor(extract, ocr);
  const app = new Hono<AppEnv>();

  app.onError((err) => errorResponse(toOffloadError(err, log)));
  app.notFound((c) =>
    errorResponse(
      new OffloadError("not_found", `no route for ${c.req.method} ${new URL(c.req.url).pathname}`),
    ),
  );

  app.route("/", healthRoutes);
  app.route("/", openApiRoutes);
  app.route("/", dashboardRoutes(log));
  // The proxy authenticates with x-offload-key: Authorization belongs to the provider and travels
  // on untouched.
  app.route(
    "/",
    proxyRoutes({
      store: makeStore,
      log,
      extractor,
      ...(deps.maxBodyBytes === undefined ? {} : { maxBodyBytes: deps.maxBodyBytes }),
      ...(deps.fetch === undefined ? {} : { fetch: deps.fetch }),
    }),
  );
  // Any other path under a provider prefix goes to the provider untouched (after the compacted routes).
  app.route(
    "/",
    proxyPassThroughRoutes({ log, ...(deps.fetch === undefined ? {} : { fetch: deps.fetch }) }),
  );

  app.use("/v1/*", async (c, next) => {
    const tenant = await authenticate(
      c.env.OFFLOAD_API_KEYS,
      bearerKey(c.req.header("authorization")),
      log,
    );
    const settings = settingsOf(
      c.env,
      deps.maxBodyBytes === undefined ? {} : { maxBodyBytes: deps.maxBodyBytes },
    );
    c.set("tenant", tenant);
    c.set("settings", settings);
    c.set("store", makeStore(c.env, settings, log, deferOf(c)));
    c.set("extract", withCeilings(extract, settings.extractCeilings));
    c.set("extractor", extractor);
    c.set("ocr", ocr);
    await next();
  });

  app.route("/v1/sessions", sessionRoutes);
  app.route("/v1/sessions", compactRoutes);
  app.route("/v1/sessions", recallRoutes);
  app.route("/v1/sessions", configRoutes);
  app.route("/v1/sessions", memoryRoutes);
  app.route("/v1/sessions", sessionReportRoutes);
  app.route("/v1/sessions", usageRoutes);
  app.route("/v1", tenantReportRoutes);
  app.route("/v1/extract", extractRoutes);
  return app;
}
