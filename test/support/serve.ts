/**
 * `edge-offload serve` as a client reaches it: the CLI from the sources (`npm run serve`'s command) in a
 * child process on 127.0.0.1 and a free port, over the store a URL names, configured by the Worker's
 * variables. `stop()` ends that process (SIGTERM: the server closes its store) and waits for it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { freePort } from "./servers.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface ServeProcess {
  base: string;
  /** What the process printed so far. */
  output(): string;
  stop(): Promise<void>;
}

export async function startServe(input: {
  store: string;
  vars: Record<string, string>;
  port?: number;
  timeoutMs?: number;
}): Promise<ServeProcess> {
  const port = input.port ?? (await freePort());
  const child: ChildProcess = spawn(
    process.execPath,
    [
      "--experimental-strip-types",
      "--disable-warning=ExperimentalWarning",
      "src/cli.ts",
      "serve",
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--store",
      input.store,
    ],
    {
      cwd: ROOT,
      // No deployment layer unless the caller gives one (serve, as the Worker, ships shadow mode).
      env: { PATH: process.env.PATH ?? "", OFFLOAD_DEFAULT_CONFIG: "{}", ...input.vars },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let out = "";
  child.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
    await exited;
  };
  const end = Date.now() + (input.timeoutMs ?? 60_000);
  while (!out.includes("edge-offload: serving on")) {
    if (child.exitCode !== null || Date.now() > end) {
      await stop();
      throw new Error(`serve did not start:\n${out.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { base: `http://127.0.0.1:${port}`, output: () => out, stop };
}
