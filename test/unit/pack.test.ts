/**
 * The package as a user gets it: `npm pack` (its prepack build runs in a copy of the sources, so the
 * worktree's dist/ is never touched), the tarball installed into a fresh folder with npm (cached packages
 * first, the registry only for what the cache lacks), then what the README promises there: the library
 * snippet runs, a core-only install needs none of the optional peers, `require()` works, the CLI runs
 * without the optional `ai` package, and the portable checks (test/portable/library.mjs) pass under Node,
 * the machine's older Node when CI names one, Deno and Bun. Outside CI a runtime that is not installed is
 * skipped with a note saying how to get it; in CI (.ci/run installs them) its absence fails.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import { catalogTurn } from "../portable/catalog-turn.mjs";
import { type RunningServer, type Started, startPostgres, startRedis } from "../support/servers.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const CI = process.env.CI === "true";
const FIXTURES = ["table.csv", "page.html", "report.docx", "workbook.xlsx", "text.pdf"];
/** What `npm pack` needs besides what it ships: the build's inputs. */
const SOURCES = [
  "package.json",
  "package-lock.json",
  "tsconfig.base.json",
  "tsconfig.build.json",
  "README.md",
  "LICENSE",
  "src",
  "docs",
];

const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH}` };
let work = "";
let app = "";
let tarball = "";

function npm(args: string[], cwd: string): string {
  const out = spawnSync("npm", [...args, "--no-audit", "--no-fund"], {
    cwd,
    env,
    encoding: "utf8",
  });
  if (out.status !== 0)
    throw new Error(`npm ${args.join(" ")} failed:\n${out.stderr}${out.stdout}`);
  return out.stdout;
}

function which(name: string): string | null {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const file = join(dir, name);
    if (dir !== "" && existsSync(file)) return file;
  }
  return null;
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "edge-offload-pack-"));
  const repo = join(work, "repo");
  for (const name of SOURCES) cpSync(join(root, name), join(repo, name), { recursive: true });
  symlinkSync(join(root, "node_modules"), join(repo, "node_modules"));
  const name = npm(["pack", "--silent", "--pack-destination", work], repo)
    .trim()
    .split("\n")
    .pop()!;
  tarball = join(work, name);
  app = join(work, "app");
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), '{"name":"app","private":true,"type":"module"}\n');
  npm(["install", "--prefer-offline", tarball], app);
}, 240_000);

afterAll(() => {
  if (work !== "") rmSync(work, { recursive: true, force: true });
});

describe("the packed package", { timeout: 60_000 }, () => {
  it("ships the build, the docs the README links to, the license and the metadata", () => {
    const files = execFileSync("tar", ["tzf", tarball], { encoding: "utf8" }).split("\n");
    for (const f of ["LICENSE", "README.md", "dist/lib.js", "dist/lib.d.ts", "dist/cli.js"])
      expect(files, f).toContain(`package/${f}`);
    expect(files).toContain("package/dist/cjs/lib.cjs");
    expect(
      files.filter((f) => f.startsWith("package/src/") || f.startsWith("package/test/")),
    ).toEqual([]);
    const installed = join(app, "node_modules", "edge-offload");
    expect(readFileSync(join(installed, "LICENSE"), "utf8")).toMatch(/^MIT License/);
    const meta = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
    expect(meta.license).toBe("MIT");
    expect(meta.repository.url).toMatch(/^git\+https:\/\/github\.com\/.+\.git$/);
    expect(meta.homepage).toMatch(/^https:\/\//);
    expect(meta.bugs.url).toMatch(/^https:\/\//);
    // Every relative link of the packed README and docs resolves inside the package.
    for (const doc of [
      "README.md",
      ...readdirSync(join(installed, "docs")).map((d) => `docs/${d}`),
    ]) {
      const text = readFileSync(join(installed, doc), "utf8");
      for (const [, target] of text.matchAll(/\]\(((?!https?:|#|mailto:)[^)#\s]+)/g)) {
        expect(existsSync(join(installed, dirname(doc), target!)), `${doc} → ${target}`).toBe(true);
      }
    }
  });

  it("installs for a core-only user without hono, unpdf or ai", () => {
    for (const peer of ["hono", "unpdf", "ai"])
      expect(existsSync(join(app, "node_modules", peer)), peer).toBe(false);
    expect(Object.keys(pkg.dependencies).sort()).toEqual(["zod"]);
  });

  it("runs the README's library snippet as written", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const snippet = /As a library:\n\n```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(snippet).toContain('from "edge-offload"');
    const turn = JSON.stringify(catalogTurn());
    // What the snippet leaves to its reader: the request text, and the model's recall call (which names the
    // mem_id the snippet's own compact returned).
    const before = `const rawRequestText = ${JSON.stringify(turn)};
const toolUse = { get input(): unknown { return { mem_id: decisions[0]!.mem_id, json_path: "items[1499]" }; } };
`;
    const after = `
console.log(JSON.stringify({ changed: request !== rawRequestText, offloaded: report.offloaded, is_error: answer.is_error, first: answer.content.split("\\n")[0] }));
`;
    writeFileSync(join(app, "snippet.ts"), before + snippet + after);
    const run = spawnSync(
      process.execPath,
      ["--experimental-strip-types", "--disable-warning=ExperimentalWarning", "snippet.ts"],
      {
        cwd: app,
        env: { ...env, OFFLOAD_SECRET: "a-secret-for-the-readme-snippet-0123" },
        encoding: "utf8",
      },
    );
    expect(run.status, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout);
    expect(out).toMatchObject({ changed: true, offloaded: 1, is_error: false });
    expect(out.first).toMatch(/^1 value at "\$\.items\[1499\]" in trm_[0-9a-f]{24}:$/);
  });

  it("loads with require(), and says to use import() where a runtime cannot require ES modules", () => {
    const script = `
      const lib = require("edge-offload");
      const load = require("./node_modules/edge-offload/dist/cjs/load.cjs");
      const esm = Object.assign(new Error("require() of ES Module"), { code: "ERR_REQUIRE_ESM" });
      let message = "";
      try { load(() => { throw esm; }, "../lib.js", "edge-offload"); } catch (e) { message = e.message; }
      console.log(JSON.stringify({ compact: typeof lib.compact, message }));`;
    const run = spawnSync(process.execPath, ["-e", script], { cwd: app, env, encoding: "utf8" });
    expect(run.status, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout);
    expect(out.compact).toBe("function");
    expect(out.message).toContain('use `await import("edge-offload")` from CommonJS');
  });

  it("runs the CLI without the optional ai package: the prune-messages row is skipped in one line", () => {
    const bin = join(app, "node_modules", ".bin", "edge-offload");
    const sample = join(root, "test", "fixtures", "corpus-sample.jsonl.gz");
    const version = spawnSync(bin, ["--version"], { env, encoding: "utf8" });
    expect(version.stdout).toBe(`${pkg.version}\n`);
    const run = spawnSync(bin, ["replay", sample], { env, encoding: "utf8" });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toBe(
      'edge-offload: skipping the prune-messages row: prune-messages runs the AI SDK\'s pruneMessages, from the optional "ai" package (npm i ai)\n',
    );
    expect(run.stdout).toMatch(/^edge-offload\+all /m);
    expect(run.stdout).not.toContain("prune-messages");
    const asked = spawnSync(bin, ["replay", sample, "--policies", "prune-messages"], {
      env,
      encoding: "utf8",
    });
    expect(asked.status).toBe(2);
    expect(asked.stderr.trim().split("\n")).toHaveLength(1);
    expect(asked.stderr).toContain("it is not installed");
  });
});

describe("the portable checks on every runtime the README names", { timeout: 60_000 }, () => {
  beforeAll(() => {
    // The peers the checks exercise (edge-offload/hono, PDF text), at the versions this repo develops with.
    npm(
      [
        "install",
        "--prefer-offline",
        `hono@${pkg.devDependencies.hono}`,
        `unpdf@${pkg.devDependencies.unpdf}`,
      ],
      app,
    );
    for (const f of ["library.mjs", "catalog-turn.mjs"])
      cpSync(join(root, "test", "portable", f), join(app, f));
    mkdirSync(join(app, "fixtures"));
    for (const f of FIXTURES)
      cpSync(join(root, "test", "fixtures", "files", f), join(app, "fixtures", f));
  }, 120_000);

  function portable(
    ctx: TestContext,
    label: string,
    command: string | null,
    args: string[],
    how: string,
  ) {
    if (command === null) {
      const note = `${label}: not installed, skipped (${how})`;
      if (CI) throw new Error(`${note}; CI must run it`);
      console.warn(`pack.test.ts: ${note}`);
      ctx.skip(note);
    }
    const run = spawnSync(command!, [...args, "library.mjs"], { cwd: app, env, encoding: "utf8" });
    expect(run.stdout, run.stderr).toMatch(/^9 passed, 0 failed$/m);
    expect(run.status).toBe(0);
    return run.stdout;
  }

  const RUNTIMES_HOW =
    "bash .ci/run installs deno and bun from the npm registry; or put them on PATH";

  it("Node (this one)", (ctx) => {
    expect(portable(ctx, "node", process.execPath, [], "")).toContain(
      `node ${process.versions.node}`,
    );
  });

  it("the machine's older Node, when CI names it (the library's floor is Node 20)", (ctx) => {
    const old = process.env.EDGE_OFFLOAD_OLD_NODE;
    if (old === undefined || old === "") {
      ctx.skip(
        "EDGE_OFFLOAD_OLD_NODE is not set (.ci/run sets it when the machine's Node is older than 22)",
      );
    }
    expect(portable(ctx, "old node", old!, [], "")).toMatch(/^node 2\d\./m);
  });

  it("Deno", (ctx) => {
    expect(portable(ctx, "deno", which("deno"), ["run", "-A"], RUNTIMES_HOW)).toMatch(/^deno 2\./m);
  });

  it("Bun", (ctx) => {
    expect(portable(ctx, "bun", which("bun"), [], RUNTIMES_HOW)).toMatch(/^bun 1\./m);
  });
});

describe("a consumer project on shared stores (two processes, Postgres and Redis; serve on SQLite)", {
  timeout: 90_000,
}, () => {
  const servers: RunningServer[] = [];
  let pgUrl = "";
  let redisUrl = "";

  /** A server, or why this describe cannot run (a failure in CI, a skip with the reason outside). */
  function running(s: Started, ctx: TestContext): string {
    if ("missing" in s) {
      if (CI) throw new Error(`${s.missing}; .ci/run installs it`);
      ctx.skip(s.missing);
    }
    servers.push(s as RunningServer);
    return (s as RunningServer).url;
  }

  beforeAll(() => {
    npm(
      [
        "install",
        "--prefer-offline",
        `pg@${pkg.devDependencies.pg}`,
        `ioredis@${pkg.devDependencies.ioredis}`,
        `hono@${pkg.devDependencies.hono}`,
        `@hono/node-server@${pkg.devDependencies["@hono/node-server"]}`,
      ],
      app,
    );
    for (const f of ["consumer.mjs", "catalog-turn.mjs"])
      cpSync(join(root, "test", "portable", f), join(app, f));
  }, 180_000);

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  it("recalls in one Node process what another offloaded, on one Postgres and one Redis", async (ctx) => {
    const [pg, redis] = await Promise.all([startPostgres(), startRedis()]);
    pgUrl = running(pg, ctx);
    redisUrl = running(redis, ctx);
    const session = `consumer-${Date.now().toString(36)}`;
    const node = (...args: string[]) =>
      spawnSync(process.execPath, ["consumer.mjs", ...args], { cwd: app, env, encoding: "utf8" });
    const wrote = node("write", pgUrl, redisUrl, session);
    expect(wrote.status, wrote.stderr).toBe(0);
    const mems = JSON.parse(wrote.stdout) as string[];
    expect(mems).toHaveLength(2);
    for (const m of mems) expect(m).toMatch(/^trm_[0-9a-f]{24}$/);
    const read = node("read", pgUrl, redisUrl, session, ...mems);
    expect(read.status, read.stderr).toBe(0);
    for (const answer of JSON.parse(read.stdout) as { is_error: boolean; content: string }[]) {
      expect(answer.is_error).toBe(false);
      expect(answer.content).toContain("item-1499");
    }
  });

  it("`edge-offload serve` restarted on the same SQLite file answers the recalls it had", async () => {
    const bin = join(app, "node_modules", ".bin", "edge-offload");
    const key = "sk-consumer-serve-0001";
    const vars = {
      ...env,
      OFFLOAD_API_KEYS: `c:${key}`,
      OFFLOAD_SECRET: "consumer-serve-secret-0123456789",
    };
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    const session = `served-${Date.now().toString(36)}`;
    const start = async () => {
      const { freePort } = await import("../support/servers.ts");
      const port = await freePort();
      const child = spawn(bin, ["serve", "--port", String(port), "--store", "sqlite:./served.db"], {
        cwd: app,
        env: vars,
      });
      let out = "";
      child.stderr.on("data", (d: Buffer) => {
        out += d.toString();
      });
      const end = Date.now() + 30_000;
      while (!out.includes("serving on")) {
        if (child.exitCode !== null || Date.now() > end) throw new Error(`serve: ${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const exited = new Promise((r) => child.once("exit", r));
      return {
        base: `http://127.0.0.1:${port}`,
        stop: async () => {
          child.kill("SIGTERM");
          await exited;
        },
      };
    };
    const recall = async (base: string, mem: string) =>
      (await (
        await fetch(`${base}/v1/sessions/${session}/recall`, {
          method: "POST",
          headers,
          body: JSON.stringify({ mem_id: mem, json_path: "items[1499].name" }),
        })
      ).json()) as { is_error: boolean; content: string };
    let server = await start();
    let mem = "";
    try {
      const res = await fetch(`${server.base}/v1/sessions/${session}/compact?format=anthropic`, {
        method: "POST",
        headers: {
          ...headers,
          "x-offload-config": JSON.stringify({
            tool_result_compaction_enabled: true,
            tool_result_offload_enabled: true,
          }),
        },
        body: JSON.stringify(catalogTurn()),
      });
      expect(res.status).toBe(200);
      mem = /trm_[0-9a-f]{24}/.exec(await res.text())![0];
      expect((await recall(server.base, mem)).content).toContain("item-1499");
    } finally {
      await server.stop();
    }
    server = await start();
    try {
      const again = await recall(server.base, mem);
      expect(again.is_error).toBe(false);
      expect(again.content).toContain("item-1499");
    } finally {
      await server.stop();
    }
  });
});
