/**
 * The README's promises against `npm start` itself (the shipped wrangler.toml, its shadow default), its
 * Anthropic upstream pointed at the examples' local fake model:
 * - the quick start: `npm run try` prints what the README says it prints (modulo the port and mem_ids);
 * - the proxy snippet, pasted as is (the port aside): its summary shows the call's decision;
 * - the compact-route snippet: the request to send instead, and a recall.
 */
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeAnthropic } from "../../examples/fake-anthropic.mjs";
import { catalogTurn } from "../portable/catalog-turn.mjs";
import { type DevServer, freePort, npmStart } from "./dev-server.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const readme = readFileSync(join(root, "README.md"), "utf8");
const ARTIFACTS = join(root, "test", ".artifacts", "readme");
const KEY = "sk-local-dev-key-1234";

let server: DevServer | undefined;
let fake: Awaited<ReturnType<typeof startFakeAnthropic>> | undefined;
let port = 0;

beforeAll(async () => {
  fake = await startFakeAnthropic();
  port = await freePort();
  server = await npmStart(["--port", String(port), "--var", `ANTHROPIC_BASE_URL:${fake.url}`]);
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await fake?.close();
});

/** A command's output (not spawnSync: the fake model answers from this process). */
function run(
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: root,
      env: { ...process.env, NO_COLOR: "1", ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

/** The first fenced block of `fence` after `heading` in the README. */
function block(heading: string, fence: string): string {
  const at = readme.indexOf(heading);
  expect(at, heading).toBeGreaterThanOrEqual(0);
  const start = readme.indexOf(`\`\`\`${fence}\n`, at) + fence.length + 4;
  return readme.slice(start, readme.indexOf("```", start));
}

/** Runs a TypeScript snippet of the README, with `before` and `after` around it, from inside the repo. */
function snippet(name: string, before: string, code: string, after: string) {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = join(ARTIFACTS, `${name}.ts`);
  writeFileSync(
    file,
    `${before}\n${code.replaceAll("127.0.0.1:8787", `127.0.0.1:${port}`)}\n${after}\n`,
  );
  return run(process.execPath, [file], { ANTHROPIC_API_KEY: "sk-ant-fake" });
}

const normal = (text: string) =>
  text.replace(/127\.0\.0\.1:\d+/g, "127.0.0.1:PORT").replace(/trm_[0-9a-f]{24}/g, "trm_ID");

describe("the README against npm start", { timeout: 120_000 }, () => {
  it("the quick start prints what the README shows", async () => {
    const commands = block("## Quick start", "sh");
    expect(commands).toMatch(/^npm ci && npm start .*\nnpm run try /);
    const out = await run("npm", ["run", "try", "--silent"], { PORT: String(port) });
    expect(out.status, out.stderr).toBe(0);
    expect(normal(out.stdout)).toBe(normal(block("What `npm run try` prints", "text")));
  });

  it("the proxy snippet, pasted as is, shows the call's decision in its summary", async () => {
    const out = await snippet("proxy", "", block("### 1. The proxy", "ts"), "");
    expect(out.status, out.stderr).toBe(0);
    const summary = JSON.parse(out.stdout);
    // The shipped default: shadow. Decided, would save, the request went out unchanged.
    expect(summary).toMatchObject({
      enabled: true,
      shadow: true,
      results: 2,
      offloaded: 1,
      saved_usd: 0,
      changed: false,
      proxy: { stream: false, hops: 0 },
    });
    expect(summary.would_save_usd).toBeGreaterThan(0);
    expect(summary.note).toContain('one line to go live: {"tool_result_offload_shadow":false}');
    const sent = fake!.requests.at(-1)!;
    expect(JSON.stringify(sent)).toContain("item-1499");
  });

  it("the compact-route snippet returns the request to send and answers a recall", async () => {
    // Live for this session (the one line), so the request to send holds a stub the model can recall.
    const live = await fetch(`http://127.0.0.1:${port}/v1/sessions/chat-42/config`, {
      method: "PUT",
      headers: { authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ tool_result_offload_shadow: false }),
    });
    expect(live.status).toBe(200);
    const before = `const rawRequestText = ${JSON.stringify(JSON.stringify(catalogTurn()))};
const toolUse = {
  get input() {
    return { mem_id: /trm_[0-9a-f]{24}/.exec(toSend)?.[0], json_path: "items[1499]" };
  },
};`;
    const after = "console.log(JSON.stringify({ sent: toSend.length, content, is_error }));";
    const out = await snippet(
      "compact-route",
      before,
      block("### 3. The compact route", "ts"),
      after,
    );
    expect(out.status, out.stderr).toBe(0);
    const [summaryLine, resultLine] = out.stdout.trim().split("\n");
    expect(JSON.parse(summaryLine!)).toMatchObject({ shadow: false, offloaded: 1, changed: true });
    const result = JSON.parse(resultLine!);
    expect(result.is_error).toBe(false);
    expect(result.sent).toBeLessThan(JSON.stringify(catalogTurn()).length / 10);
    expect(result.content).toContain('"name": "item-1499"');
  });
});
