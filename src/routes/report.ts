/**
 * The savings report. GET /v1/sessions/:id/report: per turn, the tokens with and without offload,
 * the dollars saved (or, for a shadow turn, that would have been saved), the recalls that followed,
 * the gate's verdicts, and the last turn's decisions with their gate breakdown. GET /v1/report: the
 * same totals for a page of the tenant's sessions. Sessions are listed from KV (it may lag by about
 * a minute); each one's numbers come from its Durable Object, a page at a time and a few objects at
 * once.
 */
import { Hono } from "hono";
import { z } from "zod";
import { type Calibration, calibrationErrors, calibrationReady } from "../core/calibration.ts";
import { OffloadError } from "../errors.ts";
import type { AppEnv } from "../http/context.ts";
import { validate } from "../http/errors.ts";
import { type BilledTotals, billedSession, type TurnBilled } from "../store/billing-report.ts";
import type { LoggedTurn, SessionReportData } from "../store/ports.ts";
import { refOf } from "./session-param.ts";

/**
 * At most this many sessions per summary page: each is one Durable Object call (1,000 operations
 * per invocation).
 */
export const REPORT_PAGE_MAX = 50;
const REPORT_PAGE_DEFAULT = 20;
/**
 * Durable Object calls in flight at once for a summary page (a Worker has 6 simultaneous
 * connections).
 */
const FAN_OUT = 6;

const PageQuery = z.strictObject({
  cursor: z.string().min(1).max(1024).optional(),
  limit: z.coerce.number().int().min(1).max(REPORT_PAGE_MAX).optional(),
});

const iso = (ms: number) => new Date(ms).toISOString();
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
async function calibrationsOf(
  store: AppEnv["Variables"]["store"],
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
  return {
    tenant: data.tenant,
    session: data.session,
    created_at: iso(data.created_at),
    last_active: iso(data.last_active),
    mode: modeOf(data),
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
            })),
            decisions_total: last.decisions_total,
          },
  };
}

type SessionRow = ReturnType<typeof totalsView> & {
  session: string;
  created_at: string;
  last_active: string;
  mode: "live" | "shadow" | null;
};

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
    estimate_basis: all.every((b) => b.estimate_basis === "modelled")
      ? ("modelled" as const)
      : all.some((b) => b.estimate_basis === "modelled")
        ? ("mixed" as const)
        : ("tokens_removed" as const),
  };
}

/** `run` over `items`, at most `limit` at once, results in the order of `items`. */
async function mapBounded<T, U>(
  items: readonly T[],
  limit: number,
  run: (item: T) => Promise<U>,
): Promise<U[]> {
  const out: U[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await run(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

export const sessionReportRoutes = new Hono<AppEnv>().get("/:id/report", async (c) => {
  const ref = refOf(c);
  const data = await c.var.store.sessionReport(ref);
  if (data === null)
    throw new OffloadError(
      "not_found",
      `no session ${JSON.stringify(ref.session)} for this tenant`,
      { path: "session" },
    );
  const calibration = await calibrationsOf(c.var.store, ref.tenant);
  return c.json(sessionReportView(data, calibration), 200, { "cache-control": "no-store" });
});

export const tenantReportRoutes = new Hono<AppEnv>().get("/report", async (c) => {
  const query = validate(PageQuery, c.req.query(), "query");
  const { store, tenant } = c.var;
  const page = await store.listSessions(tenant, {
    limit: query.limit ?? REPORT_PAGE_DEFAULT,
    ...(query.cursor === undefined ? {} : { cursor: query.cursor }),
  });
  const reports = await mapBounded(page.sessions, FAN_OUT, (s) =>
    store.sessionReport({ tenant, session: s.session }, { turns: false }),
  );
  const rows: SessionRow[] = [];
  for (const data of reports) {
    if (data === null) continue; // listed by the lagging index, gone from the authority
    rows.push({
      session: data.session,
      created_at: iso(data.created_at),
      last_active: iso(data.last_active),
      mode: modeOf(data),
      ...totalsView(data),
    });
  }
  return c.json(
    {
      tenant,
      sessions: rows,
      totals: pageTotals(rows),
      missing: reports.length - rows.length,
      calibration: await calibrationsOf(store, tenant).then((c) =>
        c === null ? null : calibrationView(c),
      ),
      cursor: page.cursor,
      consistency: "eventual" as const,
    },
    200,
    { "cache-control": "no-store" },
  );
});
