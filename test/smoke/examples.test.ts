/**
 * Every example as its README says to run it, from a project outside the repository where `edge-offload` is
 * the packed package (test/support/packed.ts) and the examples' other dependencies are installed beside it:
 * each README's "Run it" command, its output compared with the output the README shows (ports aside). The
 * agent-chat command starts a fake model, the agent under `wrangler dev` and the WebSocket client.
 */
import { spawn } from "node:child_process";
import { cpSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { env, type Packed, packAndInstall, root } from "../support/packed.ts";

/** What the examples import besides edge-offload (and zod, its dependency). */
const DEPENDENCIES = [
  "@anthropic-ai/sdk",
  "hono",
  "wrangler",
  "agents",
  "@cloudflare/ai-chat",
  "ai",
  "@ai-sdk/anthropic",
];

const examples = readdirSync(join(root, "examples")).filter((name) =>
  statSync(join(root, "examples", name)).isDirectory(),
);

let packed: Packed | undefined;

beforeAll(() => {
  packed = packAndInstall("examples");
  packed.link(DEPENDENCIES);
  cpSync(join(root, "examples"), join(packed.app, "examples"), {
    recursive: true,
    filter: (src) => !/[/\\](?:node_modules|\.wrangler|\.dev\.vars)$/.test(src),
  });
}, 300_000);

afterAll(() => {
  packed?.remove();
});

/** The README's "Run it": its command, and the output it shows (the first text block after it). */
function runIt(name: string): { command: string; shown: string } {
  const readme = readFileSync(join(root, "examples", name, "README.md"), "utf8");
  const at = readme.indexOf("## Run it");
  expect(at, `examples/${name}/README.md has a "Run it" section`).toBeGreaterThanOrEqual(0);
  const sh = /```sh\n([^\n]+)\n/.exec(readme.slice(at));
  const text = /```text\n([\s\S]*?)```/.exec(readme.slice(at));
  return { command: sh![1]!, shown: text![1]! };
}

function sh(command: string, cwd: string): Promise<{ status: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn("sh", ["-c", command], {
      cwd,
      env: { ...env, NO_COLOR: "1", ANTHROPIC_API_KEY: "" },
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("close", (status) => resolve({ status, out }));
  });
}

const normal = (text: string) => text.replace(/127\.0\.0\.1:\d+/g, "127.0.0.1:PORT").trim();

describe("the examples, run as their READMEs say", { timeout: 240_000 }, () => {
  it("finds the examples, each with a README", () => {
    expect(examples.sort()).toEqual(["agent-chat", "catalog", "in-process"]);
  });

  for (const name of examples)
    it(name, async () => {
      const { command, shown } = runIt(name);
      expect(command).toMatch(new RegExp(`^node examples/${name}/`));
      const { status, out } = await sh(command, packed!.app);
      expect(status, out).toBe(0);
      expect(normal(out)).toBe(normal(shown));
      // The example imported the package as a user's project does, not the repository's sources.
      const source = readdirSync(join(root, "examples", name), { recursive: true })
        .map(String)
        .filter((f) => /\.(ts|mjs)$/.test(f) && !/(^|[/\\])(\.wrangler|node_modules)[/\\]/.test(f))
        .map((f) => readFileSync(join(root, "examples", name, f), "utf8"))
        .join("\n");
      expect(source).not.toMatch(/from "(\.\.\/)+src\//);
      expect(source).toMatch(/from "edge-offload(\/[a-z-]+)?"/);
    });
});
