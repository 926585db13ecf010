#!/usr/bin/env node
/**
 * `edge-offload` command line. `edge-offload replay <sessions.jsonl[.gz]>` prices a set of sessions under each
 * policy (see README "Measuring it"); `edge-offload eval` A/Bs the model's answers with offload off and on
 * against the user's provider (cli-eval.ts); `edge-offload serve` runs the service on Node (src/serve.ts).
 * Plain Node, no workerd.
 *
 * Every failure a user can cause (a bad flag, a bad --config, a missing or unreadable file) is one line on
 * stderr and exit code 2; anything else is one line and exit code 1 (EDGE_OFFLOAD_DEBUG=1 adds the stack).
 * The commands' modules are imported only once the Node version is known to run them, so an old Node gets a
 * sentence rather than a syntax error from deep inside a dependency.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { EVAL_HELP, evalCommand } from "./cli-eval.ts";
import { configFromText, readSessionsFile, UsageError } from "./cli-input.ts";
import { progressReporter } from "./cli-progress.ts";

/** The oldest Node the library runs on (its JSONPath engine uses the RegExp `v` flag). */
const MIN_NODE_MAJOR = 20;
const PRUNE = "prune-messages";

function packageVersion(): string {
  // The same relative path from src/cli.ts and from dist/cli.js.
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

async function loadReplay() {
  const [pricing, policies, custom, prune, report, run, sessions, config, gaps, endings] =
    await Promise.all([
      import("./core/pricing.ts"),
      import("./replay/policies/index.ts"),
      import("./replay/policies/edge-offload.ts"),
      import("./replay/policies/prune-messages.ts"),
      import("./replay/report.ts"),
      import("./replay/run.ts"),
      import("./replay/sessions.ts"),
      import("./config.ts"),
      import("./replay/gaps.ts"),
      import("./replay/endings.ts"),
    ]);
  return {
    ...pricing,
    ...policies,
    ...custom,
    ...prune,
    ...report,
    ...run,
    ...sessions,
    ...config,
    ...gaps,
    ...endings,
  };
}
type Replay = Awaited<ReturnType<typeof loadReplay>>;

const COMMANDS = `edge-offload <command> [options]

Commands:
  replay    price your sessions under each context policy, offline (no provider call)
  eval      A/B your model's answers with offload off and on, against your provider, with the cost
  --version the package version
`;

function help(r: Replay): string {
  return `edge-offload replay <sessions.jsonl[.gz]> [options]

Replays agent sessions call by call and prices every call under each context policy, with a prompt-cache
simulation. Input: sessions in the corpus format (one {id, system, tools?, messages, refs?} per line), or a
plain Anthropic Messages request log (one request per line; requests that extend each other form a session).

Options:
  --model M          price as this model (default claude-sonnet-4-6)
  --client C         cached (an advancing cache breakpoint on every prompt, default), uncached (none), or
                     automatic (OpenAI's caching: every prompt cached on its own; OpenAI models only)
  --policies a,b     policies to compare (default: ${r.DEFAULT_POLICIES.join(",")})
                     also: mask-last-N, evict-Nk, ${Object.keys(r.EDGE_OFFLOAD_CONFIGS).join(", ")}
                     (${PRUNE} runs the AI SDK's pruneMessages: it needs the optional "ai" package)
  --config JSON      an extra row "edge-offload+config" running compact with this config
  --gap BASE[,LONG@P] seconds between calls for sessions without timestamps: BASE, or LONG with
                     probability P (e.g. 20,900@0.1); sets the cache TTLs going (default: none lapse)
  --endings early    cut half of the sessions holding a result over 8,000 chars 1-3 calls after it
                     arrives (sessions that stop soon after a stub lands; default: as recorded)
  --endings-draw N   with --endings early: another draw of where sessions stop (default 0, the one
                     the published tables use)
  --hops H           kept (a recall's call and answer stay in later prompts, as with an agent that runs
                     the recall tool itself; default) or dropped (gone, as with the proxy's hops)
  --thinking         each assistant message opens with a thinking block (a model with preserved
                     thinking, e.g. --model claude-opus-5-5: what precedes the latest one is kept)
  --no-usage         do not tell edge-offload each call's simulated usage (by default it is told, as a
                     deployment is, so it calibrates its token estimates; --usage is the default)
  --json             print {"model","client","sessions","policies":[…]} instead of a table
  --version          the package version
  --help             this text

Progress (on stderr, only when it is a terminal) counts session×policy runs and estimates the time left.

Also: edge-offload serve runs the service on Node (edge-offload serve --help).
`;
}

function readSessions(r: Replay, file: string) {
  return readSessionsFile(file, r.parseSessions);
}

/** The custom row's config, validated here so a typo is a usage error, not a failure mid-replay. */
function customConfig(r: Replay, text: string): Record<string, unknown> {
  return configFromText(text, (value) => r.parseConfigPatch(value, "--config"));
}

function parseReplayArgs(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    options: {
      model: { type: "string", default: "claude-sonnet-4-6" },
      client: { type: "string", default: "cached" },
      policies: { type: "string" },
      config: { type: "string" },
      gap: { type: "string" },
      endings: { type: "string" },
      "endings-draw": { type: "string" },
      hops: { type: "string" },
      thinking: { type: "boolean" },
      usage: { type: "boolean", default: true },
      "no-usage": { type: "boolean", default: false },
      json: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  });
}

async function replayCommand(rest: string[]): Promise<number> {
  let args: ReturnType<typeof parseReplayArgs>;
  try {
    args = parseReplayArgs(rest);
  } catch (e) {
    throw new UsageError(`${e instanceof Error ? e.message : String(e)} (see --help)`);
  }
  const file = args.positionals[0];
  if (!args.values.help && file === undefined)
    throw new UsageError("replay needs a sessions file (see --help)");
  const r = await loadReplay();
  if (args.values.help || file === undefined) {
    process.stdout.write(help(r));
    return 0;
  }
  const model = args.values.model!;
  if (r.resolveModel(model) === null)
    throw new UsageError(
      `unknown model ${JSON.stringify(model)} (no prices); e.g. claude-sonnet-4-6, claude-opus-4-5, gpt-5.1`,
    );
  const client = args.values.client;
  if (client !== "cached" && client !== "uncached" && client !== "automatic")
    throw new UsageError("--client must be cached, uncached or automatic");
  if (client === "automatic" && r.resolveModel(model)!.provider !== "openai")
    throw new UsageError("--client automatic follows OpenAI's caching: give an OpenAI --model");
  // The input first: a file that cannot be read, or holds no session, is the one line the user sees.
  const recorded = readSessions(r, file);
  const asked = args.values.policies !== undefined;
  const names = (args.values.policies ?? r.DEFAULT_POLICIES.join(","))
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (!names.includes("none")) names.unshift("none");
  const policies = [];
  for (const name of names) {
    if (name === PRUNE && (await r.loadPruneMessages()) === null) {
      const why = `${PRUNE} runs the AI SDK's pruneMessages, from the optional "ai" package (npm i ai)`;
      if (asked) throw new UsageError(`${why}; it is not installed`);
      process.stderr.write(`edge-offload: skipping the ${PRUNE} row: ${why}\n`);
      continue;
    }
    const p = r.policyByName(name);
    if (p === null) throw new UsageError(`unknown policy ${JSON.stringify(name)} (see --help)`);
    policies.push(p);
  }
  if (args.values.config !== undefined) {
    const config = customConfig(r, args.values.config);
    policies.push(
      r.edgeOffload(
        "edge-offload+config",
        { tool_result_compaction_enabled: true, tool_result_offload_enabled: true, ...config },
        "custom config",
      ),
    );
  }
  let gap: ReturnType<Replay["parseGapModel"]> | undefined;
  try {
    gap = args.values.gap === undefined ? undefined : r.parseGapModel(args.values.gap);
  } catch (e) {
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }
  const endings = args.values.endings;
  if (endings !== undefined && endings !== "early" && endings !== "recorded")
    throw new UsageError("--endings must be early or recorded");
  const drawArg = args.values["endings-draw"];
  // digits only: Number() alone would also take "", "0x10" and "1e3"
  if (drawArg !== undefined && (!/^\d{1,7}$/.test(drawArg) || Number(drawArg) > 1_000_000))
    throw new UsageError("--endings-draw must be an integer from 0 to 1000000");
  const drawN = drawArg === undefined ? 0 : Number(drawArg);
  if (drawArg !== undefined && endings !== "early")
    throw new UsageError("--endings-draw needs --endings early");
  const sessions = endings === "early" ? r.earlyEndings(recorded, drawN) : recorded;
  const hops = args.values.hops;
  if (hops !== undefined && hops !== "kept" && hops !== "dropped")
    throw new UsageError("--hops must be kept or dropped");
  const progress = process.stderr.isTTY ? progressReporter(process.stderr) : null;
  const report = await r.replay(sessions, {
    model,
    client,
    policies,
    ...(gap === undefined ? {} : { gap }),
    ...(hops === undefined ? {} : { hops }),
    ...(args.values.thinking ? { thinking: true } : {}),
    usage: !args.values["no-usage"],
    ...(progress === null ? {} : { onProgress: progress.update }),
  });
  progress?.end();
  process.stdout.write(
    `${args.values.json ? JSON.stringify(r.toJson(report)) : r.renderTable(report)}\n`,
  );
  return 0;
}

const SERVE_HELP = `edge-offload serve [options]

Runs the service (the same routes, proxy, dashboard and OpenAPI document as the Worker) on Node.

Options:
  --port N       the port (default: the PORT variable, else 8787)
  --host H       the address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)
  --store URL    where sessions live (default sqlite:./edge-offload.db):
                 sqlite:<file>, postgres://…, redis://…, or memory:
  --help         this text

The Worker's variables configure it: OFFLOAD_API_KEYS, OFFLOAD_SECRET, OFFLOAD_DEFAULT_CONFIG,
ANTHROPIC_BASE_URL, OPENAI_BASE_URL, OFFLOAD_RETENTION_SECONDS, OFFLOAD_OCR… (docs/stores.md). Without
OFFLOAD_DEFAULT_CONFIG, sessions nobody configured run in shadow mode, as on the Worker. With
OFFLOAD_OCR=on, OFFLOAD_OCR_MODEL_DIR names the directory of <language>.traineddata files (and the
tesseract-wasm package reads them: docs/attachments.md).
`;

function portOf(text: string, where: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text.trim()) || port < 1 || port > 65535)
    throw new UsageError(
      `${where} must be a port number from 1 to 65535, not ${JSON.stringify(text)}`,
    );
  return port;
}

async function serveCommand(rest: string[]): Promise<number> {
  let args: ReturnType<typeof parseServeArgs>;
  try {
    args = parseServeArgs(rest);
  } catch (e) {
    throw new UsageError(`${e instanceof Error ? e.message : String(e)} (see --help)`);
  }
  if (args.values.help) {
    process.stdout.write(SERVE_HELP);
    return 0;
  }
  if (args.positionals.length > 0)
    throw new UsageError(`serve takes no arguments, got ${JSON.stringify(args.positionals[0])}`);
  const port =
    args.values.port !== undefined
      ? portOf(args.values.port, "--port")
      : process.env.PORT !== undefined && process.env.PORT !== ""
        ? portOf(process.env.PORT, "PORT")
        : undefined;
  // The service is its own bundle in the package (dist/serve.js: the Worker's app and its routes);
  // from the sources, the module itself.
  const entry = import.meta.url.endsWith(".ts") ? "./serve.ts" : "./serve.js";
  const { serve } = (await import(/* @vite-ignore */ entry)) as ServeModule;
  const { isOffloadError } = await import("./errors.ts");
  let server: Awaited<ReturnType<ServeModule["serve"]>>;
  try {
    server = await serve({
      ...(port === undefined ? {} : { port }),
      ...(args.values.host === undefined ? {} : { host: args.values.host }),
      ...(args.values.store === undefined ? {} : { store: args.values.store }),
    });
  } catch (e) {
    if (isOffloadError(e) && e.type === "invalid_argument") throw new UsageError(e.message);
    throw e;
  }
  process.stderr.write(`edge-offload: serving on ${server.url} (store ${server.store})\n`);
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await server.close();
  return 0;
}

/** What the CLI uses of src/serve.ts (loaded by name: its types are the Worker's). */
interface ServeModule {
  serve(options: {
    port?: number;
    host?: string;
    store?: string;
  }): Promise<{ url: string; store: string; close(): Promise<void> }>;
}

function parseServeArgs(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    options: {
      port: { type: "string" },
      host: { type: "string" },
      store: { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === "--version" || command === "-v" || command === "version") {
    process.stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  const major = Number(process.versions.node.split(".")[0]);
  if (major < MIN_NODE_MAJOR) {
    process.stderr.write(
      `edge-offload: Node.js ${MIN_NODE_MAJOR} or newer is required (you have ${process.versions.node}); e.g. nvm install 24\n`,
    );
    return 1;
  }
  if (command === undefined || command === "--help" || command === "-h" || command === "help") {
    process.stdout.write(`${COMMANDS}\n${help(await loadReplay())}\n${EVAL_HELP}`);
    return command === undefined ? 2 : 0;
  }
  try {
    if (command === "serve") return await serveCommand(rest);
    if (command === "eval") return await evalCommand(rest);
    if (command !== "replay")
      throw new UsageError(`unknown command ${JSON.stringify(command)} (try --help)`);
    return await replayCommand(rest);
  } catch (e) {
    const usage = e instanceof UsageError;
    const message = e instanceof Error ? e.message : String(e);
    process.stderr.write(`edge-offload: ${message.split("\n")[0]}\n`);
    if (!usage && process.env.EDGE_OFFLOAD_DEBUG && e instanceof Error)
      process.stderr.write(`${e.stack}\n`);
    return usage ? 2 : 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
