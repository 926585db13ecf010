/** Rendering a replay report: a fixed-width table for people, JSON for scripts. */
import type { KindCounts, ReplayReport } from "./types.ts";

function money(x: number): string {
  return `$${x.toFixed(2)}`;
}

/**
 * The replay as the CLI prints it: one row per policy (total, ratio to none, tokens, cache-read share, recall
 * hops, lost references, worst session), then each tool rule's counts.
 */
export function renderTable(report: ReplayReport, label = ""): string {
  const head = [
    "policy",
    "total",
    "× none",
    "prompt tokens",
    "cache read",
    "recall hops",
    "lost refs (corpus/quote/token)",
    "worst session",
    "dearer",
  ];
  const rows = report.policies.map((p) => [
    p.policy,
    money(p.total_usd),
    p.ratio_to_none === null ? "—" : p.ratio_to_none.toFixed(3),
    p.prompt_tokens.toLocaleString("en-US"),
    `${(p.cache_read_share * 100).toFixed(1)}%`,
    String(p.recall_hops),
    `${p.lost_references} (${kinds(p.lost_by_kind)})`,
    p.worst_session_ratio === null ? "—" : p.worst_session_ratio.toFixed(3),
    String(p.dearer_sessions),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  const refs = report.policies[0];
  // Each tool rule's effect under its policy's row: the results it matched, by what became of them.
  const rules = report.policies.flatMap((p) =>
    (p.tool_rules ?? []).map(
      (r) =>
        `${p.policy}: ${r.says}: ${r.results} results (kept ${r.kept}, compacted ${r.compacted}, offloaded ${r.offloaded})`,
    ),
  );
  return [
    `${label}model ${report.model}, ${report.client} client, ${report.sessions} sessions, ${refs?.references ?? 0} references (corpus/quote/token ${kinds(refs?.references_by_kind)})`,
    line(head),
    line(widths.map((w) => "-".repeat(w))),
    ...rows.map(line),
    ...rules,
  ].join("\n");
}

function kinds(k: KindCounts | undefined): string {
  return k === undefined ? "0/0/0" : `${k.corpus}/${k.quote}/${k.token}`;
}

/** The JSON shape of `--json` (without per-session detail). */
export function toJson(report: ReplayReport): unknown {
  return {
    model: report.model,
    client: report.client,
    sessions: report.sessions,
    policies: report.policies.map((p) => ({
      policy: p.policy,
      total_usd: Math.round(p.total_usd * 1e6) / 1e6,
      ratio_to_none: p.ratio_to_none === null ? null : Math.round(p.ratio_to_none * 1e4) / 1e4,
      prompt_tokens: p.prompt_tokens,
      cache_read_share: Math.round(p.cache_read_share * 1e4) / 1e4,
      recall_hops: p.recall_hops,
      lost_references: p.lost_references,
      references: p.references,
      references_by_kind: p.references_by_kind,
      lost_by_kind: p.lost_by_kind,
      worst_session_ratio:
        p.worst_session_ratio === null ? null : Math.round(p.worst_session_ratio * 1e4) / 1e4,
      dearer_sessions: p.dearer_sessions,
      ...(p.tool_rules === undefined ? {} : { tool_rules: p.tool_rules }),
    })),
  };
}
