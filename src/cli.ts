#!/usr/bin/env node
/**
 * `edge-offload` command line. `edge-offload replay <sessions.jsonl[.gz]>` prices a set of sessions under each
 * policy (see README "Measuring it"). Plain Node 22+, no workerd.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { gunzipSync } from "node:zlib";
import { resolveModel } from "./core/pricing.ts";
import { parseGapModel } from "./replay/gaps.ts";
import { edgeOffload } from "./replay/policies/edge-offload.ts";
import { DEFAULT_POLICIES, EDGE_OFFLOAD_CONFIGS, policyByName } from "./replay/policies/index.ts";
import type { Policy } from "./replay/policy.ts";
import { renderTable, toJson } from "./replay/report.ts";
import { replay } from "./replay/run.ts";
import { parseSessions } from "./replay/sessions.ts";
import type { Client } from "./replay/types.ts";

const HELP = `edge-offload replay <sessions.jsonl[.gz]> [options]

Replays agent sessions call by call and prices every call under each context policy, with a prompt-cache
simulation. Input: sessions in the corpus format (one {id, system, tools?, messages, refs?} per line), or a
plain Anthropic Messages request log (one request per line; requests that extend each other form a session).

Options:
  --model M          price as this model (default claude-sonnet-4-6)
  --client C         cached (an advancing cache breakpoint on every prompt, default) or uncached (none)
  --policies a,b     policies to compare (default: ${DEFAULT_POLICIES.join(",")})
                     also: mask-last-N, evict-Nk, ${Object.keys(EDGE_OFFLOAD_CONFIGS).join(", ")}
  --config JSON      an extra row "edge-offload+config" running compact with this config
  --gap BASE[,LONG@P] seconds between calls for sessions without timestamps: BASE, or LONG with
                     probability P (e.g. 20,900@0.1); sets the cache TTLs going (default: none lapse)
  --json             print {"model","client","sessions","policies":[…]} instead of a table
  --help             this text
`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "--help" || command === "-h" || command === "help") {
    process.stdout.write(HELP);
    return command === undefined ? 2 : 0;
  }
  if (command !== "replay") {
    process.stderr.write(`unknown command ${JSON.stringify(command)}\n\n${HELP}`);
    return 2;
  }
  let args;
  try {
    args = parseArgs({
      args: rest,
      allowPositionals: true,
      options: {
        model: { type: "string", default: "claude-sonnet-4-6" },
        client: { type: "string", default: "cached" },
        policies: { type: "string" },
        config: { type: "string" },
        gap: { type: "string" },
        json: { type: "boolean", default: false },
        help: { type: "boolean", default: false },
      },
    });
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n\n${HELP}`);
    return 2;
  }
  if (args.values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const file = args.positionals[0];
  if (file === undefined) {
    process.stderr.write(`replay needs a sessions file\n\n${HELP}`);
    return 2;
  }
  const model = args.values.model!;
  if (resolveModel(model) === null) {
    process.stderr.write(
      `unknown model ${JSON.stringify(model)} (no prices); e.g. claude-sonnet-4-6, claude-opus-4-5, gpt-5.1\n`,
    );
    return 2;
  }
  const client = args.values.client as Client;
  if (client !== "cached" && client !== "uncached") {
    process.stderr.write(`--client must be cached or uncached\n`);
    return 2;
  }
  const names = (args.values.policies ?? DEFAULT_POLICIES.join(","))
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (!names.includes("none")) names.unshift("none");
  const policies: Policy[] = [];
  for (const name of names) {
    const p = policyByName(name);
    if (p === null) {
      process.stderr.write(`unknown policy ${JSON.stringify(name)}\n`);
      return 2;
    }
    policies.push(p);
  }
  if (args.values.config !== undefined) {
    let config: Record<string, unknown>;
    try {
      config = JSON.parse(args.values.config) as Record<string, unknown>;
    } catch {
      process.stderr.write("--config must be a JSON object\n");
      return 2;
    }
    policies.push(
      edgeOffload(
        "edge-offload+config",
        { tool_result_compaction_enabled: true, tool_result_offload_enabled: true, ...config },
        "custom config",
      ),
    );
  }
  let sessions;
  try {
    const raw = readFileSync(file);
    sessions = parseSessions((file.endsWith(".gz") ? gunzipSync(raw) : raw).toString("utf8"), file);
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
  let gap;
  try {
    gap = args.values.gap === undefined ? undefined : parseGapModel(args.values.gap);
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    return 2;
  }
  const report = await replay(sessions, {
    model,
    client,
    policies,
    ...(gap === undefined ? {} : { gap }),
    onProgress:
      args.values.json || !process.stderr.isTTY
        ? undefined
        : (d, t) => process.stderr.write(`\r${d}/${t}`),
  });
  if (!args.values.json && process.stderr.isTTY) process.stderr.write("\r");
  process.stdout.write(
    `${args.values.json ? JSON.stringify(toJson(report)) : renderTable(report)}\n`,
  );
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
