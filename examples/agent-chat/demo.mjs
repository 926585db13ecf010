/**
 * The example in one command, with no key and no network: a local fake model (../fake-anthropic.mjs), the
 * agent under `wrangler dev` pointed at it, and the chat client (client.mjs) sending one message and
 * printing the streamed answer and what edge-offload did. Everything is stopped at the end.
 *
 *   node examples/agent-chat/demo.mjs ["your message"]
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startFakeAnthropic } from "../fake-anthropic.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const wrangler = join(
  dirname(createRequire(import.meta.url).resolve("wrangler/package.json")),
  "bin",
  "wrangler.js",
);
const message = process.argv.slice(2).join(" ") || "What is low in warehouse A?";

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

const fake = await startFakeAnthropic();
const [port, inspector] = [await freePort(), await freePort()];
const state = mkdtempSync(join(tmpdir(), "agent-chat-demo-"));
const url = `http://127.0.0.1:${port}`;
let output = "";
const dev = spawn(
  process.execPath,
  [
    wrangler,
    "dev",
    "-c",
    join(here, "wrangler.toml"),
    "--local",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-port",
    String(inspector),
    "--persist-to",
    state,
    "--show-interactive-dev-session=false",
    "--var",
    `ANTHROPIC_BASE_URL:${fake.url}/v1`,
    "--var",
    "ANTHROPIC_API_KEY:sk-ant-not-needed-by-the-fake",
    "--var",
    `OFFLOAD_SECRET:${process.env.OFFLOAD_SECRET ?? "an-example-secret-of-16-chars-or-more"}`,
  ],
  {
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      WRANGLER_SEND_METRICS: "false",
      CLOUDFLARE_CF_FETCH_ENABLED: "false",
      NO_COLOR: "1",
    },
  },
);
dev.stdout.on("data", (d) => (output += d));
dev.stderr.on("data", (d) => (output += d));
const stop = async () => {
  try {
    process.kill(-dev.pid, "SIGTERM"); // wrangler and the workerd it spawned
  } catch {
    // already gone
  }
  await fake.close();
  rmSync(state, { recursive: true, force: true });
};

let code = 1;
try {
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (dev.exitCode !== null) throw new Error(`wrangler dev exited:\n${output}`);
    if (Date.now() > deadline) throw new Error(`wrangler dev did not start:\n${output}`);
    try {
      await fetch(url, { signal: AbortSignal.timeout(2000) });
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  console.log(`the agent on ${url}, its model a local fake on ${fake.url}`);
  console.log(`> ${message}`);
  // Not spawnSync: the fake model answers from this very process.
  const client = spawn(process.execPath, [join(here, "client.mjs"), "--url", url, message], {
    stdio: "inherit",
  });
  code = await new Promise((resolve) => client.on("exit", (status) => resolve(status ?? 1)));
} catch (e) {
  console.error(e instanceof Error ? e.message : String(e));
} finally {
  await stop();
}
process.exit(code);
