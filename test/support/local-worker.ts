/**
 * The Worker as `wrangler dev` runs it (wrangler's programmatic `unstable_startWorker`: the real build in
 * workerd with miniflare's local DO, R2 and KV), on 127.0.0.1, in memory, with the given vars and secrets.
 */
import { unstable_startWorker } from "wrangler";

export interface LocalWorker {
  base: string;
  dispose(): Promise<void>;
}

export async function startLocalWorker(
  vars: Record<string, string>,
  secrets: Record<string, string>,
): Promise<LocalWorker> {
  // No network here: miniflare would try to fetch the Request.cf data and log the failure.
  process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
  const bindings = {
    ...Object.fromEntries(
      Object.entries(vars).map(([k, value]) => [k, { type: "plain_text" as const, value }]),
    ),
    ...Object.fromEntries(
      Object.entries(secrets).map(([k, value]) => [k, { type: "secret_text" as const, value }]),
    ),
  };
  const worker = await unstable_startWorker({
    config: "wrangler.toml",
    bindings,
    dev: {
      server: { hostname: "127.0.0.1", port: 0 },
      inspector: false,
      persist: false,
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
