/**
 * Records the requests Claude Code and Codex CLI really send, against the scripted fake model (no Worker: the
 * agents' own bytes), and saves them as synthetic traces (test/support/agent-traces.ts describes the format):
 *
 *   npm run record:agent-traces            # writes test/fixtures/agent-traces/{claude-code,codex}.json
 *
 * The session each agent plays: a long shell output (a 2,500-line build log, ~150 KB), a large file (83 KB),
 * a medium one (20 KB), a small shell output, a search with a medium output (Claude Code) and a small file;
 * then the session is continued with a follow-up that reads the large file again. What the agents do with
 * these outputs (their own caps, previews, truncation) is in the recorded results.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AgentTrace,
  compress,
  type TraceRequest,
  traceStats,
} from "../support/agent-traces.ts";
import { AGENT_VERSIONS, describeRun, ensureAgents, run } from "./agents.ts";
import { catalogText, type Decision, FakeModel, FOLLOW_UP, type Turn } from "./fake-model.ts";

const BUILD_LOG = `seq -f "build step %g: compiling a module with a fairly long log line" 1 2500`;
const MEDIUM = Array.from({ length: 400 }, (_, i) => `config.${i} = "value number ${i}"`).join(
  "\n",
);
const NOTES = "notes: prices are in USD";

type Step = { purpose: string; name: string; input: Record<string, unknown> | string };

/** Codex's `exec` runs JavaScript; its shell is the nested `exec_command` tool. */
const shell = (cmd: string) =>
  `const r = await tools.exec_command({ cmd: ${JSON.stringify(cmd)} }); text(r.output);`;
const print = (text: string) => `text(${JSON.stringify(text)});`;

/** The session per API: the first run's steps, then the continued run's. */
function plan(t: Turn): [Step[], Step[]] {
  const dir = t.workdir ?? ".";
  if (t.api === "anthropic")
    return [
      [
        { purpose: "bash_log", name: "Bash", input: { command: BUILD_LOG } },
        { purpose: "read_large", name: "Read", input: { file_path: `${dir}/catalog.txt` } },
        { purpose: "read_medium", name: "Read", input: { file_path: `${dir}/medium.txt` } },
        { purpose: "bash_small", name: "Bash", input: { command: "ls -la" } },
        { purpose: "bash_grep", name: "Bash", input: { command: 'grep -n "item-1" catalog.txt' } },
        { purpose: "read_small", name: "Read", input: { file_path: `${dir}/notes.txt` } },
      ],
      [{ purpose: "read_large", name: "Read", input: { file_path: `${dir}/catalog.txt` } }],
    ];
  return [
    [
      { purpose: "shell_log", name: "exec", input: shell(BUILD_LOG) },
      {
        purpose: "print_large",
        name: "exec",
        input: `// @exec: {"max_output_tokens": 40000}\n${print(catalogText())}`,
      },
      { purpose: "print_medium", name: "exec", input: print(MEDIUM) },
      { purpose: "shell_small", name: "exec", input: shell("ls -la") },
      { purpose: "print_small", name: "exec", input: print(NOTES) },
    ],
    [{ purpose: "shell_large", name: "exec", input: shell("cat catalog.txt") }],
  ];
}

/** The model of the recorded session: the plan's next step, or a closing text when the run is done. */
function session(t: Turn): Decision {
  if (!t.tools.includes(t.api === "anthropic" ? "Bash" : "exec"))
    return { phase: "side", text: "ok" };
  const [first, second] = plan(t);
  const continued = t.body.includes(FOLLOW_UP);
  const steps = continued ? second : first;
  const at = t.results - (continued ? first.length : 0);
  const step = steps[at];
  if (step === undefined) return { phase: "final", text: continued ? "done again" : "done" };
  return { phase: step.purpose, call: step };
}

async function record(): Promise<void> {
  const agents = ensureAgents((line) => console.log(line));
  const scratch = mkdtempSync(join(tmpdir(), "edge-offload-traces-"));
  const fake = new FakeModel(session);
  const provider = await fake.start();
  const out = new URL("../fixtures/agent-traces/", import.meta.url);
  mkdirSync(out, { recursive: true });
  try {
    for (const agent of ["claude-code", "codex"] as const) {
      const home = join(scratch, agent, "home");
      const work = join(scratch, agent, "work");
      mkdirSync(home, { recursive: true });
      mkdirSync(work, { recursive: true });
      writeFileSync(join(work, "catalog.txt"), `${catalogText()}\n`);
      writeFileSync(join(work, "medium.txt"), `${MEDIUM}\n`);
      writeFileSync(join(work, "notes.txt"), `${NOTES}\n`);
      const from = fake.received.length;
      const runs =
        agent === "claude-code"
          ? claudeRuns(agents.claude, provider, home)
          : codexRuns(agents.codex, provider, home);
      for (const args of runs.args) {
        const r = await run(runs.command, args, { cwd: work, env: runs.env, timeoutMs: 120_000 });
        if (r.code !== 0) throw new Error(describeRun(agent, r));
      }
      const received = fake.since(from);
      const format = agent === "claude-code" ? "anthropic" : "openai-responses";
      const bodies = compress(received.map((r) => r.json));
      const requests: TraceRequest[] = received.map((r, i) => ({
        method: r.method,
        path: r.path.replace(/^\/(anthropic|openai)/, ""),
        phase: r.phase,
        headers: Object.fromEntries(
          ["anthropic-beta", "anthropic-version", "user-agent", "originator"]
            .filter((h) => typeof r.headers[h] === "string")
            .map((h) => [h, r.headers[h] as string]),
        ),
        stats: traceStats(format, r.body),
        body: bodies[i],
      }));
      const trace: AgentTrace = {
        agent,
        version:
          AGENT_VERSIONS[agent === "claude-code" ? "@anthropic-ai/claude-code" : "@openai/codex"],
        format,
        default_model: String(received.find((r) => r.json.model !== undefined)?.json.model),
        recorded:
          "npm run record:agent-traces: the agent against test/agents/fake-model.ts playing test/agents/record-traces.ts",
        notes: runs.notes,
        requests,
      };
      writeFileSync(new URL(`${agent}.json`, out), traceJson(trace));
      console.log(`${agent}: ${requests.length} requests, phases ${requests.map((r) => r.phase)}`);
    }
  } finally {
    await fake.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The trace as JSON with one request per line (diffs of a re-recording stay readable). */
function traceJson(trace: AgentTrace): string {
  const { requests, ...head } = trace;
  const lines = requests.map((r) => JSON.stringify(r));
  return `${JSON.stringify(head, null, 1).replace(/\n}$/, "")},\n "requests": [\n${lines.join(",\n")}\n ]\n}\n`;
}

interface Runs {
  command: string;
  args: string[][];
  env: Record<string, string>;
  notes: string[];
}

function claudeRuns(claude: string, provider: string, home: string): Runs {
  const flags = ["--output-format", "json", "--allowedTools", "Read,Bash"];
  return {
    command: claude,
    args: [
      ["-p", "Look at the build log and the files here.", ...flags],
      ["-p", "--continue", FOLLOW_UP, ...flags],
    ],
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      CLAUDE_CONFIG_DIR: join(home, ".claude"),
      ANTHROPIC_BASE_URL: `${provider}/anthropic`,
      ANTHROPIC_API_KEY: "sk-ant-fake-credential",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1",
    },
    notes: [
      "claude -p (Read, Bash allowed), then claude -p --continue with a follow-up; default model and settings",
    ],
  };
}

function codexRuns(codex: string, provider: string, home: string): Runs {
  const codexHome = join(home, ".codex");
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(
    join(codexHome, "config.toml"),
    `model_provider = "fake"\n\n[model_providers.fake]\nname = "fake"\nbase_url = "${provider}/openai/v1"\nwire_api = "responses"\nenv_key = "OPENAI_API_KEY"\n`,
  );
  return {
    command: process.execPath,
    args: [
      [codex, "exec", "--skip-git-repo-check", "Look at the build log and the files here."],
      [codex, "exec", "--skip-git-repo-check", "resume", "--last", FOLLOW_UP],
    ],
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      CODEX_HOME: codexHome,
      OPENAI_API_KEY: "sk-openai-fake-credential",
    },
    notes: [
      "codex exec (read-only sandbox), then codex exec resume --last with a follow-up; default model and settings",
    ],
  };
}

await record();
