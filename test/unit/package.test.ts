/**
 * The published shape: `npm run build` emits ESM + .d.ts for every entry of the package's `exports`, plain
 * Node (no workerd, no TypeScript) imports the public API and each subpath by the package's name and runs a
 * turn with it, and every public function and class an entry exports has a doc comment of its own (what an
 * editor's hover shows).
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
type Entry = { types: string; import: string; require?: string };
const entries = Object.entries(pkg.exports as Record<string, Entry | string>).filter(
  (e): e is [string, Entry] => typeof e[1] === "object",
);

/** Runs an ES module script with plain Node in the repo, where the package imports itself by name. */
function node(script: string): unknown {
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    cwd: root,
    encoding: "utf8",
  });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout);
}

beforeAll(() => {
  const build = spawnSync("npm", ["run", "build", "--silent"], { cwd: root, encoding: "utf8" });
  expect(build.status, build.stderr + build.stdout).toBe(0);
}, 120_000);

describe("package", { timeout: 60_000 }, () => {
  it("builds every entry of `exports` to its declared types and module files", () => {
    expect(entries.map(([name]) => name).sort()).toEqual(
      [
        ".",
        "./agents",
        "./ai-sdk",
        "./contract",
        "./eval",
        "./extract",
        "./fetch",
        "./hono",
        "./postgres",
        "./pricing",
        "./redis",
        "./replay",
        "./sqlite",
        "./store",
        "./toolkit",
      ].sort(),
    );
    for (const [name, entry] of entries) {
      for (const file of [entry.types, entry.import, entry.require]) {
        if (file !== undefined) expect(existsSync(join(root, file)), `${name}: ${file}`).toBe(true);
      }
    }
    expect(readFileSync(join(root, "dist/lib.d.ts"), "utf8")).toContain("compact");
  });

  it("plain Node imports the public API by name", () => {
    const out = node(`
      import { compact, recall, recallToolDefinition, MemoryStore, OffloadConfigSchema } from "edge-offload";
      import { offloadGate } from "edge-offload/pricing";
      const store = new MemoryStore();
      const body = "x".repeat(70000);
      const request = JSON.stringify({ model: "claude-opus-4-5", messages: [
        { role: "user", content: "go" },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "dump", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: body }] },
        { role: "assistant", content: [{ type: "tool_use", id: "t2", name: "dump", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t2", content: "ok" }] } ] });
      const out = await compact({ format: "anthropic", request, session: "s", store, config: { tool_result_compaction_enabled: true, tool_result_offload_enabled: true } });
      const memId = out.decisions[0].mem_id;
      const back = await recall({ store, session: "s", mem_id: memId, offset: 0, max_chars: 10 });
      console.log(JSON.stringify({
        action: out.decisions[0].action, back: back.content.split("\\n")[1],
        gate: offloadGate({ model: "claude-opus-4-5", result_tokens: 321000, stub_tokens: 300, horizon: 5, recall_probability: 0.5, cached_side: false, context_tokens: 9000 }).fire,
        tool: recallToolDefinition("anthropic").name, defaults: OffloadConfigSchema.parse({}).tool_result_large_offload_threshold_chars,
      }));`);
    expect(out).toEqual({
      action: "offloaded",
      back: "xxxxxxxxxx",
      gate: true,
      tool: "recall_tool_result",
      defaults: 60000,
    });
  });

  it("plain Node imports each subpath entry by name", () => {
    const out = node(`
      const kinds = (m, names) => Object.fromEntries(names.map((n) => [n, typeof m[n]]));
      console.log(JSON.stringify({
        fetch: kinds(await import("edge-offload/fetch"), ["offloadFetch", "dialectOf"]),
        aiSdk: kinds(await import("edge-offload/ai-sdk"), ["offloadMiddleware"]),
        agents: kinds(await import("edge-offload/agents"), ["AgentStore", "offloadMiddleware"]),
        hono: kinds(await import("edge-offload/hono"), ["toolRoutes", "queryArguments"]),
        sqlite: kinds(await import("edge-offload/sqlite"), ["SqliteStore"]),
        postgres: kinds(await import("edge-offload/postgres"), ["PostgresStore", "postgresSql"]),
        redis: kinds(await import("edge-offload/redis"), ["RedisStore", "RedisSessionState"]),
        contract: kinds(await import("edge-offload/contract"), ["runStoreContract", "runSessionStateContract"]),
        eval: kinds(await import("edge-offload/eval"), ["evaluate", "planEval", "fileLog", "renderTable"]),
        extract: kinds(await import("edge-offload/extract"), ["extractText", "tesseractEngine"]),
        toolkit: kinds(await import("edge-offload/toolkit"), ["definePagedTool", "previewOf"]),
        pricing: kinds(await import("edge-offload/pricing"), ["offloadGate", "resolveModel"]),
        store: kinds(await import("edge-offload/store"), ["ComposedStore", "SqlSessionState", "syncSqliteSql", "sessionRef"]),
        replay: kinds(await import("edge-offload/replay"), ["replay", "parseSessions", "renderTable"]),
        root: Object.keys(await import("edge-offload")).length,
      }));`);
    expect(out).toEqual({
      fetch: { offloadFetch: "function", dialectOf: "function" },
      aiSdk: { offloadMiddleware: "function" },
      agents: { AgentStore: "function", offloadMiddleware: "function" },
      hono: { toolRoutes: "function", queryArguments: "function" },
      store: {
        ComposedStore: "function",
        SqlSessionState: "function",
        syncSqliteSql: "function",
        sessionRef: "function",
      },
      sqlite: { SqliteStore: "function" },
      postgres: { PostgresStore: "function", postgresSql: "function" },
      redis: { RedisStore: "function", RedisSessionState: "function" },
      contract: { runStoreContract: "function", runSessionStateContract: "function" },
      eval: {
        evaluate: "function",
        planEval: "function",
        fileLog: "function",
        renderTable: "function",
      },
      extract: { extractText: "function", tesseractEngine: "function" },
      toolkit: { definePagedTool: "function", previewOf: "function" },
      pricing: { offloadGate: "function", resolveModel: "function" },
      replay: { replay: "function", parseSessions: "function", renderTable: "function" },
      // The root reads like an API: the core, the stores, config, errors, the integrations (was 76).
      root: 19,
    });
  });

  it("documents every public function and class at its definition", () => {
    const undocumented: string[] = [];
    for (const [name, entry] of entries)
      for (const exported of exportedValues(join(root, entry.types))) {
        const found = declarationOf(join(root, entry.types), exported);
        expect(found, `${name}: ${exported}`).not.toBeNull();
        if (found !== null && !found.documented)
          undocumented.push(`${name}: ${exported} (${relative(root, found.file)})`);
      }
    expect(undocumented).toEqual([]);
  });
});

const DECLARED = /^export declare (?:abstract )?(?:function|class|const) (\w+)/gm;
const RE_EXPORT = /^export \{([^}]*)\} from "([^"]+)";/gm;

/** The value names a .d.ts exports (declared in it or re-exported), type-only ones left out. */
function exportedValues(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const names = [...text.matchAll(DECLARED)].map((m) => m[1]!);
  for (const [, list] of text.matchAll(RE_EXPORT))
    for (const part of list!.split(",").map((p) => p.trim()))
      if (part !== "" && !part.startsWith("type ")) names.push(part.split(/\s+as\s+/).pop()!);
  return names;
}

/**
 * Where `name` is declared, following re-exports, and whether a doc comment sits right above it (constants
 * are data, not functions: they pass).
 */
function declarationOf(file: string, name: string): { file: string; documented: boolean } | null {
  const text = readFileSync(file, "utf8");
  const lines = text.split("\n");
  const at = lines.findIndex((l) =>
    new RegExp(`^export declare (?:abstract )?(?:function|class|const) ${name}\\b`).test(l),
  );
  if (at !== -1)
    return {
      file,
      documented:
        lines[at]!.startsWith("export declare const") || /\*\/\s*$/.test(lines[at - 1] ?? ""),
    };
  for (const [, list, from] of text.matchAll(RE_EXPORT))
    for (const part of list!.split(",").map((p) => p.trim())) {
      const [original, alias] = part.split(/\s+as\s+/);
      if (!original!.startsWith("type ") && (alias ?? original) === name)
        return declarationOf(
          join(dirname(file), from!.replace(/\.(?:ts|js)$/, ".d.ts")),
          original!,
        );
    }
  return null;
}
