/**
 * GET /v1/sessions (the tenant's sessions, from the KV index), GET /v1/sessions/:id (turns, tool
 * results, totals, from the session's Durable Object), DELETE /v1/sessions/:id (state, bodies and
 * index entries).
 */
import { Hono } from "hono";
import { z } from "zod";
import { OffloadError } from "../errors.ts";
import { type AppEnv, effectiveConfig, type Settings } from "../http/context.ts";
import { validate } from "../http/errors.ts";
import type { SessionDetail } from "../store/ports.ts";
import { expiresAt } from "../store/state.ts";
import { refOf } from "./session-param.ts";

const ListQuery = z.strictObject({
  // Cursors the index returns are short; a longer one cannot be one of them.
  cursor: z.string().min(1).max(1024).optional(),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
});

const iso = (ms: number) => new Date(ms).toISOString();

export function sessionView(detail: SessionDetail, settings: Settings) {
  const count = { kept: 0, compacted: 0, offloaded: 0 };
  let offloadedChars = 0;
  const attachments = detail.records.flatMap((r) =>
    r.attachment === undefined
      ? []
      : [
          {
            id: r.tool_use_id,
            kind: r.attachment.kind,
            action: r.action === "kept" ? ("native" as const) : ("replaced" as const),
            format: r.attachment.format,
            bytes: r.attachment.bytes,
            arrived: r.attachment.arrived,
            native_tokens: r.attachment.native_tokens,
            sent_tokens:
              r.action === "kept" ? (r.attachment.native_tokens ?? 0) : r.rendered_tokens,
            turn: r.turn,
            reason: r.reason,
            ...(r.attachment.failed === undefined ? {} : { error: r.attachment.failed }),
          },
        ],
  );
  const toolResults = detail.records
    .filter((r) => r.attachment === undefined)
    .map((r) => {
      count[r.action]++;
      if (r.action !== "kept") offloadedChars += r.chars;
      return {
        tool_use_id: r.tool_use_id,
        tool_name: r.tool_name,
        tier: r.tier,
        action: r.action,
        mem_id: r.mem_id,
        chars: r.chars,
        tokens: r.tokens,
        sent_tokens: r.action === "kept" ? r.tokens : r.rendered_tokens,
        kind: r.kind,
        turn: r.turn,
        reason: r.reason,
        recalls: r.mem_id === null ? 0 : (detail.recalls_by_mem_id[r.mem_id] ?? 0),
        gate: r.gate,
      };
    });
  const sum = (f: (t: SessionDetail["turns"][number]) => number) =>
    detail.turns.reduce((n, t) => n + f(t), 0);
  const before = sum((t) => t.tokens_before);
  const after = sum((t) => t.tokens_after);
  const expires = expiresAt(detail.last_active, settings.retentionSeconds);
  return {
    tenant: detail.tenant,
    session: detail.session,
    created_at: iso(detail.created_at),
    last_active: iso(detail.last_active),
    expires_at: expires === null ? null : iso(expires),
    recall_declared: detail.recall_declared,
    config: detail.config,
    effective_config: effectiveConfig(settings, detail.config),
    totals: {
      calls: detail.calls,
      turns_logged: detail.turns.length,
      tool_results: toolResults.length,
      ...count,
      recalls: detail.recalls,
      offloaded_chars: offloadedChars,
      tokens_before: before,
      tokens_after: after,
      saved_tokens: before - after,
      saved_usd: Math.round(sum((t) => t.saved_usd) * 1e9) / 1e9,
      proxy_hops: sum((t) => t.proxy?.hops ?? 0),
    },
    tool_results: toolResults,
    attachments,
    turns: detail.turns,
  };
}

export const sessionRoutes = new Hono<AppEnv>()
  .get("/", async (c) => {
    const query = validate(ListQuery, c.req.query(), "query");
    const page = await c.var.store.listSessions(c.var.tenant, query);
    return c.json({
      sessions: page.sessions.map((s) => ({ session: s.session, created_at: iso(s.created_at) })),
      cursor: page.cursor,
      consistency: "eventual" as const,
    });
  })
  .get("/:id", async (c) => {
    const ref = refOf(c);
    const detail = await c.var.store.describeSession(ref);
    if (detail === null)
      throw new OffloadError(
        "not_found",
        `no session ${JSON.stringify(ref.session)} for this tenant`,
        { path: "session" },
      );
    return c.json(sessionView(detail, c.var.settings));
  })
  .delete("/:id", async (c) => {
    await c.var.store.deleteSession(refOf(c));
    return c.body(null, 204);
  });
