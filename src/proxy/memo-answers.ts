/**
 * The answers of remembered recall calls, computed again from the ledger with the params they were
 * first answered with (so they come out with the same bytes), for splicing into a later request.
 */
import type { SessionRef } from "../core/types.ts";
import { isOffloadError } from "../errors.ts";
import type { ProxyMemo, ProxyStore } from "./port.ts";
import { type RecallResult, runRecalls } from "./recalls.ts";

/**
 * Every memo's answers by call id. A memo that cannot be replayed just now is left out (logged),
 * whatever the failure: the request is still valid as the client holds it, only the model's recall
 * answer is missing, and a remembered call must never fail every later turn of its conversation.
 */
export async function memoAnswers(
  memos: readonly ProxyMemo[],
  ctx: { store: ProxyStore; ref: SessionRef; log: (line: string) => void },
): Promise<Map<string, RecallResult>> {
  const answers = new Map<string, RecallResult>();
  for (const memo of memos) {
    try {
      const replayed = await runRecalls(memo.calls, {
        store: ctx.store,
        ref: ctx.ref,
        params: memo.params,
        count: false,
      });
      for (const r of replayed) answers.set(r.id, r);
    } catch (e) {
      ctx.log(
        `[edge-offload] a remembered recall could not be replayed (${failureName(e)}); the request goes without it`,
      );
    }
  }
  return answers;
}

/** What failed, for a log line: an error's type or name, never its message (it may quote a body). */
export function failureName(e: unknown): string {
  return isOffloadError(e) ? e.type : e instanceof Error ? e.name : "error";
}
