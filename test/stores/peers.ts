/** The two-process tests' side: a peer process (peer.ts) and its command channel. */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface Peer {
  send(command: Record<string, unknown>): Promise<Record<string, any>>;
  close(): Promise<void>;
}

export function startPeer(store: string): Peer {
  const child = spawn(
    process.execPath,
    [
      "--experimental-strip-types",
      "--disable-warning=ExperimentalWarning",
      "test/stores/peer.ts",
      store,
    ],
    { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] },
  );
  let err = "";
  child.stderr.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const waiting: ((line: string) => void)[] = [];
  createInterface({ input: child.stdout }).on("line", (line) => waiting.shift()?.(line));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    send: (command) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`peer did not answer:\n${err}`)), 60_000);
        waiting.push((line) => {
          clearTimeout(timer);
          const out = JSON.parse(line) as Record<string, any>;
          if (out.error !== undefined) reject(new Error(`${out.error}\n${err}`));
          else resolve(out);
        });
        child.stdin.write(`${JSON.stringify(command)}\n`);
      }),
    close: async () => {
      if (child.exitCode === null) {
        child.stdin.write(`${JSON.stringify({ op: "close" })}\n`);
        child.stdin.end();
        const t = setTimeout(() => child.kill("SIGKILL"), 15_000);
        await exited;
        clearTimeout(t);
      }
    },
  };
}
