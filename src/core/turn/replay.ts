/**
 * Earlier decisions: a result with a sticky record renders from it, whether the client sends the
 * full history (the body is replaced by the recorded text) or the one we returned (our text is
 * already there). A body that is neither, under a decided id, is a reused id: kept as sent, and
 * said so.
 */
import type { ToolResultSite } from "../formats/types.ts";
import { bodyDigest } from "../memid.ts";
import { estimateTokens } from "../tokens.ts";
import type { ResultRecord } from "../types.ts";
import { decisionOf, type Outcome, rawLength, type TurnContext, textOf } from "./context.ts";

export async function replay(
  ctx: TurnContext,
  site: ToolResultSite,
  record: ResultRecord,
): Promise<Outcome> {
  const decision = decisionOf(site, record, true);
  if (record.action === "kept" || record.rendered === null) return { decision };
  const rawLen = rawLength(site);
  // Already our text? Only a short content can be (an escape takes at most 6 raw chars per unit).
  if (rawLen <= record.rendered.length * 6 + 64 && textOf(ctx, site) === record.rendered)
    return { decision };
  if (rawLen === record.raw_chars) return { decision, replacement: record.rendered };
  // Same length check failed (the client re-encoded it, or reused the id): compare the body itself.
  const text = textOf(ctx, site);
  const digest = await bodyDigest(ctx.secret, ctx.ref.tenant, ctx.ref.session, text);
  if (digest === record.fingerprint) return { decision, replacement: record.rendered };
  ctx.problems.push({
    code: "conflict",
    tool_use_id: site.tool_use_id,
    message: "tool_use_id reused with a different body; kept as sent",
  });
  return {
    decision: {
      ...decision,
      action: "kept",
      sent_tokens: estimateTokens(text.length),
      reason: "conflict: the id was decided for a different body",
    },
  };
}

/** Two records decide a result the same way (a concurrent turn's record renders the same bytes). */
export function sameDecision(a: ResultRecord, b: ResultRecord): boolean {
  return a.action === b.action && a.rendered === b.rendered;
}
