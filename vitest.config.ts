import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

/** Secrets the workerd tests run with (never used anywhere else). Tenants "acme" and "globex". */
const TEST_SECRETS = {
  OFFLOAD_API_KEYS: "acme:test-key-acme-0001,globex:test-key-globex-0001",
  OFFLOAD_SECRET: "test-secret-for-vitest-only-0123456789",
};

// Four projects: the pure core in plain Node (fast); everything that needs workerd (bindings, the Worker);
// a smoke test that starts the real `wrangler dev` (production rules: no eval) and talks HTTP to it; and the
// official SDKs against the proxy routes of a locally started Worker, with a fake provider on 127.0.0.1.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
          environment: "node",
        },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: { bindings: TEST_SECRETS },
          }),
        ],
        test: {
          name: "workers",
          include: ["test/worker/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "smoke",
          include: ["test/smoke/**/*.test.ts"],
          environment: "node",
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "clients",
          include: ["test/clients/**/*.test.ts"],
          environment: "node",
          testTimeout: 30_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
