/**
 * POST /v1/sessions/:id/usage — a client of the compact route (no provider answer passes through
 * us) posts the provider's usage back for the turn it belongs to. Validated; idempotent per turn:
 * the first report stands, the same numbers again are a no-op, different ones a 409.
 */
import { Hono } from "hono";
import { turnUsage, usageUsd } from "../core/billing.ts";
import { resolveModel } from "../core/pricing.ts";
import { OffloadError } from "../errors.ts";
import { parseJsonBody, readText } from "../http/body.ts";
import type { AppEnv } from "../http/context.ts";
import { validate } from "../http/errors.ts";
import {
  ProviderUsageListSchema,
  ProviderUsageSchema,
  UsageRequestSchema,
} from "./schemas/usage.ts";
import { refOf } from "./session-param.ts";

export const usageRoutes = new Hono<AppEnv>().post("/:id/usage", async (c) => {
  const ref = refOf(c);
  const { store, settings } = c.var;
  const raw = parseJsonBody(await readText(c.req.raw, settings.controlBodyBytes));
  // The usage's own branch first, so a bad field is named where it is (a union would only say
  // "usage").
  const given = (raw as { usage?: unknown } | null)?.usage;
  if (given !== undefined)
    validate(Array.isArray(given) ? ProviderUsageListSchema : ProviderUsageSchema, given, "usage");
  const body = validate(UsageRequestSchema, raw);
  const usages = Array.isArray(body.usage) ? body.usage : [body.usage];
  const usage = turnUsage(body.format, usages, body.model ?? null, "client");
  if (usage === null)
    throw new OffloadError("invalid_argument", "the usage object holds no token counts", {
      path: "usage",
    });
  const key =
    body.seq !== undefined && body.seq !== null ? { seq: body.seq } : { turn: body.turn! };
  const outcome = await store.recordUsage(ref, key, usage);
  if (outcome === null)
    throw new OffloadError(
      "not_found",
      `no session ${JSON.stringify(ref.session)} for this tenant`,
      { path: "session" },
    );
  if (outcome.status === "unknown_turn")
    throw new OffloadError(
      "not_found",
      `no logged turn ${"seq" in key ? `with seq ${key.seq}` : key.turn} in this session (the log keeps the last 1,000)`,
      { path: "seq" in key ? "seq" : "turn" },
    );
  if (outcome.status === "conflict")
    throw new OffloadError(
      "conflict",
      `turn line ${outcome.seq} already has a different usage; the first report stands`,
      { path: "usage" },
    );
  const price = resolveModel(usage.model ?? outcome.estimate?.model);
  return c.json({
    tenant: ref.tenant,
    session: ref.session,
    seq: outcome.seq,
    status: outcome.status,
    billed_usd: price === null ? null : Math.round(usageUsd(price, usage.tokens) * 1e9) / 1e9,
  });
});
