/**
 * The project's main figure: the cost replay of the three corpus files, two models (Sonnet 4.6, Opus 4.5
 * prices), both client models, every policy. Prints one table per run and, with --markdown, the README table.
 */

import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { parseGapModel } from "../src/replay/gaps.ts";
import { DEFAULT_POLICIES, policyByName } from "../src/replay/policies/index.ts";
import { renderTable } from "../src/replay/report.ts";
import { replay } from "../src/replay/run.ts";
import { parseSessions } from "../src/replay/sessions.ts";
import type { Client, ReplayReport } from "../src/replay/types.ts";
import { corpusFile } from "./lib/corpus.ts";

const FILES = ["swe", "api", "large"] as const;
const MODELS = ["claude-sonnet-4-6", "claude-opus-4-5"];
const CLIENTS: Client[] = ["cached", "uncached"];

export async function benchReplay(
  opts: { markdown?: boolean; files?: readonly string[]; models?: string[] } = {},
): Promise<ReplayReport[]> {
  const reports: (ReplayReport & { file: string })[] = [];
  const t0 = performance.now();
  for (const file of opts.files ?? FILES) {
    const sessions = parseSessions(
      gunzipSync(readFileSync(corpusFile(file as (typeof FILES)[number]))).toString("utf8"),
      file,
    );
    for (const model of opts.models ?? MODELS) {
      for (const client of CLIENTS) {
        const policies = DEFAULT_POLICIES.map((n) => policyByName(n)!);
        const report = await replay(sessions, { model, client, policies });
        reports.push({ ...report, file });
        console.log(`\n${renderTable(report, `${file}-sessions: `)}`);
      }
    }
  }
  console.log(
    `\nreplay: ${reports.length} runs in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
  );
  if (opts.markdown) console.log(`\n${markdown(reports)}\n\n${worstSessions(reports)}`);
  if (opts.markdown) await coldCache(opts.files ?? FILES);
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

if (import.meta.url === `file://${process.argv[1]}`)
  await benchReplay({ markdown: process.argv.includes("--markdown") });

/** The worst single session per row (ratio to none), and the references each file holds, per kind. */
function worstSessions(reports: (ReplayReport & { file: string })[]): string {
  const policies = reports[0]!.policies.map((p) => p.policy).filter((p) => p !== "none");
  const head = `| corpus | model | client | references (corpus/quote/token) | ${policies.join(" | ")} |`;
  const sep = `|${" --- |".repeat(4 + policies.length)}`;
  const rows = reports.map((r) => {
    const k = r.policies[0]!.references_by_kind;
    const cells = r.policies
      .filter((p) => p.policy !== "none")
      .map((p) => (p.worst_session_ratio === null ? "—" : p.worst_session_ratio.toFixed(3)));
    return `| ${r.file} | ${r.model.replace("claude-", "")} | ${r.client} | ${r.policies[0]!.references} (${k.corpus}/${k.quote}/${k.token}) | ${cells.join(" | ")} |`;
  });
  return [head, sep, ...rows].join("\n");
}

/** The gap model of the cold-cache runs: 20 s between calls, one gap in ten 15 minutes (the cache lapses). */
export const COLD_GAP = "20,900@0.1";
const COLD_POLICIES = [
  "none",
  "edge-offload",
  "edge-offload/no-cold",
  "edge-offload+all",
  "edge-offload+all/no-cold",
  "evict-20k",
];

/** The cold-cache moment: the same rows with and without it, under a gap model that lets caches lapse. */
async function coldCache(files: readonly string[]): Promise<void> {
  const t0 = performance.now();
  const rows: string[] = [];
  for (const file of files) {
    const sessions = parseSessions(
      gunzipSync(readFileSync(corpusFile(file as (typeof FILES)[number]))).toString("utf8"),
      file,
    );
    for (const client of CLIENTS) {
      const report = await replay(sessions, {
        model: MODELS[0]!,
        client,
        policies: COLD_POLICIES.map((n) => policyByName(n)!),
        gap: parseGapModel(COLD_GAP),
      });
      console.log(`\n${renderTable(report, `${file}-sessions, --gap ${COLD_GAP}: `)}`);
      const none = report.policies[0]!;
      rows.push(
        `| ${file} | ${client} | ${none.total_usd.toFixed(2)} | ${report.policies
          .slice(1)
          .map((p) => cell(p))
          .join(" | ")} |`,
      );
    }
  }
  console.log(
    `\ncold cache (--gap ${COLD_GAP}, Sonnet 4.6): ${rows.length} runs in ${((performance.now() - t0) / 1000).toFixed(0)} s\n`,
  );
  console.log(`| corpus | client | none $ | ${COLD_POLICIES.slice(1).join(" | ")} |`);
  console.log(`|${" --- |".repeat(2 + COLD_POLICIES.length)}`);
  for (const r of rows) console.log(r);
}

/** A table cell: ratio to none, references lost, recall hops paid. */
function cell(p: ReplayReport["policies"][number]): string {
  return `${p.ratio_to_none!.toFixed(3)}${p.lost_references > 0 ? ` (${p.lost_references} lost)` : ""}${p.recall_hops > 0 ? ` [${p.recall_hops} hops]` : ""}`;
}
