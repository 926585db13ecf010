/**
 * POST /v1/sessions/:id/recall — the model's recall_tool_result arguments → the text to put in the
 * tool result. Wrong types or unknown fields are the client's bug (400); a model's mistake (unknown
 * mem_id, a path that does not parse, an argument the session's recall mode does not offer) is an
 * `is_error` answer the client passes on to the model.
 */
import { Hono } from "hono";
import type { RecallStore } from "../core/ports.ts";
import { recallMany } from "../core/recall-many.ts";
import type { SessionRef } from "../core/types.ts";
import { parseJsonBody, readText } from "../http/body.ts";
import { type AppEnv, effectiveConfig, headerConfig } from "../http/context.ts";
import { validate } from "../http/errors.ts";
import { RecallRequestSchema } from "./schemas/session.ts";
import { refOf } from "./session-param.ts";

export const recallRoutes = new Hono<AppEnv>().post("/:id/recall", async (c) => {
  const ref = refOf(c);
  const requestLayer = headerConfig(c.req.header("x-offload-config"));
  const { store, settings } = c.var;
  const args = validate(
    RecallRequestSchema,
    parseJsonBody(await readText(c.req.raw, settings.controlBodyBytes)),
  );
  // The session's config and the body are read at once (the body's key follows from the scope).
  const body = typeof args.mem_id === "string" ? early(store, ref, args.mem_id) : store;
  const config = effectiveConfig(settings, await store.getConfig(ref), requestLayer);
  const answer = await recallMany({
    store: body,
    session: ref,
    ...args,
    mode: config.tool_result_recall_mode,
    max_answer_chars: config.tool_result_recall_max_chars,
    default_window: config.tool_result_recall_window_chars,
  });
  return c.json(answer);
});

/** The store with one body's read already started (a failure surfaces where it is read). */
function early(store: RecallStore, ref: SessionRef, memId: string): RecallStore {
  const read = store.getBody(ref, memId);
  read.catch(() => {});
  return {
    getBody: (r, m) =>
      r.tenant === ref.tenant && r.session === ref.session && m === memId
        ? read
        : store.getBody(r, m),
    noteRecall: (r, m) => store.noteRecall(r, m),
    ...(store.whyMissing === undefined ? {} : { whyMissing: (r, m) => store.whyMissing!(r, m) }),
  };
}
