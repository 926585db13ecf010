/**
 * The project's main figure: the cost replay of the three corpus files, two models (Sonnet 4.6, Opus 4.5
 * prices), both client models, every policy. Prints one table per run and, with --markdown, the README
 * tables: the main one, what each default switch is worth (the defaults with one switch off), the
 * cold-cache runs (--gap), and realistic endings (sessions that stop soon after a stub lands) at Anthropic
 * and OpenAI prices, and each file's halves. `--only main|switches|cold|endings|halves` runs one part. Every run tells edge-offload its
 * simulated usage, as a deployment's answers do (so its estimates calibrate); `--no-usage` leaves that out.
 */

import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { earlyEndings } from "../src/replay/endings.ts";
import { parseGapModel } from "../src/replay/gaps.ts";
import { DEFAULT_POLICIES, policyByName } from "../src/replay/policies/index.ts";
import { renderTable } from "../src/replay/report.ts";
import { replay } from "../src/replay/run.ts";
import { parseSessions } from "../src/replay/sessions.ts";
import type { Client, ReplayReport, ReplaySession } from "../src/replay/types.ts";
import { corpusFile } from "./lib/corpus.ts";

const FILES = ["swe", "api", "large"] as const;
const MODELS = ["claude-sonnet-4-6", "claude-opus-4-5"];
const CLIENTS: Client[] = ["cached", "uncached"];
/** The defaults before issue 28 (first delivery off, no move, the fixed horizon, no anchor). */
export const PREVIOUS_DEFAULTS = "edge-offload/full-delivery/no-move/fixed-horizon/no-anchor";
const MAIN_POLICIES = ["none", PREVIOUS_DEFAULTS, ...DEFAULT_POLICIES.filter((p) => p !== "none")];
export type ReplayPart = "main" | "switches" | "cold" | "endings" | "halves";

function sessionsOf(file: string): ReplaySession[] {
  return parseSessions(
    gunzipSync(readFileSync(corpusFile(file as (typeof FILES)[number]))).toString("utf8"),
    file,
  );
}

export async function benchReplay(
  opts: {
    markdown?: boolean;
    files?: readonly string[];
    models?: string[];
    only?: ReplayPart;
    /** Tell each policy its calls' simulated usage (default true, as `replay()`). */
    usage?: boolean;
  } = {},
): Promise<ReplayReport[]> {
  const files = opts.files ?? FILES;
  const reports: (ReplayReport & { file: string })[] = [];
  const run = (part: ReplayPart) => opts.only === undefined || opts.only === part;
  const usage = opts.usage !== false;
  if (run("main")) {
    const t0 = performance.now();
    for (const file of files) {
      const sessions = sessionsOf(file);
      for (const model of opts.models ?? MODELS) {
        for (const client of CLIENTS) {
          const policies = MAIN_POLICIES.map((n) => policyByName(n)!);
          const report = await replay(sessions, { model, client, policies, usage });
          reports.push({ ...report, file });
          console.log(`\n${renderTable(report, `${file}-sessions: `)}`);
        }
      }
    }
    console.log(
      `\nreplay: ${reports.length} runs in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
    );
    if (opts.markdown) console.log(`\n${markdown(reports)}\n\n${worstSessions(reports)}`);
  }
  if (opts.markdown && run("switches")) await switches(files, usage);
  if (opts.markdown && run("cold")) await coldCache(files, usage);
  if (opts.markdown && run("endings")) await endings(files, usage);
  if (opts.markdown && run("halves")) await halves(files, usage);
  return reports;
}

/** Ratio to none per policy: one row per (file, model, client). */
function markdown(reports: (ReplayReport & { file: string })[]): string {
  const policies = reports[0]!.policies.map((p) => p.policy);
  const head = `| corpus | model | client | none $ | ${policies.filter((p) => p !== "none").join(" | ")} |`;
  const sep = `|${" --- |".repeat(4 + policies.length - 1)}`;
  const rows = reports.map((r) => {
    const none = r.policies.find((p) => p.policy === "none")!;
    const cells = r.policies.filter((p) => p.policy !== "none").map((p) => cell(p));
    return `| ${r.file} | ${r.model.replace("claude-", "")} | ${r.client} | ${none.total_usd.toFixed(2)} | ${cells.join(" | ")} |`;
  });
  return [head, sep, ...rows].join("\n");
}

/** The worst single session per row (ratio to none) with the count of sessions made dearer. */
function worstSessions(reports: (ReplayReport & { file: string })[]): string {
  const policies = reports[0]!.policies.map((p) => p.policy).filter((p) => p !== "none");
  const head = `| corpus | model | client | references (corpus/quote/token) | ${policies.join(" | ")} |`;
  const sep = `|${" --- |".repeat(4 + policies.length)}`;
  const rows = reports.map((r) => {
    const k = r.policies[0]!.references_by_kind;
    const cells = r.policies.filter((p) => p.policy !== "none").map(worst);
    return `| ${r.file} | ${r.model.replace("claude-", "")} | ${r.client} | ${r.policies[0]!.references} (${k.corpus}/${k.quote}/${k.token}) | ${cells.join(" | ")} |`;
  });
  return [head, sep, ...rows].join("\n");
}

/** Worst session ratio, and how many sessions were dearer than under none. */
function worst(p: ReplayReport["policies"][number]): string {
  if (p.worst_session_ratio === null) return "—";
  return `${p.worst_session_ratio.toFixed(3)}${p.dearer_sessions > 0 ? ` (${p.dearer_sessions} dearer)` : ""}`;
}

/** One table of several runs: a row per (file, client[, model]), a cell per policy. */
async function table(
  title: string,
  files: readonly string[],
  runs: { model: string; client: Client; gap?: string; label?: string }[],
  policies: string[],
  usage: boolean,
  prepare: (sessions: ReplaySession[]) => ReplaySession[] = (s) => s,
): Promise<void> {
  const t0 = performance.now();
  const rows: string[] = [];
  for (const file of files) {
    const sessions = prepare(sessionsOf(file));
    for (const r of runs) {
      const report = await replay(sessions, {
        model: r.model,
        client: r.client,
        policies: policies.map((n) => policyByName(n)!),
        usage,
        ...(r.gap === undefined ? {} : { gap: parseGapModel(r.gap) }),
      });
      console.log(`\n${renderTable(report, `${file}-sessions (${title}): `)}`);
      const none = report.policies[0]!;
      rows.push(
        `| ${file} | ${r.model.replace("claude-", "")} | ${r.label ?? r.client} | ${report.sessions} | ${none.total_usd.toFixed(2)} | ${report.policies
          .slice(1)
          .map((p) => `${cell(p)}; worst ${worst(p)}`)
          .join(" | ")} |`,
      );
    }
  }
  console.log(
    `\n${title}: ${rows.length} runs in ${((performance.now() - t0) / 1000).toFixed(0)} s\n`,
  );
  console.log(
    `| corpus | prices | client | sessions | none $ | ${policies.slice(1).join(" | ")} |`,
  );
  console.log(`|${" --- |".repeat(4 + policies.length)}`);
  for (const r of rows) console.log(r);
}

/** What each default switch is worth: the defaults with one switch off (Sonnet 4.6, both clients). */
async function switches(files: readonly string[], usage: boolean): Promise<void> {
  await table(
    "the defaults, one switch off",
    files,
    CLIENTS.map((client) => ({ model: MODELS[0]!, client })),
    [
      "none",
      "edge-offload",
      "edge-offload/no-move",
      "edge-offload/fixed-horizon",
      "edge-offload/no-margin",
      "edge-offload/no-anchor",
      "edge-offload/full-delivery",
      "edge-offload/full-delivery/no-move",
    ],
    usage,
  );
}

/** The gap model of the cold-cache runs: 20 s between calls, one gap in ten 15 minutes (the cache lapses). */
export const COLD_GAP = "20,900@0.1";

/** The cold-cache moment: the same rows with and without it, under a gap model that lets caches lapse. */
async function coldCache(files: readonly string[], usage: boolean): Promise<void> {
  await table(
    `--gap ${COLD_GAP}`,
    files,
    CLIENTS.map((client) => ({ model: MODELS[0]!, client, gap: COLD_GAP })),
    [
      "none",
      "edge-offload",
      "edge-offload/no-cold",
      "edge-offload+all",
      "edge-offload+all/no-cold",
      "evict-20k",
    ],
    usage,
  );
}

/** An OpenAI model for the endings runs: its cache writes cost input (no surcharge), reads a tenth. */
export const OPENAI_MODEL = "gpt-5.4";

/**
 * Realistic endings (endings.ts): how many sessions the defaults make dearer, at both providers' prices.
 * At OpenAI's the client is the automatic one (OpenAI caches every prompt on its own, cache.ts); the
 * never-cached row is kept as a bound, labelled so: no OpenAI client gets it.
 */
async function endings(files: readonly string[], usage: boolean): Promise<void> {
  await table(
    "--endings early",
    files,
    [
      ...CLIENTS.map((client) => ({ model: MODELS[0]!, client })),
      { model: OPENAI_MODEL, client: "automatic" as const },
      { model: OPENAI_MODEL, client: "uncached" as const, label: "never cached (bound)" },
    ],
    // /no-anchor: the bound's row without the anchor (the replay's requests are Anthropic's format, where
    // the anchor goes in for a client without breakpoints; an OpenAI client gets none)
    ["none", "edge-offload", "edge-offload/fixed-horizon", "edge-offload/no-anchor"],
    usage,
    earlyEndings,
  );
}

/**
 * Each file's halves: every other session, from the first (a) and from the second (b), replayed on their own
 * (the learned horizon then sees only the half's sessions before). A change tuned to a file's whole tends to
 * show on one half and not the other; the defaults at both Anthropic price tables, and Opus's realistic
 * endings, where the cache minimum (4,096 tokens) makes the worst sessions.
 */
async function halves(files: readonly string[], usage: boolean): Promise<void> {
  for (const [name, first] of [
    ["a", 0],
    ["b", 1],
  ] as const) {
    const half = (sessions: ReplaySession[]) => sessions.filter((_, i) => i % 2 === first);
    await table(
      `half ${name}`,
      files,
      MODELS.map((model) => ({ model, client: "cached" as const })),
      ["none", "edge-offload"],
      usage,
      half,
    );
    await table(
      `half ${name}, --endings early`,
      files,
      [{ model: MODELS[1]!, client: "cached" as const }],
      ["none", "edge-offload"],
      usage,
      (sessions) => earlyEndings(half(sessions)),
    );
  }
}

/** A table cell: ratio to none, references lost, recall hops paid. */
function cell(p: ReplayReport["policies"][number]): string {
  return `${p.ratio_to_none!.toFixed(3)}${p.lost_references > 0 ? ` (${p.lost_references} lost)` : ""}${p.recall_hops > 0 ? ` [${p.recall_hops}]` : ""}`;
}
