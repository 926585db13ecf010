/**
 * The package as a user gets it (test/support/packed.ts: `npm pack`, the tarball installed into a fresh
 * project), and what the README and docs promise there: the README's in-process snippet runs against a local
 * fake model, a core-only install needs none of the optional peers and type-checks against every entry with
 * `skipLibCheck: false`, every entry loads with `require()`, the session reference refuses the other shape,
 * tool rules and the session report work, the CLI runs without the optional `ai` package and refuses a file
 * without sessions, and the portable checks (test/portable/library.mjs) pass under Node, the machine's older
 * Node when CI names one, Deno and Bun. Outside CI a runtime that is not installed is skipped with a note
 * saying how to get it; in CI (.ci/run installs them) its absence fails.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import { fixture, OCR_TEXT } from "../fixtures/build.ts";
import { catalogTurn } from "../portable/catalog-turn.mjs";
import { env, npm, type Packed, packAndInstall, pkg, root } from "../support/packed.ts";
import { type RunningServer, type Started, startPostgres, startRedis } from "../support/servers.ts";

const CI = process.env.CI === "true";
const FIXTURES = ["table.csv", "page.html", "report.docx", "workbook.xlsx", "text.pdf"];

let packed: Packed | undefined;
let app = "";
let tarball = "";

function which(name: string): string | null {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const file = join(dir, name);
    if (dir !== "" && existsSync(file)) return file;
  }
  return null;
}

/** Runs a script file of the app with this Node (TypeScript stripped), its stdout and status. */
function run(file: string, extra: Record<string, string> = {}) {
  return spawnSync(process.execPath, [file], {
    cwd: app,
    env: { ...env, ...extra },
    encoding: "utf8",
  });
}

beforeAll(() => {
  packed = packAndInstall("pack");
  ({ app, tarball } = packed);
}, 240_000);

afterAll(() => {
  packed?.remove();
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

  it("runs the README's in-process snippet as written, against a local fake model", () => {
    packed!.link(["@anthropic-ai/sdk"]);
    cpSync(join(root, "examples", "fake-anthropic.mjs"), join(app, "fake-anthropic.mjs"));
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const snippet = /### 2\. In process[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(snippet).toContain('from "edge-offload"');
    // What the snippet leaves to its reader: the conversation and its tools, and where the SDK calls
    // (ANTHROPIC_BASE_URL, which the official client reads; a fake here).
    const turn = JSON.stringify(catalogTurn());
    const before = `import { startFakeAnthropic } from "./fake-anthropic.mjs";
const fake = await startFakeAnthropic();
process.env.ANTHROPIC_BASE_URL = fake.url;
process.env.ANTHROPIC_API_KEY = "sk-ant-fake";
const { messages, tools } = ${turn};
`;
    writeFileSync(join(app, "snippet.ts"), `${before}${snippet}await fake.close();\n`);
    const out = run("snippet.ts");
    expect(out.status, out.stderr).toBe(0);
    const lines = out.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^offloaded 1, saved \$0\.\d+$/);
    expect(lines[1]).toMatch(/^end_turn 0\.\d+ \[/);
  });

  it("type-checks against every entry without the optional peers, skipLibCheck false", () => {
    const entries = Object.keys(pkg.exports).filter(
      (k) => k !== "./package.json" && !["./ai-sdk", "./agents", "./hono"].includes(k),
    );
    const check = entries
      .map((k, i) => `import * as e${i} from "edge-offload${k.slice(1)}";\nvoid e${i};`)
      .join("\n");
    writeFileSync(
      join(app, "check.ts"),
      `${check}
import { compact, MemoryStore, type OffloadConfigLike, type ToolRule } from "edge-offload";
const rules: ToolRule[] = [{ tool: "web_*", offload: "never" }];
const config: OffloadConfigLike = { tool_result_compaction_enabled: true, tool_result_tool_rules: rules };
export const out = compact({ request: {}, session: { tenant: "t", session: "s" }, store: new MemoryStore(), config });
`,
    );
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "es2023",
          module: "nodenext",
          moduleResolution: "nodenext",
          lib: ["es2023", "dom"],
          types: [],
          strict: true,
          noEmit: true,
          skipLibCheck: false,
        },
        files: ["check.ts"],
      }),
    );
    const tsc = spawnSync(
      process.execPath,
      [join(root, "node_modules", "typescript", "bin", "tsc")],
      {
        cwd: app,
        encoding: "utf8",
      },
    );
    expect(tsc.stdout + tsc.stderr).toBe("");
    expect(tsc.status).toBe(0);
    // No public declaration names an optional peer the core-only install lacks.
    const dts = execFileSync("tar", ["tzf", tarball], { encoding: "utf8" })
      .split("\n")
      .filter((f) => f.endsWith(".d.ts"));
    const peers = new Set<string>();
    for (const f of dts) {
      const text = readFileSync(
        join(app, "node_modules", "edge-offload", f.slice("package/".length)),
        "utf8",
      );
      for (const [, mod] of text.matchAll(/^(?:import|export)[^\n]*from "([^".][^"]*)";$/gm))
        peers.add(mod!);
    }
    expect([...peers].sort()).toEqual(["@ai-sdk/provider", "hono", "zod"]);
  });

  it("refuses the other session shape, applies tool rules and reports the session, from the package", () => {
    writeFileSync(
      join(app, "session.mjs"),
      `import { compact, MemoryStore, sessionReport } from "edge-offload";
const store = new MemoryStore();
const turn = ${JSON.stringify(JSON.stringify(catalogTurn()))};
let refused = "";
try { await compact({ request: turn, session: { tenant: "t", id: "s" }, store, config: {} }); } catch (e) { refused = e.message; }
const config = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true, tool_result_tool_rules: [{ tool: "du*", offload: "never" }] };
const out = await compact({ request: turn, session: { tenant: "t", session: "s" }, store, config });
const report = await sessionReport({ store, session: { tenant: "t", session: "s" } });
console.log(JSON.stringify({ refused, reason: out.decisions[0].reason, rules: out.report.tool_rules, mode: report.mode }));
`,
    );
    const out = run("session.mjs");
    expect(out.status, out.stderr).toBe(0);
    const got = JSON.parse(out.stdout);
    expect(got.refused).toContain("{ tenant, session }");
    expect(got.reason).toBe("kept: tool rule `du*` says never");
    expect(got.rules[0]).toMatchObject({ tool: "du*", results: 1, kept: 1 });
    expect(got.mode).toBe("live");
  });

  it("loads every entry with require(), and says to use import() where a runtime cannot require ES modules", () => {
    const names = Object.keys(pkg.exports)
      .filter((k) => k !== "./package.json")
      .map((k) => `edge-offload${k.slice(1)}`)
      // These load their optional peers ("ai", "hono", "vitest"), which a core-only install lacks.
      .filter(
        (n) =>
          ![
            "edge-offload/ai-sdk",
            "edge-offload/agents",
            "edge-offload/hono",
            "edge-offload/contract",
          ].includes(n),
      );
    const script = `
      const names = ${JSON.stringify(names)};
      const loaded = Object.fromEntries(names.map((n) => [n, Object.keys(require(n)).length > 0]));
      const load = require("./node_modules/edge-offload/dist/cjs/load.cjs");
      const esm = Object.assign(new Error("require() of ES Module"), { code: "ERR_REQUIRE_ESM" });
      let message = "";
      try { load(() => { throw esm; }, "../integrations/fetch.js", "edge-offload/fetch"); } catch (e) { message = e.message; }
      console.log(JSON.stringify({ loaded, compact: typeof require("edge-offload").compact, message }));`;
    const out = spawnSync(process.execPath, ["-e", script], { cwd: app, env, encoding: "utf8" });
    expect(out.status, out.stderr).toBe(0);
    const got = JSON.parse(out.stdout);
    expect(got.loaded).toEqual(Object.fromEntries(names.map((n) => [n, true])));
    expect(got.compact).toBe("function");
    expect(got.message).toContain('use `await import("edge-offload/fetch")` from CommonJS');
    // Every entry has its require() shim, naming the entry it loads.
    for (const [key, entry] of Object.entries(
      pkg.exports as Record<string, { require?: string }>,
    )) {
      if (key === "./package.json") continue;
      const shim = readFileSync(join(app, "node_modules", "edge-offload", entry.require!), "utf8");
      expect(shim, key).toContain(`"edge-offload${key.slice(1)}"`);
    }
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
    writeFileSync(join(app, "empty.jsonl"), "");
    const empty = spawnSync(bin, ["replay", join(app, "empty.jsonl")], { env, encoding: "utf8" });
    expect(empty.status).toBe(2);
    expect(empty.stderr).toBe(
      `edge-offload: ${join(app, "empty.jsonl")}: no sessions (the file is empty); one {id, system, tools?, messages} per line, or one Anthropic request per line\n`,
    );
  });

  it("npm pack's tarball is ignored by git in a clone", () => {
    const ignored = spawnSync(
      "git",
      ["check-ignore", "-q", join(root, `edge-offload-${pkg.version}.tgz`)],
      {
        cwd: root,
      },
    );
    expect(ignored.status).toBe(0);
  });
});

/** The version of a dependency the lock file holds. */
function locked(name: string): string {
  const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as {
    packages: Record<string, { version: string }>;
  };
  return lock.packages[`node_modules/${name}`]!.version;
}

describe("the portable checks on every runtime the README names", { timeout: 60_000 }, () => {
  beforeAll(() => {
    // The peers the checks exercise (edge-offload/hono, PDF text), at the versions this repo develops with
    // (its lock file's): a range would take whatever the registry published last, and unpdf 1.9 and later
    // no longer load on Node 20 (docs/install.md).
    npm(["install", "--prefer-offline", `hono@${locked("hono")}`, `unpdf@${locked("unpdf")}`], app);
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
        `tesseract-wasm@${pkg.devDependencies["tesseract-wasm"]}`,
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

  it("`edge-offload serve` restarted on the same SQLite file answers the recalls it had, then with OCR on reads an image", async () => {
    const bin = join(app, "node_modules", ".bin", "edge-offload");
    const key = "sk-consumer-serve-0001";
    const vars = {
      ...env,
      OFFLOAD_API_KEYS: `c:${key}`,
      OFFLOAD_SECRET: "consumer-serve-secret-0123456789",
    };
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    const session = `served-${Date.now().toString(36)}`;
    const start = async (extra: Record<string, string> = {}) => {
      const { freePort } = await import("../support/servers.ts");
      const port = await freePort();
      const child = spawn(bin, ["serve", "--port", String(port), "--store", "sqlite:./served.db"], {
        cwd: app,
        env: { ...vars, ...extra },
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
        output: () => out,
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
      const compactOnce = (config?: object) =>
        fetch(`${server.base}/v1/sessions/${session}/compact?format=anthropic`, {
          method: "POST",
          headers: {
            ...headers,
            ...(config === undefined ? {} : { "x-offload-config": JSON.stringify(config) }),
          },
          body: JSON.stringify(catalogTurn()),
        });
      // No OFFLOAD_DEFAULT_CONFIG: the Worker's shipped layer, shadow (said at start). The call is decided,
      // sent as it came, and the summary says what it would save and the one line that goes live.
      expect(server.output()).toContain("sessions nobody configured run in shadow mode");
      const shadow = await compactOnce();
      expect(shadow.status).toBe(200);
      expect(await shadow.text()).toBe(JSON.stringify(catalogTurn()));
      const summary = JSON.parse(shadow.headers.get("x-offload-summary")!);
      expect(summary).toMatchObject({ enabled: true, shadow: true, saved_usd: 0 });
      expect(summary.would_save_usd).toBeGreaterThan(0);
      expect(summary.note).toContain('one line to go live: {"tool_result_offload_shadow":false}');
      const res = await compactOnce({ tool_result_offload_shadow: false });
      expect(res.status).toBe(200);
      mem = /trm_[0-9a-f]{24}/.exec(await res.text())![0];
      expect((await recall(server.base, mem)).content).toContain("item-1499");
    } finally {
      await server.stop();
    }
    // Restarted with OCR on: the engine is the app's tesseract-wasm (an optional peer), the English model
    // the directory @tesseract.js-data/eng ships it in (docs/attachments.md).
    server = await start({
      OFFLOAD_OCR: "on",
      OFFLOAD_OCR_MODEL_DIR: join(root, "node_modules/@tesseract.js-data/eng/4.0.0_best_int"),
    });
    try {
      const again = await recall(server.base, mem);
      expect(again.is_error).toBe(false);
      expect(again.content).toContain("item-1499");
      const image = fixture("ocr-text.png");
      const read = await fetch(`${server.base}/v1/extract?ocr=true`, {
        method: "POST",
        headers: { ...headers, "content-type": image.media_type },
        body: image.build() as Uint8Array<ArrayBuffer>,
      });
      expect(read.status).toBe(200);
      expect(((await read.json()) as { text: string }).text).toContain(
        OCR_TEXT["ocr-text.png"]![3],
      );
    } finally {
      await server.stop();
    }
  });
});
