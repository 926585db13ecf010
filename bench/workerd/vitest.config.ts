// The in-workerd benches: the latency bench's second half (`npm run bench -- latency`: the Worker called through
// SELF, in the same isolate as its Durable Objects, R2 and KV, no HTTP between client and Worker) and the round
// trips and rows a turn costs (`npm run bench -- rows`). Not part of `npm test`: they print, they assert none.
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          // The rows bench drives the app as the workers tests do (their helpers, tenant "acme").
          OFFLOAD_API_KEYS: "bench:loopback-bench-key-0001,acme:test-key-acme-0001",
          OFFLOAD_SECRET: "loopback-bench-secret-0123456789",
          // The engine's defaults, no deployment layer (wrangler.toml ships shadow mode).
          OFFLOAD_DEFAULT_CONFIG: "{}",
        },
      },
    }),
  ],
  test: {
    name: "bench-workerd",
    include: ["bench/workerd/**/*.test.ts"],
    testTimeout: 300_000,
  },
});
