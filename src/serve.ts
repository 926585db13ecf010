/**
 * `edge-offload serve`: the service's Hono app (routes, proxy, dashboard, OpenAPI: src/app.ts) on Node
 * through `@hono/node-server`, over a store named by a URL (store/open.ts) instead of the Worker's
 * bindings. Keys, secret, upstream base URLs and the deployment's config come from the same environment
 * variables as on Workers (src/env.ts); retention is the store's (OFFLOAD_RETENTION_SECONDS). OCR
 * (OFFLOAD_OCR=on) reads the installed tesseract-wasm and the trained data in OFFLOAD_OCR_MODEL_DIR
 * (extract/ocr-node.ts), the Worker having them as a wasm module import and in its bucket.
 */
import { createApp } from "./app.ts";
import { SHIPPED_DEPLOYMENT_CONFIG } from "./config.ts";
import type { Env } from "./env.ts";
import { OffloadError } from "./errors.ts";
import { checkModelDir, nodeOcrHost, tesseractWasmInstalled } from "./extract/ocr-node.ts";
import { type OcrHost, ocrDeployment } from "./extract/ocr-service.ts";
import { settingsOf } from "./http/context.ts";
import { type OpenedStore, openStore } from "./store/open.ts";

export const DEFAULT_SERVE_PORT = 8787;
export const DEFAULT_SERVE_HOST = "127.0.0.1";
export const DEFAULT_SERVE_STORE = "sqlite:./edge-offload.db";

/** The variables of src/env.ts that `serve` reads (the bindings are the store's). */
const VARIABLES = [
  "OFFLOAD_API_KEYS",
  "OFFLOAD_SECRET",
  "OFFLOAD_DEFAULT_CONFIG",
  "OFFLOAD_MAX_BODY_BYTES",
  "OFFLOAD_EXTRACT_LIMITS",
  "OFFLOAD_RETENTION_SECONDS",
  "ANTHROPIC_BASE_URL",
  "OPENAI_BASE_URL",
  "OFFLOAD_PROXY_MAX_HOPS",
  "OFFLOAD_COUNT_ANTHROPIC_KEY",
  "OFFLOAD_COUNT_OPENAI_KEY",
  "OFFLOAD_OCR",
  "OFFLOAD_OCR_LIMITS",
  "OFFLOAD_DASHBOARD_URL_KEYS",
] as const;

export interface ServeOptions {
  port?: number;
  host?: string;
  /** A store URL (default `sqlite:./edge-offload.db`). */
  store?: string;
  /** Where the variables are read (default `process.env`). */
  env?: Record<string, string | undefined>;
  /** Operator lines (default: stderr). */
  log?: (line: string) => void;
  /** The provider calls (default: the global fetch). */
  fetch?: typeof fetch;
  /** OCR's compiled engine (default: the installed tesseract-wasm's, compiled on the first image). */
  ocrWasm?: () => Promise<WebAssembly.Module>;
}

export interface Server {
  /** `http://host:port`. */
  url: string;
  /** What the store URL named (without credentials). */
  store: string;
  /** Stops taking connections, waits for the store's background work, closes it. */
  close(): Promise<void>;
}

/**
 * serve's OCR when OFFLOAD_OCR is on, checked at startup: without a readable model directory the server
 * could never OCR, so it does not start (the Worker's variables have no such check to make: its data is
 * in a bucket filled at any time). A language missing from the directory and a missing tesseract-wasm are
 * said once; their images answer `extraction_dependency_missing`, as on a Worker without its model.
 */
async function ocrHostOf(
  env: Env,
  modelDir: string | undefined,
  log: (line: string) => void,
  wasm: (() => Promise<WebAssembly.Module>) | undefined,
): Promise<OcrHost | undefined> {
  const deployment = ocrDeployment(env);
  if (!deployment.enabled) return undefined;
  if (modelDir === undefined || modelDir.trim() === "")
    throw new OffloadError(
      "internal",
      "service misconfigured: OFFLOAD_OCR is on but OFFLOAD_OCR_MODEL_DIR is not set (the directory of <language>.traineddata files: docs/attachments.md)",
    );
  const missing = await checkModelDir(modelDir, deployment.limits.languages);
  if (missing.length > 0)
    log(
      `[edge-offload] OFFLOAD_OCR_MODEL_DIR has no ${missing.map((l) => `${l}.traineddata`).join(", ")}: OCR in ${missing.join(", ")} answers extraction_dependency_missing until it is there`,
    );
  if (wasm === undefined && !tesseractWasmInstalled())
    log(
      "[edge-offload] OFFLOAD_OCR is on but tesseract-wasm is not installed (npm install tesseract-wasm): images answer extraction_dependency_missing",
    );
  return await nodeOcrHost({ modelDir, ...(wasm === undefined ? {} : { wasm }) });
}

/** Starts the service; a bad variable or store URL fails here, before a port is taken. */
export async function serve(options: ServeOptions = {}): Promise<Server> {
  const source = options.env ?? process.env;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const vars: Record<string, string> = {};
  for (const name of VARIABLES) {
    const v = source[name];
    if (v !== undefined) vars[name] = v;
  }
  // What wrangler.toml ships to a Worker: without it a session nobody configured would pass through
  // untouched and say `enabled: false`, the "two-line change that does nothing" of the Worker before it.
  const shipped = vars.OFFLOAD_DEFAULT_CONFIG === undefined;
  vars.OFFLOAD_DEFAULT_CONFIG ??= JSON.stringify(SHIPPED_DEPLOYMENT_CONFIG);
  const env = vars as unknown as Env;
  // The same checks as a Worker's first request, at once: a misconfigured server does not start.
  const settings = settingsOf(env);

  const ocr = await ocrHostOf(env, source.OFFLOAD_OCR_MODEL_DIR, log, options.ocrWasm);

  if (settings.secret === undefined)
    log("[edge-offload] OFFLOAD_SECRET is not set: compaction answers 500 until it is");
  const opened: OpenedStore = await openStore(options.store ?? DEFAULT_SERVE_STORE, {
    retentionSeconds: settings.retentionSeconds,
    log,
  });
  let nodeServer: typeof import("@hono/node-server");
  try {
    nodeServer = await import("@hono/node-server");
  } catch {
    await opened.close();
    throw new OffloadError(
      "internal",
      'serve needs the "hono" and "@hono/node-server" packages: npm install hono @hono/node-server',
    );
  }
  const app = createApp({
    store: () => opened.store,
    log,
    ...(ocr === undefined ? {} : { ocr }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
  const host = options.host ?? DEFAULT_SERVE_HOST;
  const port = options.port ?? DEFAULT_SERVE_PORT;
  const { server, address } = await new Promise<{
    server: ReturnType<typeof nodeServer.serve>;
    address: { port: number };
  }>((resolve, reject) => {
    const s = nodeServer.serve(
      { fetch: (req: Request) => app.fetch(req, env), port, hostname: host },
      (info) => resolve({ server: s, address: info }),
    );
    s.once("error", reject);
  }).catch(async (e) => {
    await opened.close();
    throw e;
  });
  // Said once the server is up (a server that fails to start says only why).
  if (shipped)
    log(
      '[edge-offload] OFFLOAD_DEFAULT_CONFIG is not set: sessions nobody configured run in shadow mode (decided and reported, sent unchanged); {"tool_result_offload_shadow":false} goes live',
    );
  const shown = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shown}:${address.port}`,
    store: opened.describe,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
      await opened.close();
    },
  };
}
