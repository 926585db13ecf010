// `npm start`: the Worker under `wrangler dev` on 127.0.0.1, with local state persisted in .wrangler/state.
// The port is `npm start -- --port N`, else the PORT variable, else 8787; any other argument goes to wrangler
// as given, and replaces this script's default for the same flag (`--ip 0.0.0.0`, `--persist-to dir`).
// Wrangler's lookups that cannot work offline and have nothing to do with the local Worker are turned off
// unless the caller set them: usage metrics (WRANGLER_SEND_METRICS) and the download of the `Request.cf`
// sample (CLOUDFLARE_CF_FETCH_ENABLED, which otherwise prints a stack trace twice when there is no network;
// the service never reads request.cf).
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const DEFAULT_PORT = 8787;

/** Wrangler flags this script sets unless the caller gives them. */
const DEFAULTS = [
  ["--local", null],
  ["--persist-to", ".wrangler/state"],
  ["--ip", "127.0.0.1"],
];

export const QUIET_ENV = { WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" };

function parsePort(value, where) {
  const text = String(value).trim();
  const port = Number(text);
  if (!/^\d+$/.test(text) || port < 1 || port > 65535)
    throw new Error(`${where} must be a port number from 1 to 65535, not ${JSON.stringify(value)}`);
  return port;
}

/**
 * The `wrangler dev` arguments and environment for `npm start -- <argv>` under `env`. Throws an Error with a
 * one-line message for a bad port.
 */
export function startCommand(argv, env) {
  const rest = [];
  let port;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--port") {
      if (i + 1 >= argv.length) throw new Error(`${arg} needs a port number`);
      port = parsePort(argv[++i], arg);
    } else if (arg.startsWith("--port=")) {
      port = parsePort(arg.slice("--port=".length), "--port");
    } else rest.push(arg);
  }
  if (port === undefined)
    port = env.PORT === undefined || env.PORT === "" ? DEFAULT_PORT : parsePort(env.PORT, "PORT");
  const given = (flag) => rest.some((a) => a === flag || a.startsWith(`${flag}=`));
  const args = ["dev"];
  for (const [flag, value] of DEFAULTS) {
    if (given(flag)) continue;
    args.push(flag);
    if (value !== null) args.push(value);
  }
  args.push("--port", String(port), ...rest);
  const quiet = {};
  for (const [name, value] of Object.entries(QUIET_ENV))
    if (env[name] === undefined) quiet[name] = value;
  return { args, env: { ...env, ...quiet }, port };
}

function main() {
  let command;
  try {
    command = startCommand(process.argv.slice(2), process.env);
  } catch (e) {
    process.stderr.write(`edge-offload: ${e.message}\n`);
    process.exit(2);
  }
  const require = createRequire(import.meta.url);
  const wrangler = join(dirname(require.resolve("wrangler/package.json")), "bin", "wrangler.js");
  const child = spawn(process.execPath, [wrangler, ...command.args], {
    stdio: "inherit",
    env: command.env,
  });
  // Ctrl-C reaches wrangler through the terminal's process group; a signal sent to this process alone is
  // passed on, so wrangler and its workerd always stop with it.
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.on(signal, () => child.kill(signal));
  }
  child.on("exit", (code, signal) => {
    process.exitCode = code ?? (signal === null ? 1 : 128);
  });
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) main();
