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
import { OffloadError } from "../errors.ts";
import type { AppEnv } from "../http/context.ts";
import { validate } from "../http/errors.ts";
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

function turnView(t: LoggedTurn) {
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
    saved_usd: t.shadow ? 0 : t.saved_usd,
    would_save_tokens: t.shadow ? saved : 0,
    would_save_usd: t.shadow ? t.saved_usd : 0,
    recalls: t.recalls,
    gate_fired: t.gate_fired,
    gate_declined: t.gate_declined,
    errors: t.errors,
  };
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

export function sessionReportView(data: SessionReportData) {
  const last = data.last_turn;
  return {
    tenant: data.tenant,
    session: data.session,
    created_at: iso(data.created_at),
    last_active: iso(data.last_active),
    mode: modeOf(data),
    last_turn_at: data.latest === null ? null : iso(data.latest.at),
    totals: totalsView(data),
    turns: data.turns.map(turnView),
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
  return c.json(sessionReportView(data), 200, { "cache-control": "no-store" });
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
      cursor: page.cursor,
      consistency: "eventual" as const,
    },
    200,
    { "cache-control": "no-store" },
  );
});
