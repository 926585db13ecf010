/** GET /healthz: liveness, no auth, touches no storage. */
import { Hono } from "hono";
import type { AppEnv } from "../http/context.ts";

export const healthRoutes = new Hono<AppEnv>().get("/healthz", (c) =>
  c.json({ ok: true as const }),
);
