/**
 * Claude Code and Codex CLI, installed from the registry (test/agents/agents.ts), run non-interactively
 * against the Worker (wrangler's unstable_startWorker on 127.0.0.1) whose provider base URLs point at a
 * scripted fake model (test/agents/fake-model.ts). Compaction and offload are on and the recall tool is
 * declared eagerly; each agent runs on its default model. The task: read a large result, read a small one
 * (the large one is now settled, so it reaches the model as a stub), have the model read a line back through
 * recall_tool_result (the proxy answers it in a hop), fail that hop (the agent's own retry recovers), then
 * continue the session (the stub's bytes identical). Both agents must finish, print the price only the
 * recall answer held, and never see our tool or a stub: not in their output, not in their own transcripts.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RECALL_NAME } from "../support/providers.ts";
import { type LocalWorker, startProxyWorker } from "../support/worker.ts";
import { type Agents, describeRun, ensureAgents, type RunResult, run } from "./agents.ts";
import {
  ASKED,
  ASKED_PRICE,
  catalogText,
  FakeModel,
  FOLLOW_UP,
  type Received,
} from "./fake-model.ts";

const KEY = "sk-offload-agents-test";
const RUN_TIMEOUT_MS = 90_000;
/** The deployment's config: compaction and offload on, the recall tool declared with the first turn. */
const CONFIG = {
  tool_result_compaction_enabled: true,
  tool_result_offload_enabled: true,
  tool_result_recall_tool_declaration: "eager",
};
/**
 * Codex caps a tool's output near 48,000 chars (head and tail around "…N tokens truncated…"), under the
 * default 60,000-char large tier: its session lowers the tier with the per-call config header.
 */
const CODEX_LAYER = { tool_result_large_offload_threshold_chars: 20_000 };
const TASK = `Read catalog.txt, then notes.txt, and tell me the price of item-${ASKED}.`;

const fake = new FakeModel();
let worker: LocalWorker | undefined;
let agents: Agents;
let scratch = "";

beforeAll(async () => {
  agents = ensureAgents((line) => console.log(`[agents] ${line}`));
  worker = await startProxyWorker({
    provider: await fake.start(),
    vars: { OFFLOAD_DEFAULT_CONFIG: JSON.stringify(CONFIG) },
    secrets: { OFFLOAD_API_KEYS: `agents:${KEY}`, OFFLOAD_SECRET: "agents-test-secret-0123456789" },
  });
  scratch = mkdtempSync(join(tmpdir(), "edge-offload-agents-"));
});

afterAll(async () => {
  await worker?.dispose();
  await fake.stop();
  if (scratch !== "") rmSync(scratch, { recursive: true, force: true });
});

/** A fresh home and work folder for one agent's session. */
function workspace(name: string): { home: string; work: string } {
  const home = join(scratch, name, "home");
  const work = join(scratch, name, "work");
  mkdirSync(home, { recursive: true });
  mkdirSync(work, { recursive: true });
  writeFileSync(join(work, "catalog.txt"), `${catalogText()}\n`);
  writeFileSync(join(work, "notes.txt"), "notes: prices are in USD\n");
  return { home, work };
}

/** Requests outside the task's conversation: token counts (Claude Code counts a large Read), model lists. */
const SIDE = new Set(["count_tokens", "models", "side"]);

/** The task's requests (those of the conversation), in order. */
function conversation(list: readonly Received[]): Received[] {
  return list.filter((r) => !SIDE.has(r.phase));
}

function phases(list: readonly Received[]): string[] {
  return conversation(list).map((r) => r.phase);
}

function explain(name: string, r: RunResult, from: number): string {
  return `${describeRun(name, r)}\n--- the fake model saw: ${phases(fake.since(from)).join(", ")}`;
}

/** Files under `dir` whose text contains `needle` (an agent's config, logs and transcripts). */
function filesContaining(dir: string, needle: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .filter((path) => readFileSync(path, "latin1").includes(needle));
}

/** The session's record on the Worker (GET /v1/sessions/{id}). */
async function sessionTotals(id: string): Promise<Record<string, number>> {
  const res = await fetch(`${worker!.base}/v1/sessions/${id}`, {
    headers: { authorization: `Bearer ${KEY}` },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { totals: Record<string, number> }).totals;
}

/** The assertions both agents share, on what the fake model received during one task and its follow-up. */
function expectTask(input: {
  task: readonly Received[];
  followUp: readonly Received[];
  /** The large result's content as the model saw it (the stub), in a request. */
  stubOf: (r: Received) => string | undefined;
  /** Whether a request's history holds a call to our tool (the agent must never send one). */
  callsOurTool: (r: Received) => boolean;
  credential: (r: Received) => string | undefined;
  expectedCredential: string;
}): void {
  const { task, followUp } = input;
  const seen = phases(task);
  // The script ran through: the stub reached the model, a failed hop was retried, the answer came from recall.
  expect(seen.slice(0, 3)).toEqual(["catalog", "notes", "recall"]);
  expect(seen).toContain("fail:answer");
  expect(seen[seen.length - 1]).toBe("answer");
  expect(phases(followUp)).toEqual(["follow-up"]);
  expect(fake.pendingFailures()).toEqual([]);
  for (const r of [...task, ...followUp]) {
    expect(Object.keys(r.headers).filter((h) => h.startsWith("x-offload-"))).toEqual([]);
    expect(input.credential(r)).toBe(input.expectedCredential);
  }
  // The agent never sent our tool's calls back: every call to it in a request came from the proxy's hop.
  const hops = task.filter((r) => r.phase === "answer" || r.phase === "fail:answer");
  for (const r of [...task, ...followUp].filter((r) => !hops.includes(r)))
    expect(input.callsOurTool(r), r.phase).toBe(false);
  // The stub: the same bytes on every request that carries it, the continued session included.
  const stubs = conversation([...task, ...followUp]).filter(
    (r) => r.phase !== "catalog" && r.phase !== "notes",
  );
  const first = input.stubOf(stubs[0]!);
  // Stubbed on the call it arrives (first delivery, the default) or once settled.
  expect(first).toMatch(
    /^\[tool result offloaded (on arrival )?by edge-offload · mem_id trm_[0-9a-f]{24}\]/,
  );
  for (const r of stubs) expect(input.stubOf(r), r.phase).toBe(first);
}

describe("Claude Code through the proxy", () => {
  it("finishes a task with a large result, a recall hop, failed hops and a continued session", async () => {
    const { home, work } = workspace("claude");
    const session = `claude-${Date.now().toString(36)}`;
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      CLAUDE_CONFIG_DIR: join(home, ".claude"),
      ANTHROPIC_BASE_URL: `${worker!.base}/anthropic`,
      ANTHROPIC_API_KEY: "sk-ant-fake-credential",
      ANTHROPIC_CUSTOM_HEADERS: `x-offload-key: ${KEY}\nx-offload-session: ${session}`,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1",
    };
    const claude = (args: string[]) =>
      run(agents.claude, ["-p", ...args, "--output-format", "json", "--allowedTools", "Read"], {
        cwd: work,
        env,
        timeoutMs: RUN_TIMEOUT_MS,
      });

    // The hop fails twice: in the stream (Claude Code falls back to a non-streamed call), then in the
    // buffered hop (Claude Code's SDK retries the call).
    fake.failOnce({ phase: "answer", status: 500 });
    fake.failOnce({ phase: "answer", status: 500 });
    const from = fake.received.length;
    const first = await claude([TASK]);
    expect(first.code, explain("claude", first, from)).toBe(0);
    const task = fake.since(from);
    const result = JSON.parse(first.stdout) as { result: string; is_error: boolean };
    expect(result.is_error).toBe(false);
    expect(result.result).toContain(`item-${ASKED} costs ${ASKED_PRICE}`);

    const next = fake.received.length;
    const second = await claude(["--continue", FOLLOW_UP]);
    expect(second.code, explain("claude --continue", second, next)).toBe(0);
    expect((JSON.parse(second.stdout) as { result: string }).result).toBe("done");

    const blocks = (r: Received): any[] =>
      (r.json.messages as any[]).flatMap((m) => (Array.isArray(m.content) ? m.content : []));
    expectTask({
      task,
      followUp: fake.since(next),
      stubOf: (r) => {
        const block = blocks(r).find((b) => String(b.tool_use_id).includes("_catalog_"));
        return typeof block?.content === "string" ? block.content : undefined;
      },
      callsOurTool: (r) =>
        blocks(r).some((b) => b.type === "tool_use" && b.name === RECALL_NAME) ||
        blocks(r).some((b) => String(b.tool_use_id).includes("_recall_")),
      credential: (r) => r.headers["x-api-key"] as string | undefined,
      expectedCredential: "sk-ant-fake-credential",
    });
    // Streamed first, then the non-streamed fallback after the failed streamed hop.
    expect(task.filter((r) => r.json.stream === true).map((r) => r.phase)).toContain("recall");
    expect(task.filter((r) => r.json.stream !== true).map((r) => r.phase)).toContain("answer");
    expect(filesContaining(home, RECALL_NAME)).toEqual([]);
    expect(filesContaining(home, "trm_")).toEqual([]);
    expect(first.stdout + second.stdout).not.toContain(RECALL_NAME);
    expect((await sessionTotals(session)).proxy_hops).toBeGreaterThanOrEqual(1);
  });
});

describe("Codex CLI through the proxy", () => {
  it("finishes a task with a large result, a recall hop, a failed hop and a resumed session", async () => {
    const { home, work } = workspace("codex");
    const session = `codex-${Date.now().toString(36)}`;
    const codexHome = join(home, ".codex");
    mkdirSync(codexHome, { recursive: true });
    writeFileSync(
      join(codexHome, "config.toml"),
      [
        `model_provider = "edge-offload"`,
        ``,
        `[model_providers.edge-offload]`,
        `name = "edge-offload"`,
        `base_url = "${worker!.base}/openai/v1"`,
        `wire_api = "responses"`,
        `env_key = "OPENAI_API_KEY"`,
        `http_headers = { "x-offload-key" = "${KEY}", "x-offload-session" = "${session}", "x-offload-config" = '${JSON.stringify(CODEX_LAYER)}' }`,
        ``,
      ].join("\n"),
    );
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      CODEX_HOME: codexHome,
      OPENAI_API_KEY: "sk-openai-fake-credential",
    };
    const codex = (args: string[]) =>
      run(process.execPath, [agents.codex, "exec", "--skip-git-repo-check", ...args], {
        cwd: work,
        env,
        timeoutMs: RUN_TIMEOUT_MS,
      });

    // The streamed hop fails: the stream ends with the provider's error event, and Codex reconnects.
    fake.failOnce({ phase: "answer", status: 500 });
    const from = fake.received.length;
    const first = await codex([TASK]);
    expect(first.code, explain("codex", first, from)).toBe(0);
    expect(first.stdout).toContain(`item-${ASKED} costs ${ASKED_PRICE}`);
    const task = fake.since(from);

    const next = fake.received.length;
    const second = await codex(["resume", "--last", FOLLOW_UP]);
    expect(second.code, explain("codex exec resume", second, next)).toBe(0);
    expect(second.stdout.trim()).toBe("done");

    const items = (r: Received): any[] => (Array.isArray(r.json.input) ? r.json.input : []);
    expectTask({
      task,
      followUp: fake.since(next),
      stubOf: (r) => {
        const out = items(r).find(
          (i) => i.type === "custom_tool_call_output" && String(i.call_id).includes("_catalog_"),
        )?.output;
        const texts = Array.isArray(out) ? out.map((p: any) => p.text ?? "") : [out];
        return texts.find((t: unknown) => typeof t === "string" && t.startsWith("[tool result"));
      },
      callsOurTool: (r) =>
        items(r).some(
          (i) =>
            (i.type === "function_call" && i.name === RECALL_NAME) ||
            String(i.call_id ?? "").includes("_recall_"),
        ),
      credential: (r) => r.headers.authorization as string | undefined,
      expectedCredential: "Bearer sk-openai-fake-credential",
    });
    expect(task.every((r) => r.json.stream === true && r.json.store === false)).toBe(true);
    expect(filesContaining(home, RECALL_NAME)).toEqual([]);
    expect(filesContaining(home, "trm_")).toEqual([]);
    expect(first.stdout + second.stdout).not.toContain(RECALL_NAME);
    expect((await sessionTotals(session)).proxy_hops).toBeGreaterThanOrEqual(1);
  });
});
