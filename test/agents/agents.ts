/**
 * The two coding agents, installed from the npm registry into a cache folder (not devDependencies: their
 * native binaries weigh ~800 MB, which every `npm ci` of the project would download for one test), pinned to
 * exact versions, and run non-interactively with a timeout that kills their whole process group.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

/** Bump together with the docs' tested versions (docs/proxy.md). */
export const AGENT_VERSIONS = {
  "@anthropic-ai/claude-code": "2.1.332",
  "@openai/codex": "0.171.0",
} as const;

export interface Agents {
  /** The Claude Code native binary. */
  claude: string;
  /** Codex's launcher (a node script that execs its native binary). */
  codex: string;
}

/** The cache folder: EDGE_OFFLOAD_AGENTS_DIR, or ~/.cache/edge-offload-agents/<versions>. */
export function agentsDir(): string {
  const tag = Object.values(AGENT_VERSIONS).join("-");
  return (
    process.env.EDGE_OFFLOAD_AGENTS_DIR ?? join(homedir(), ".cache", "edge-offload-agents", tag)
  );
}

function installed(dir: string, name: string): string | null {
  const manifest = join(dir, "node_modules", name, "package.json");
  if (!existsSync(manifest)) return null;
  const pkg = JSON.parse(readFileSync(manifest, "utf8")) as { version: string };
  return pkg.version;
}

/** The platform package Claude Code's postinstall would copy its binary from (scripts are not run here). */
function claudeBinary(dir: string): string {
  const arch = process.arch === "arm64" ? "arm64" : "x64";
  const musl = process.report?.getReport
    ? !(process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header
        ?.glibcVersionRuntime
    : false;
  const pkg = `@anthropic-ai/claude-code-${process.platform}-${arch}${musl ? "-musl" : ""}`;
  return join(dir, "node_modules", pkg, process.platform === "win32" ? "claude.exe" : "claude");
}

/**
 * Installs the pinned agents once (npm's own cache makes a reinstall cheap) and returns their entry points.
 * Install scripts are not run: the binaries are read from the platform packages directly.
 */
export function ensureAgents(log: (line: string) => void = () => {}): Agents {
  const dir = agentsDir();
  const missing = Object.entries(AGENT_VERSIONS).filter(([n, v]) => installed(dir, n) !== v);
  if (missing.length > 0) {
    log(`installing ${missing.map(([n, v]) => `${n}@${v}`).join(" ")} into ${dir}`);
    const npm = join(dirname(process.execPath), process.platform === "win32" ? "npm.cmd" : "npm");
    const run = spawnSync(
      existsSync(npm) ? npm : "npm",
      [
        "install",
        "--prefix",
        dir,
        "--no-audit",
        "--no-fund",
        "--no-save",
        "--ignore-scripts",
        "--loglevel=error",
        ...Object.entries(AGENT_VERSIONS).map(([n, v]) => `${n}@${v}`),
      ],
      { encoding: "utf8", timeout: 600_000 },
    );
    if (run.status !== 0)
      throw new Error(
        `npm install of the agents failed (${run.status ?? run.signal}):\n${run.stderr}${run.stdout}`,
      );
  }
  const agents = {
    claude: claudeBinary(dir),
    codex: join(dir, "node_modules", "@openai", "codex", "bin", "codex.js"),
  };
  for (const [name, path] of Object.entries(agents))
    if (!existsSync(path)) throw new Error(`${name}: ${path} is missing after the install`);
  return agents;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  ms: number;
}

/** Runs a command in its own process group; on timeout the whole group is killed. Never rejects. */
export function run(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: Record<string, string>; timeoutMs: number; stdin?: string },
): Promise<RunResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child: ChildProcess = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    child.stdout?.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    child.stdin?.end(options.stdin ?? "");
    const killGroup = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, options.timeoutMs);
    process.once("exit", killGroup);
    const done = (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer);
      process.removeListener("exit", killGroup);
      // Whatever the agent left running (a shell, a helper) goes with it.
      killGroup();
      resolve({ code, signal, stdout, stderr, timedOut, ms: Date.now() - started });
    };
    child.once("error", (e) => {
      stderr += `\nspawn failed: ${e.message}`;
      done(null, null);
    });
    child.once("close", done);
  });
}

/** A run's output for a failure message (the tail, where agents print their errors). */
export function describeRun(name: string, r: RunResult): string {
  const tail = (s: string) => (s.length > 4000 ? `…${s.slice(-4000)}` : s);
  return [
    `${name}: exit ${r.code ?? r.signal}${r.timedOut ? " (timed out, process group killed)" : ""} after ${r.ms} ms`,
    `--- stdout\n${tail(r.stdout)}`,
    `--- stderr\n${tail(r.stderr)}`,
  ].join("\n");
}
