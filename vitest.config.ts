import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

/** Secrets the workerd tests run with (never used anywhere else). Tenants "acme" and "globex". */
const TEST_SECRETS = {
  OFFLOAD_API_KEYS: "acme:test-key-acme,globex:test-key-globex",
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
          // A first extraction loads pdf.js into the isolate: seconds on a machine shared by other runs.
          testTimeout: 30_000,
        },
      },
      {
        // The Agents example in workerd: its own Worker (examples/agent-chat), a fake provider at its fetch.
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./examples/agent-chat/wrangler.toml" },
            miniflare: {
              bindings: {
                ANTHROPIC_API_KEY: "sk-ant-fake-agents",
                OFFLOAD_SECRET: "agents-test-secret-0123456789",
              },
            },
          }),
        ],
        test: {
          name: "cf-agents",
          include: ["test/cf-agents/**/*.test.ts"],
          testTimeout: 30_000,
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
