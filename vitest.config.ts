import { fileURLToPath } from "node:url";
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

/** Secrets the workerd tests run with (never used anywhere else). Tenants "acme" and "globex". */
const TEST_SECRETS = {
  OFFLOAD_API_KEYS: "acme:test-key-acme-0001,globex:test-key-globex-0001",
  OFFLOAD_SECRET: "test-secret-for-vitest-only-0123456789",
};
/**
 * Vars a local `.dev.vars` sets for `npm start` (which writes one, and so does the smoke test that runs it)
 * that the workerd tests must not inherit: they run as a deployment does.
 */
const DEPLOYMENT_VARS = {
  OFFLOAD_DASHBOARD_URL_KEYS: "off",
  // No deployment layer: the engine's own defaults, each test setting what it tests (the shipped layer,
  // shadow for every session, has its tests: test/unit/shipped-config.test.ts, the README's quick start).
  OFFLOAD_DEFAULT_CONFIG: "{}",
};
/** English trained data, gzipped as @tesseract.js-data/eng ships it (what `npm run ocr:setup` uploads). */
const OCR_MODEL_FILE = "node_modules/@tesseract.js-data/eng/4.0.0_best_int/eng.traineddata.gz";
/**
 * `edge-offload` and its subpaths as the examples import them (a user's project resolves them to dist/):
 * here, the sources, so the tests need no build. Each name exactly (the root must not take the subpaths).
 */
const SOURCES = Object.entries({
  "edge-offload": "lib",
  "edge-offload/extract": "extract/entry",
  "edge-offload/toolkit": "toolkit/entry",
  "edge-offload/hono": "toolkit/hono",
  "edge-offload/pricing": "pricing",
  "edge-offload/store": "store-kit",
  "edge-offload/replay": "replay/entry",
  "edge-offload/fetch": "integrations/fetch",
  "edge-offload/ai-sdk": "integrations/ai-sdk",
  "edge-offload/agents": "integrations/agents",
  "edge-offload/eval": "eval/entry",
}).map(([name, path]) => ({
  find: new RegExp(`^${name}$`),
  replacement: fileURLToPath(new URL(`./src/${path}.ts`, import.meta.url)),
}));

// Six projects: the pure core in plain Node (fast); everything that needs workerd (bindings, the Worker);
// a smoke test that starts the real `wrangler dev` (production rules: no eval) and talks HTTP to it; and the
// official SDKs against the proxy routes of a locally started Worker, with a fake provider on 127.0.0.1; the
// stores against real Postgres and Redis servers; then, alone, the work budgets.
export default defineConfig({
  test: {
    projects: [
      {
        resolve: { alias: SOURCES },
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
          exclude: ["test/unit/work-budgets.test.ts"],
          environment: "node",
        },
      },
      // Time ratios and a 128 MB child process, in a group of their own so nothing else runs beside them:
      // neither the measurements nor the other suites' time limits suffer from sharing the cores. (Vitest
      // runs groups one after another; where a project gets one worker, as on 2 cores, its files form a
      // sequential group that comes last, so this group then runs first.)
      {
        test: {
          name: "budgets",
          include: ["test/unit/work-budgets.test.ts"],
          environment: "node",
          // The ratios collect garbage before each measurement, so one run's leftovers are not billed to the next.
          execArgv: ["--expose-gc"],
          sequence: { groupOrder: 1 },
        },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: { ...TEST_SECRETS, ...DEPLOYMENT_VARS, OFFLOAD_OCR: "on" },
              // The OCR model as a test-only binding: a test that reads images puts it in its LEDGER.
              dataBlobBindings: { TEST_OCR_MODEL: OCR_MODEL_FILE },
            },
          }),
        ],
        resolve: { alias: SOURCES },
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
        resolve: { alias: SOURCES },
        test: {
          name: "cf-agents",
          include: ["test/cf-agents/**/*.test.ts"],
          testTimeout: 30_000,
        },
      },
      // The official clients' proxy suites again, against `edge-offload serve` on Node (test/support/worker.ts).
      {
        test: {
          name: "serve",
          include: ["test/clients/sdk.test.ts", "test/clients/billing.test.ts"],
          environment: "node",
          env: { EDGE_OFFLOAD_TARGET: "serve" },
          testTimeout: 30_000,
          hookTimeout: 120_000,
        },
      },
      // The stores against real servers: one Postgres and one Redis started for the run (servers.setup.ts).
      {
        test: {
          name: "stores",
          include: ["test/stores/**/*.test.ts"],
          environment: "node",
          globalSetup: ["test/stores/servers.setup.ts"],
          testTimeout: 30_000,
          hookTimeout: 60_000,
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
        resolve: { alias: SOURCES },
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
