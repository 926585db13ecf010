/**
 * The Worker as a client reaches it: wrangler's programmatic dev server (the real build in workerd, with
 * miniflare's bindings) on 127.0.0.1, its provider base URLs pointed at a fake provider. workerd's own network
 * makes the provider calls, so a dropped connection is a failed fetch, as in production.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { unstable_startWorker } from "wrangler";
import { startServe } from "./serve.ts";

export interface LocalWorker {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  base: string;
  dispose(): Promise<void>;
}

/**
 * `provider` is the fake's origin; it serves Anthropic under /anthropic and OpenAI under /openai/v1. With
 * EDGE_OFFLOAD_TARGET=serve (the vitest project "serve"), the same service runs as `edge-offload serve` on
 * Node over a fresh SQLite file instead: the suites run against both.
 */
export async function startProxyWorker(input: {
  provider: string;
  vars?: Record<string, string>;
  secrets: Record<string, string>;
  /** A directory for the local state (DOs, R2, KV): a restart on it finds what the last run wrote. */
  persist?: string;
}): Promise<LocalWorker> {
  if (process.env.EDGE_OFFLOAD_TARGET === "serve") {
    const dir = mkdtempSync(join(tmpdir(), "edge-offload-serve-"));
    const server = await startServe({
      store: `sqlite:${join(dir, "serve.db")}`,
      vars: {
        ANTHROPIC_BASE_URL: `${input.provider}/anthropic`,
        OPENAI_BASE_URL: `${input.provider}/openai/v1`,
        ...input.vars,
        ...input.secrets,
      },
    });
    return {
      base: server.base,
      dispose: async () => {
        await server.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  // No network here: miniflare would try to fetch the Request.cf data and log the failure.
  process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
  const text = (value: string) => ({ type: "plain_text" as const, value });
  const secret = (value: string) => ({ type: "secret_text" as const, value });
  const worker = await unstable_startWorker({
    config: "wrangler.toml",
    bindings: {
      // No deployment layer unless the caller gives one (wrangler.toml ships shadow mode for every session).
      OFFLOAD_DEFAULT_CONFIG: text("{}"),
      ANTHROPIC_BASE_URL: text(`${input.provider}/anthropic`),
      OPENAI_BASE_URL: text(`${input.provider}/openai/v1`),
      ...Object.fromEntries(Object.entries(input.vars ?? {}).map(([k, v]) => [k, text(v)])),
      ...Object.fromEntries(Object.entries(input.secrets).map(([k, v]) => [k, secret(v)])),
    },
    dev: {
      server: { hostname: "127.0.0.1", port: 0 },
      inspector: false,
      persist: input.persist ?? false,
      watch: false,
      logLevel: "none",
    },
  });
  await worker.ready;
  return {
    base: (await worker.url).href.replace(/\/$/, ""),
    dispose: () => worker.dispose(),
  };
}
