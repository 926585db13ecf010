// The in-workerd half of the latency bench (`npm run bench -- latency`): the Worker called through SELF, in
// the same isolate as its Durable Objects, R2 and KV (no HTTP between client and Worker). Not part of
// `npm test`: it prints ratios, it asserts none.
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          OFFLOAD_API_KEYS: "bench:loopback-bench-key-0001",
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
