/**
 * GET /v1/sessions/:id/memories/:mem_id — what the ledger holds under a mem_id (size, kind,
 * structural index), without the body. Read from the KV index; a miss (KV lags) falls back to the
 * R2 object's metadata.
 */
import { Hono } from "hono";
import { OffloadError } from "../errors.ts";
import type { AppEnv } from "../http/context.ts";
import { refOf } from "./session-param.ts";

export const memoryRoutes = new Hono<AppEnv>().get("/:id/memories/:mem_id", async (c) => {
  const ref = refOf(c);
  const memId = c.req.param("mem_id");
  const info = await c.var.store.statBody(ref, memId);
  if (info === null)
    throw new OffloadError(
      "not_found",
      `no offloaded result has mem_id ${JSON.stringify(memId)} in this session`,
      { path: "mem_id" },
    );
  const { meta } = info;
  return c.json({
    mem_id: meta.mem_id,
    tool_use_id: meta.tool_use_id,
    tool_name: meta.tool_name,
    chars: meta.chars,
    tokens: meta.tokens,
    kind: meta.kind,
    outline: meta.outline,
    turn: meta.turn,
    source: info.source,
  });
});
