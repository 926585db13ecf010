/** The session a route addresses: the authenticated tenant plus the `:id` path parameter. */
import type { Context } from "hono";
import { sessionRef } from "../core/session.ts";
import type { SessionRef } from "../core/types.ts";
import type { AppEnv } from "../http/context.ts";

export function refOf(c: Context<AppEnv>): SessionRef {
  return sessionRef({ tenant: c.var.tenant, session: c.req.param("id") ?? "" });
}
