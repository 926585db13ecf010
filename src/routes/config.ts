/**
 * PUT /v1/sessions/:id/config — the session's own config layer, validated by the one config schema.
 * It replaces the previous layer (`{}` clears it); the deployment's layer below it and a request's
 * `x-offload-config` above it still apply.
 */
import { Hono } from "hono";
import { parseConfigPatch } from "../config.ts";
import { parseJsonBody, readText } from "../http/body.ts";
import { type AppEnv, checkConfigCeilings, effectiveConfig } from "../http/context.ts";
import { refOf } from "./session-param.ts";

export const configRoutes = new Hono<AppEnv>().put("/:id/config", async (c) => {
  const ref = refOf(c);
  const { store, settings } = c.var;
  const patch = parseConfigPatch(
    parseJsonBody(await readText(c.req.raw, settings.controlBodyBytes)),
    "config",
  );
  checkConfigCeilings(settings, patch, "config");
  await store.setConfig(ref, patch);
  return c.json({
    tenant: ref.tenant,
    session: ref.session,
    config: patch,
    effective_config: effectiveConfig(settings, patch),
  });
});
