/**
 * Real Postgres and Redis servers for the store tests: Debian's `postgresql` (initdb, postgres) and
 * `redis-server`, on 127.0.0.1, free ports, throwaway data directories, stopped (and their directories
 * removed) at the end. Running as root, Postgres runs as the `postgres` user (it refuses root). When a
 * binary is missing, `start…` answers why instead of a server: a test skips with that message outside CI,
 * and fails in CI (.ci/run installs both).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const CI =
  process.env.CI !== undefined && process.env.CI !== "" && process.env.CI !== "false";

export interface RunningServer {
  url: string;
  stop(): Promise<void>;
}

/** A server, or why there is none. */
export type Started = RunningServer | { missing: string };

const PG_BIN = [
  "/usr/lib/postgresql/17/bin",
  "/usr/lib/postgresql/16/bin",
  "/usr/lib/postgresql/15/bin",
];

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

async function until(what: string, ok: () => Promise<boolean>, ms: number, log: () => string) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await ok()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} did not start within ${ms} ms:\n${log().slice(-2000)}`);
}

/** Whether something accepts TCP connections on the port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = new Socket();
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
    s.connect(port, "127.0.0.1");
  });
}

function stopper(child: ChildProcess, dir: string): () => Promise<void> {
  return async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGINT");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
    rmSync(dir, { recursive: true, force: true });
  };
}

function ids(user: string): { uid: number; gid: number } | null {
  try {
    const uid = Number(execFileSync("id", ["-u", user], { encoding: "utf8" }).trim());
    const gid = Number(execFileSync("id", ["-g", user], { encoding: "utf8" }).trim());
    return { uid, gid };
  } catch {
    return null;
  }
}

/** A fresh Postgres cluster; the URL names its `postgres` database (user `postgres`, trust auth). */
export async function startPostgres(): Promise<Started> {
  const bin = PG_BIN.find((d) => existsSync(join(d, "initdb")));
  if (bin === undefined)
    return { missing: "Postgres (Debian's postgresql package) is not installed" };
  const root = process.getuid?.() === 0;
  const owner = root ? ids("postgres") : null;
  if (root && owner === null) return { missing: "running as root and there is no postgres user" };
  const dir = mkdtempSync(join(tmpdir(), "edge-offload-pg-"));
  const as = owner === null ? {} : owner;
  if (owner !== null) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, "data");
  execFileSync(
    join(bin, "initdb"),
    ["-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C"],
    { ...as, stdio: "pipe" },
  );
  const port = await freePort();
  let log = "";
  const child = spawn(
    join(bin, "postgres"),
    [
      "-D",
      data,
      "-p",
      String(port),
      "-k",
      dir,
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "fsync=off",
      "-c",
      "synchronous_commit=off",
      "-c",
      "full_page_writes=off",
      "-c",
      "max_connections=200",
    ],
    { ...as, stdio: ["ignore", "pipe", "pipe"] },
  );
  child.stderr!.on("data", (d: Buffer) => {
    log += d.toString();
  });
  child.stdout!.on("data", () => {});
  const stop = stopper(child, dir);
  try {
    await until(
      "postgres",
      async () => log.includes("ready to accept connections") && (await listening(port)),
      30_000,
      () => log,
    );
  } catch (e) {
    await stop();
    throw e;
  }
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, stop };
}

/** A fresh redis-server without persistence. */
export async function startRedis(): Promise<Started> {
  const bin = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].find((f) => existsSync(f));
  if (bin === undefined)
    return { missing: "redis-server (Debian's redis-server package) is not installed" };
  const dir = mkdtempSync(join(tmpdir(), "edge-offload-redis-"));
  const port = await freePort();
  let log = "";
  const child = spawn(
    bin,
    [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--dir",
      dir,
      "--save",
      "",
      "--appendonly",
      "no",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const keep = (d: Buffer) => {
    log += d.toString();
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const stop = stopper(child, dir);
  try {
    await until(
      "redis-server",
      () => listening(port),
      15_000,
      () => log,
    );
  } catch (e) {
    await stop();
    throw e;
  }
  return { url: `redis://127.0.0.1:${port}`, stop };
}

/** A unique name for one store's tables or keys (stores of a run share one server). */
export function uniquePrefix(kind: string): string {
  return `${kind}_${process.pid}_${Math.random().toString(36).slice(2, 10)}_`;
}
