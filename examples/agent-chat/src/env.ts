/** The example agent's bindings (wrangler.toml; secrets from .dev.vars or `wrangler secret put`). */
import type { BodyBucket } from "edge-offload/agents";

/** As `wrangler types` would declare it (Cloudflare.Env), plus what this example reads. */
export interface Env extends Cloudflare.Env {
  ChatAgent: DurableObjectNamespace;
  /** Optional: where bodies too large for the agent's SQLite rows go. */
  BODIES?: BodyBucket;
  ANTHROPIC_API_KEY: string;
  ANTHROPIC_BASE_URL: string;
  /** Keys mem_ids: 16 characters or more. */
  OFFLOAD_SECRET: string;
}
