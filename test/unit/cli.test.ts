/**
 * The `edge-offload` command as a user meets it: `--version`, one line and exit code 2 for what the user got
 * wrong, and a progress line that counts session×policy runs with an estimate of the time left, on stderr and
 * only on a terminal. (Without the optional `ai` package the CLI is exercised from the packed install, in
 * pack.test.ts.)
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { formatDuration, progressLine, progressReporter } from "../../src/cli-progress.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const SAMPLE = `${root}/test/fixtures/corpus-sample.jsonl.gz`;
const NODE = [
  process.execPath,
  "--experimental-strip-types",
  "--disable-warning=ExperimentalWarning",
];
const CLI = `${root}/src/cli.ts`;

function cli(...args: string[]) {
  return spawnSync(NODE[0]!, [...NODE.slice(1), CLI, ...args], { encoding: "utf8" });
}

function oneLine(stderr: string): string {
  const lines = stderr.split("\n").filter(Boolean);
  expect(lines, stderr).toHaveLength(1);
  expect(stderr).not.toMatch(/\n\s+at /);
  return lines[0]!;
}

// Each spawn strips the sources' types first: seconds apiece on a loaded machine.
describe("edge-offload CLI", { timeout: 60_000 }, () => {
  it("prints the package version", () => {
    const version = JSON.parse(readFileSync(`${root}/package.json`, "utf8")).version;
    for (const flag of ["--version", "-v"]) {
      const out = cli(flag);
      expect(out.status).toBe(0);
      expect(out.stdout).toBe(`${version}\n`);
    }
  });

  it("answers a missing or unreadable file with one line and exit code 2", () => {
    const missing = cli("replay", "/no/such/sessions.jsonl");
    expect(missing.status).toBe(2);
    expect(oneLine(missing.stderr)).toBe(
      "edge-offload: cannot read /no/such/sessions.jsonl: no such file",
    );
    const dir = cli("replay", root);
    expect(dir.status).toBe(2);
    expect(oneLine(dir.stderr)).toContain("it is a directory");
    const notJsonl = cli("replay", `${root}/README.md`);
    expect(notJsonl.status).toBe(2);
    expect(oneLine(notJsonl.stderr)).toContain("line 1 is not JSON");
  });

  it("answers a file without sessions, or a truncated gzip, with one line naming it and exit code 2", () => {
    const dir = mkdtempSync(join(tmpdir(), "edge-offload-cli-"));
    const empty = join(dir, "empty.jsonl");
    writeFileSync(empty, "");
    const blank = join(dir, "blank.jsonl.gz");
    writeFileSync(blank, gzipSync("\n\n"));
    const truncated = join(dir, "cut.jsonl.gz");
    writeFileSync(truncated, readFileSync(SAMPLE).subarray(0, 2000));
    for (const [file, says] of [
      [empty, `${empty}: no sessions (the file is empty)`],
      [blank, `${blank}: no sessions (the file is empty)`],
      [truncated, `${truncated} is not a readable gzip file: unexpected end of file`],
    ] as const) {
      const run = cli("replay", file);
      expect(run.status, file).toBe(2);
      expect(run.stdout, file).toBe("");
      expect(oneLine(run.stderr)).toContain(`edge-offload: ${says}`);
    }
    // Gzip is told by its bytes, not its name.
    const unnamed = join(dir, "sessions.jsonl");
    writeFileSync(unnamed, readFileSync(SAMPLE));
    const read = cli("replay", unnamed, "--policies", "none", "--json");
    expect(read.status, read.stderr).toBe(0);
    expect(JSON.parse(read.stdout).sessions).toBeGreaterThan(0);
  });

  it("shows what each tool rule of --config did, under the table and in --json", () => {
    const config = JSON.stringify({
      tool_result_tool_rules: [{ tool: "*", offload: "never" }],
    });
    const table = cli("replay", SAMPLE, "--policies", "none", "--config", config);
    expect(table.status, table.stderr).toBe(0);
    expect(table.stdout).toMatch(
      /^edge-offload\+config: tool rule `\*`: offload never: \d+ results \(kept \d+, compacted 0, offloaded 0\)$/m,
    );
    const json = cli("replay", SAMPLE, "--policies", "none", "--config", config, "--json");
    const custom = JSON.parse(json.stdout).policies.find(
      (p: { policy: string }) => p.policy === "edge-offload+config",
    );
    expect(custom.tool_rules).toEqual([
      expect.objectContaining({ tool: "*", says: "tool rule `*`: offload never", offloaded: 0 }),
    ]);
    expect(custom.tool_rules[0].results).toBe(custom.tool_rules[0].kept);
    expect(custom.tool_rules[0].results).toBeGreaterThan(0);
    // Every result kept full: the row costs what none costs.
    expect(custom.ratio_to_none).toBe(1);
  });

  it("answers a bad --config with one line naming the problem and exit code 2, before replaying", () => {
    const typo = cli("replay", SAMPLE, "--config", '{"tool_result_medium_teir":"cache_anchor"}');
    expect(typo.status).toBe(2);
    expect(oneLine(typo.stderr)).toContain("tool_result_medium_teir");
    expect(typo.stdout).toBe("");
    const range = cli("replay", SAMPLE, "--config", '{"tool_result_compaction_keep_last_n":-1}');
    expect(range.status).toBe(2);
    expect(oneLine(range.stderr)).toContain("tool_result_compaction_keep_last_n");
    const notJson = cli("replay", SAMPLE, "--config", "{anchor: on}");
    expect(notJson.status).toBe(2);
    expect(oneLine(notJson.stderr)).toContain("--config is not JSON");
    const flag = cli("replay", SAMPLE, "--polices", "none");
    expect(flag.status).toBe(2);
    expect(oneLine(flag.stderr)).toContain("--polices");
  });

  it("lists eval in --help, and answers bad eval input with one line and exit code 2", () => {
    const help = cli("--help");
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^\s+eval\s+A\/B your model's answers/m);
    expect(help.stdout).toContain("edge-offload eval <sessions.jsonl[.gz]> --model M");
    const dir = mkdtempSync(join(tmpdir(), "eo-cli-"));
    const empty = join(dir, "empty.jsonl");
    writeFileSync(empty, "\n");
    const env = { PATH: process.env.PATH ?? "" };
    const key = { ...env, ANTHROPIC_API_KEY: "sk-test" };
    const run = (args: string[], e: Record<string, string>) =>
      spawnSync(NODE[0]!, [...NODE.slice(1), CLI, "eval", ...args], { encoding: "utf8", env: e });
    const cases: [string[], Record<string, string>, string][] = [
      [
        [empty, "--model", "claude-sonnet-4-6"],
        key,
        `edge-offload: ${empty}: no sessions (the file is empty)`,
      ],
      [
        [SAMPLE, "--model", "claude-sonnet-4-6"],
        env,
        "edge-offload: no API key: set ANTHROPIC_API_KEY for --provider anthropic",
      ],
      [
        [SAMPLE, "--provider", "openai-chat", "--model", "gpt-5.1"],
        key,
        "edge-offload: no API key: set OPENAI_API_KEY for --provider openai-chat",
      ],
      [
        [SAMPLE, "--provider", "gemini", "--model", "x"],
        key,
        'edge-offload: unknown provider "gemini": anthropic, openai-chat, openai-responses',
      ],
      [[SAMPLE], key, "edge-offload: --model is required: the model your deployment calls"],
      [
        [SAMPLE, "--model", "claude-sonnet-4-6", "--sample", "many"],
        key,
        'edge-offload: --sample must be a number (got "many")',
      ],
      [
        [SAMPLE, "--model", "claude-sonnet-4-6", "--aa", "2"],
        key,
        "edge-offload: --aa must be from 0 to 1",
      ],
      [[SAMPLE, "--model", "claude-sonnet-4-6", "--samples", "3"], key, "--samples"],
    ];
    for (const [args, e, line] of cases) {
      const out = run(args, e);
      expect(out.status, `${args.join(" ")}: ${out.stderr}`).toBe(2);
      expect(oneLine(out.stderr)).toContain(line);
      expect(out.stdout).toBe("");
    }
  }, 120_000);

  it("writes no progress when stderr is not a terminal", () => {
    const out = cli("replay", SAMPLE, "--policies", "none,edge-offload", "--json");
    expect(out.status, out.stderr).toBe(0);
    expect(out.stderr).toBe("");
    expect(JSON.parse(out.stdout).sessions).toBeGreaterThan(0);
  });

  it.skipIf(!existsSync("/usr/bin/script"))(
    "shows what it counts and the time left on a terminal (util-linux script gives it one)",
    () => {
      const command = [...NODE, CLI, "replay", SAMPLE, "--policies", "none,edge-offload", "--json"]
        .map((a) => `'${a}'`)
        .join(" ");
      // stdout goes to a file so that only stderr reaches the pseudo-terminal.
      const out = spawnSync("/usr/bin/script", ["-qec", `${command} >/dev/null`, "/dev/null"], {
        encoding: "utf8",
      });
      expect(out.status, out.stdout).toBe(0);
      expect(out.stdout).toMatch(/replaying: \d+ of \d+ session×policy runs \(\d+%\)/);
      expect(out.stdout).toMatch(/(estimating time left|about .+ left|done in \d)/);
      expect(out.stdout.endsWith("\r\x1b[K")).toBe(true);
    },
  );
});

describe("progress line", () => {
  it("estimates the time left from the pace so far", () => {
    expect(progressLine(12, 48, 20_000)).toBe(
      "replaying: 12 of 48 session×policy runs (25%), about 1m 00s left",
    );
    expect(progressLine(1, 3, 500)).toContain("estimating time left");
    expect(progressLine(0, 3, 5000)).toContain("estimating time left");
    expect(progressLine(3, 3, 65_000)).toBe(
      "replaying: 3 of 3 session×policy runs (100%), done in 1m 05s",
    );
  });

  it("formats durations for people", () => {
    expect([0, 999, 45_000, 185_000, 3_720_000].map(formatDuration)).toEqual([
      "0s",
      "1s",
      "45s",
      "3m 05s",
      "1h 02m",
    ]);
  });

  it("redraws one line at most every 100 ms, always the last, and erases it at the end", () => {
    const written: string[] = [];
    let t = 0;
    const p = progressReporter({ write: (s: string) => written.push(s) }, () => t);
    p.update(1, 4);
    t = 50;
    p.update(2, 4); // too soon: skipped
    t = 2000;
    p.update(3, 4);
    p.update(4, 4); // the last one is always drawn
    p.end();
    expect(written).toHaveLength(4);
    expect(written[1]).toContain("3 of 4");
    expect(written[1]).toContain("about 1s left");
    expect(written[2]).toContain("done in 2s");
    expect(written[3]).toBe("\r\x1b[K");
  });
});
