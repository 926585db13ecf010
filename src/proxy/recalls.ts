/**
 * Running the model's recall_tool_result calls for the proxy: the core's `recall` with the session's recall
 * settings. A model's mistake (arguments that are not a JSON object, an unknown mem_id) and a ledger that
 * cannot be read right now are answers the model reads, never a failed client call. Replaying a remembered
 * call (`count: false`) throws instead: its answer must have the same bytes as before, or not be sent, and the
 * caller leaves it out.
 */
import type { RecallStore } from "../core/ports.ts";
import { recallMany } from "../core/recall-many.ts";
import type { SessionRef } from "../core/types.ts";
import { isOffloadError } from "../errors.ts";
import type { RecallParams, RememberedCall } from "./port.ts";

export interface RecallResult {
  id: string;
  content: string;
  is_error: boolean;
}

/** A store that reads bodies but does not count: a remembered answer replayed on a later turn is not a new recall. */
function uncounted(store: RecallStore): RecallStore {
  return {
    getBody: (ref, memId) => store.getBody(ref, memId),
    noteRecall: async () => {},
    ...(store.whyMissing === undefined
      ? {}
      : { whyMissing: (ref, memId) => store.whyMissing!(ref, memId) }),
  };
}

function parseArguments(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text === "" ? "{}" : text);
    return typeof v === "object" && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

export async function runRecalls(
  calls: readonly RememberedCall[],
  ctx: { store: RecallStore; ref: SessionRef; params: RecallParams; count: boolean },
): Promise<RecallResult[]> {
  const store = ctx.count ? ctx.store : uncounted(ctx.store);
  const out: RecallResult[] = [];
  // One at a time: each answer may hold up to 50 KB, and an isolate should not read several bodies at once.
  for (const call of calls) {
    const args = parseArguments(call.arguments);
    if (args === null) {
      out.push({
        id: call.id,
        content: 'The arguments must be a JSON object, e.g. {"mem_id": "trm_…", "query": "…"}.',
        is_error: true,
      });
      continue;
    }
    try {
      const answer = await recallMany({
        store,
        session: ctx.ref,
        mem_id: args.mem_id,
        query: args.query,
        queries: args.queries,
        json_paths: args.json_paths,
        window: args.window,
        offset: args.offset,
        max_chars: args.max_chars,
        json_path: args.json_path,
        mode: ctx.params.mode,
        max_answer_chars: ctx.params.max_chars,
        default_window: ctx.params.window,
      });
      out.push({ id: call.id, content: answer.content, is_error: answer.is_error });
    } catch (e) {
      // A replayed answer must come out with the same bytes or not at all (the caller then leaves it out).
      if (!ctx.count) throw e;
      // A live call always gets an answer: whatever failed, the model can try again or read another way.
      const transient = isOffloadError(e) && e.type === "storage_error";
      out.push({
        id: call.id,
        content: transient
          ? "The stored result could not be read just now; call recall_tool_result again."
          : "recall_tool_result could not answer this call; read a slice with offset and max_chars instead.",
        is_error: true,
      });
    }
  }
  return out;
}
