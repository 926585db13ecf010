/**
 * Starts the real `wrangler dev` (what `npm start` runs) on 127.0.0.1 with its own ports and state directory,
 * for the smoke tests, or any command that ends up serving the Worker (`npm start` itself). `stop()` kills the
 * whole process group (wrangler and the workerd it spawned).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

export interface DevServer {
  base: string;
  /** The process group of wrangler and the workerd it spawned (to find workerd's own process). */
  group: number | undefined;
  /** Everything wrangler and workerd printed so far. */
  output(): string;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address !== null
          ? resolve(address.port)
          : reject(new Error("no port")),
      );
    });
  });
}

/**
 * `vars` become `--var NAME:value` (secrets included: they never reach a file). `prepare` runs on
 * the fresh state directory before wrangler starts (to seed its local bucket). `inspectorPort`: where
 * the Worker's inspector listens (a free port by default). `stateRoot`: where the state directory is
 * made (default: the system's temporary directory).
 */
export async function startDevServer(
  vars: Record<string, string>,
  timeoutMs = 90_000,
  prepare?: (state: string) => void,
  inspectorPort?: number,
  stateRoot = tmpdir(),
): Promise<DevServer> {
  const [port, inspector] = [await freePort(), inspectorPort ?? (await freePort())];
  const state = mkdtempSync(join(stateRoot, "edge-offload-smoke-"));
  prepare?.(state);
  return launch({
    command: process.execPath,
    args: [
      "node_modules/wrangler/bin/wrangler.js",
      "dev",
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
      // No deployment layer unless the caller gives one (wrangler.toml ships shadow mode for every session).
      ...Object.entries({ OFFLOAD_DEFAULT_CONFIG: "{}", ...vars }).flatMap(([k, v]) => [
        "--var",
        `${k}:${v}`,
      ]),
    ],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
    base: `http://127.0.0.1:${port}`,
    state,
    timeoutMs,
  });
}

export interface Launch {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** Where the Worker will answer. */
  base: string;
  /** A state directory to remove once stopped. */
  state?: string;
  timeoutMs?: number;
}

/** Runs `command` in its own process group and waits until `base` answers /healthz. */
export async function launch(opts: Launch): Promise<DevServer> {
  const { base, state } = opts;
  const timeoutMs = opts.timeoutMs ?? 90_000;
  let output = "";
  const child: ChildProcess = spawn(opts.command, opts.args, {
    cwd: process.cwd(),
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: opts.env,
  });
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const kill = () => {
    if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, "SIGKILL");
  };
  process.once("exit", kill);

  const stop = (): Promise<void> =>
    new Promise<void>((resolve) => {
      const pid = child.pid;
      if (pid === undefined || child.exitCode !== null) return resolve();
      const hard = setTimeout(() => {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {
          // already gone
        }
      }, 5000);
      child.once("exit", () => {
        clearTimeout(hard);
        resolve();
      });
      try {
        process.kill(-pid, "SIGTERM"); // the group: wrangler and the workerd it spawned
      } catch {
        resolve();
      }
    }).finally(() => {
      process.removeListener("exit", kill);
      if (state !== undefined) rmSync(state, { recursive: true, force: true });
    });

  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`${opts.command} exited (${child.exitCode}):\n${output}`);
    try {
      // Any answer means it listens; whether the answer is right is the test's business.
      await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2000) });
      return { base, group: child.pid, output: () => output, stop };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  await stop();
  throw new Error(`${opts.command} not serving ${base} after ${timeoutMs} ms:\n${output}`);
}

/**
 * `npm start` itself (the preflight, .dev.vars, scripts/start.mjs, wrangler dev), as a user runs it, with
 * `args` after `--` (a port: `--port N`, or `env.PORT`) and its own state directory and inspector port.
 */
export async function npmStart(
  args: string[],
  env: Record<string, string> = {},
): Promise<DevServer> {
  const state = mkdtempSync(join(tmpdir(), "edge-offload-start-"));
  const inspector = await freePort();
  return launch({
    command: "npm",
    args: [
      "start",
      "--",
      ...args,
      "--inspector-port",
      String(inspector),
      "--persist-to",
      state,
      "--show-interactive-dev-session=false",
    ],
    // A user's shell: npm runs the scripts with the `node` first on PATH (this one), and vitest's
    // NODE_ENV=test, which alone stops miniflare's Request.cf download, is not there.
    env: {
      ...process.env,
      NODE_ENV: undefined,
      PATH: `${dirname(process.execPath)}:${process.env.PATH}`,
      NO_COLOR: "1",
      ...env,
    },
    base: `http://127.0.0.1:${env.PORT ?? args[args.indexOf("--port") + 1]}`,
    state,
  });
}
