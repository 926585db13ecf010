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
import type { AppEnv } from "../http/context.ts";
import { validate } from "../http/errors.ts";
import {
  calibrationsOf,
  calibrationView,
  pageTotals,
  type SessionRow,
  sessionReport,
  sessionRow,
} from "../report.ts";
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

export const sessionReportRoutes = new Hono<AppEnv>().get("/:id/report", async (c) =>
  c.json(await sessionReport({ store: c.var.store, session: refOf(c) }), 200, {
    "cache-control": "no-store",
  }),
);

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
    rows.push(sessionRow(data));
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
