/**
 * The session report as GET /v1/sessions/{id}/report answers it and `sessionReport()` returns it in process:
 * per turn, the tokens with and without offload, the dollars saved (or, for a shadow turn, that would have
 * been saved), the recalls that followed, the gate's verdicts, billed dollars where the provider's usage is
 * known, and the last turn's decisions with their reasons. Also the tenant page's sums (GET /v1/report).
 */
import { type Calibration, calibrationErrors, calibrationReady } from "./core/calibration.ts";
import { type SessionInput, sessionRef } from "./core/session.ts";
import { OffloadError } from "./errors.ts";
import { GO_LIVE } from "./http/summary.ts";
import { type BilledTotals, billedSession, type TurnBilled } from "./store/billing-report.ts";
import type { LoggedTurn, ServiceStore, SessionReportData } from "./store/ports.ts";

/** What `sessionReport` needs of a store: `MemoryStore`, `AgentStore` and the Worker's store have it. */
export type ReportingStore = Pick<ServiceStore, "sessionReport" | "calibrations">;

/** The session report, the same JSON as GET /v1/sessions/{id}/report. */
export type SessionReport = ReturnType<typeof sessionReportView>;

/**
 * The report of one session, for apps that run edge-offload in process (`offloadFetch`,
 * `offloadMiddleware`, `compact`): the same figures the service's report route and dashboard show.
 * Throws a `not_found` OffloadError for a session the store does not know.
 *
 * @example
 * const store = new MemoryStore();
 * // … calls through offloadFetch({ store, session: "chat-42", … }) …
 * const report = await sessionReport({ store, session: "chat-42" });
 * console.log(report.mode, report.totals.saved_usd, report.last_turn?.decisions);
 */
export async function sessionReport(input: {
  store: ReportingStore;
  session: SessionInput;
}): Promise<SessionReport> {
  const ref = sessionRef(input.session);
  const data = await input.store.sessionReport(ref);
  if (data === null)
    throw new OffloadError(
      "not_found",
      `no session ${JSON.stringify(ref.session)} for this tenant`,
      { path: "session" },
    );
  return sessionReportView(data, await calibrationsOf(input.store, ref.tenant));
}

const iso = (ms: number) => new Date(ms).toISOString();

/** A shadow session's line for a person: what it would have saved, and the one line to go live. */
export function shadowNote(wouldSaveUsd: number): string {
  return `shadow: would have saved $${wouldSaveUsd.toFixed(4)} so far; one line to go live: ${GO_LIVE} in the session's config (PUT /v1/sessions/{id}/config), the deployment's (OFFLOAD_DEFAULT_CONFIG) or a request's x-offload-config`;
}
const roundUsd = (x: number) => Math.round(x * 1e9) / 1e9;

/**
 * How the latest logged turn ran (a request's x-offload-config may differ from the session's layer,
 * so not the config).
 */
function modeOf(data: SessionReportData): "live" | "shadow" | null {
  return data.latest === null ? null : data.latest.shadow ? "shadow" : "live";
}

function turnView(t: LoggedTurn, billed: TurnBilled | null, estimated: number | undefined) {
  const saved = t.tokens_before - t.tokens_after;
  return {
    turn: t.turn,
    at: iso(t.at),
    shadow: t.shadow,
    results: t.results,
    kept: t.kept,
    compacted: t.compacted,
    offloaded: t.offloaded,
    new_decisions: t.new_decisions,
    tokens_before: t.tokens_before,
    tokens_after: t.tokens_after,
    saved_tokens: t.shadow ? 0 : saved,
    saved_usd: t.shadow ? 0 : (estimated ?? roundUsd(t.saved_usd - (billed?.hops_usd ?? 0))),
    would_save_tokens: t.shadow ? saved : 0,
    would_save_usd: t.shadow ? t.saved_usd : 0,
    recalls: t.recalls,
    gate_fired: t.gate_fired,
    gate_declined: t.gate_declined,
    errors: t.errors,
    billed:
      billed === null
        ? null
        : {
            ...billed,
            cache_read_share:
              billed.prompt_tokens > 0 ? billed.cache_read_tokens / billed.prompt_tokens : null,
          },
  };
}

/** The tenant's calibration per model, as the reports show it. */
export function calibrationView(all: Record<string, Calibration>) {
  return Object.fromEntries(
    Object.entries(all).map(([model, c]) => [
      model,
      {
        ready: calibrationReady(c),
        ratios: c.ratios,
        ...calibrationErrors(c),
      },
    ]),
  );
}

/** Best effort: a report without calibration is still a report. */
export async function calibrationsOf(
  store: Pick<ServiceStore, "calibrations">,
  tenant: string,
): Promise<Record<string, Calibration> | null> {
  try {
    return await store.calibrations(tenant);
  } catch {
    return null;
  }
}

function totalsView(data: SessionReportData) {
  const { records, totals } = data;
  return {
    calls: data.calls,
    ...totals,
    kept: records.kept,
    compacted: records.compacted,
    offloaded: records.offloaded,
    offloaded_recalled: records.offloaded_recalled,
    recalls: data.recalls,
    recall_rate: records.offloaded === 0 ? null : records.offloaded_recalled / records.offloaded,
  };
}

export function sessionReportView(
  data: SessionReportData,
  calibration: Record<string, Calibration> | null = null,
) {
  const last = data.last_turn;
  // With the per-turn lines at hand, the billed figures use the tenant's latest calibration.
  const billed = billedSession(data.turns, calibration ?? {});
  const totals = totalsView(data);
  if (data.turns.length > 0) {
    totals.billed = billed.totals;
    if (billed.estimated !== null)
      totals.saved_usd = roundUsd(
        billed.estimated.reduce((n, x, i) => n + (data.turns[i]!.shadow ? 0 : x), 0),
      );
  }
  const mode = modeOf(data);
  return {
    tenant: data.tenant,
    session: data.session,
    created_at: iso(data.created_at),
    last_active: iso(data.last_active),
    mode,
    note: mode === "shadow" ? shadowNote(totals.would_save_usd) : null,
    last_turn_at: data.latest === null ? null : iso(data.latest.at),
    totals,
    turns: data.turns.map((t, i) => turnView(t, billed.turns[i] ?? null, billed.estimated?.[i])),
    calibration: calibration === null ? null : calibrationView(calibration),
    last_turn:
      last === null
        ? null
        : {
            turn: last.turn,
            at: iso(last.at),
            shadow: last.shadow,
            decisions: last.decisions.map((d) => ({
              tool_use_id: d.tool_use_id,
              tool_name: d.tool_name,
              path: d.path,
              tier: d.tier,
              action: d.action,
              mem_id: d.mem_id,
              chars: d.chars,
              tokens: d.tokens,
              sent_tokens: d.sent_tokens,
              sticky: d.sticky,
              reason: d.reason,
              gate: d.gate ?? null,
              rule: d.rule ?? null,
            })),
            decisions_total: last.decisions_total,
          },
  };
}

export type SessionRow = ReturnType<typeof totalsView> & {
  session: string;
  created_at: string;
  last_active: string;
  mode: "live" | "shadow" | null;
};

/** A session's row of the tenant page (GET /v1/report). */
export function sessionRow(data: SessionReportData): SessionRow {
  return {
    session: data.session,
    created_at: iso(data.created_at),
    last_active: iso(data.last_active),
    mode: modeOf(data),
    ...totalsView(data),
  };
}

/** Sums over a page of sessions; the recall rate is recomputed from the sums, not averaged. */
export function pageTotals(rows: readonly SessionRow[]) {
  const sum = (f: (r: SessionRow) => number) => rows.reduce((n, r) => n + f(r), 0);
  const offloaded = sum((r) => r.offloaded);
  const recalled = sum((r) => r.offloaded_recalled);
  return {
    sessions: rows.length,
    calls: sum((r) => r.calls),
    turns_logged: sum((r) => r.turns_logged),
    shadow_turns: sum((r) => r.shadow_turns),
    tokens_before: sum((r) => r.tokens_before),
    tokens_after: sum((r) => r.tokens_after),
    saved_tokens: sum((r) => r.saved_tokens),
    saved_usd: roundUsd(sum((r) => r.saved_usd)),
    would_save_tokens: sum((r) => r.would_save_tokens),
    would_save_usd: roundUsd(sum((r) => r.would_save_usd)),
    kept: sum((r) => r.kept),
    compacted: sum((r) => r.compacted),
    offloaded,
    offloaded_recalled: recalled,
    recalls: sum((r) => r.recalls),
    recall_rate: offloaded === 0 ? null : recalled / offloaded,
    gate_fired: sum((r) => r.gate_fired),
    gate_declined: sum((r) => r.gate_declined),
    billed: billedPageTotals(rows.map((r) => r.billed)),
  };
}

/**
 * The sessions of a page that offloading made dearer on the bill: a billed saving below 0 (a measured
 * session where nothing changed bills exactly 0, so below 0 is a loss, not rounding). Summed into the page's
 * saving, a loss would be netted away by the other sessions' savings; counted here, with the worst, it is
 * shown (issue 26: "a loss never shown as a saving"). `worst_share` is the largest loss as a share of that
 * session's counterfactual (0.031: its bill 3.1% over what its own requests would have cost).
 */
export function dearerSessions(all: readonly BilledTotals[]): {
  sessions: number;
  of: number;
  worst_share: number | null;
} {
  const measured = all.filter((b) => b.turns_measured > 0);
  const dearer = measured.filter((b) => b.saved_usd < 0);
  const shares = dearer
    .filter((b) => b.counterfactual_usd > 0)
    .map((b) => -b.saved_usd / b.counterfactual_usd);
  return {
    sessions: dearer.length,
    of: measured.length,
    worst_share: shares.length === 0 ? null : Math.round(Math.max(...shares) * 1e6) / 1e6,
  };
}

/** Billed sums over a page of sessions (the shares recomputed from the sums). */
function billedPageTotals(all: readonly BilledTotals[]) {
  const sum = (f: (b: BilledTotals) => number) => all.reduce((n, b) => n + f(b), 0);
  const prompt = sum((b) => b.prompt_tokens);
  const read = sum((b) => b.cache_read_tokens);
  const unmeasured = sum((b) => b.turns_unmeasured);
  return {
    turns_measured: sum((b) => b.turns_measured),
    turns_unmeasured: unmeasured,
    complete: unmeasured === 0,
    unmeasured_saved_usd: roundUsd(sum((b) => b.unmeasured_saved_usd)),
    calls: sum((b) => b.calls),
    usd: roundUsd(sum((b) => b.usd)),
    hops_usd: roundUsd(sum((b) => b.hops_usd)),
    prompt_tokens: prompt,
    cache_read_tokens: read,
    cache_write_tokens: sum((b) => b.cache_write_tokens),
    output_tokens: sum((b) => b.output_tokens),
    cache_read_share: prompt > 0 ? read / prompt : null,
    estimated_prompt_tokens: sum((b) => b.estimated_prompt_tokens),
    counterfactual_usd: roundUsd(sum((b) => b.counterfactual_usd)),
    saved_usd: roundUsd(sum((b) => b.saved_usd)),
    removed: {
      tokens: sum((b) => b.removed.tokens),
      results: sum((b) => b.removed.results),
      measured: sum((b) => b.removed.measured),
    },
    dearer: dearerSessions(all),
    estimate_basis: all.every((b) => b.estimate_basis === "modelled")
      ? ("modelled" as const)
      : all.some((b) => b.estimate_basis === "modelled")
        ? ("mixed" as const)
        : ("tokens_removed" as const),
  };
}
