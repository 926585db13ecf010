/**
 * One corpus session replayed through the proxy, call by call, as the replay drives it: the client sends the
 * replay's own request for each call (`requestFor`: the full history, the cached client's advancing
 * breakpoint on its last block, or none), and the fake answers with the corpus's next assistant message,
 * unless that message quotes a result the request no longer holds in full: then, as the replay assumes, the
 * model first calls recall_tool_result (a query for the quote, one call per missing reference, in one
 * message) and the proxy's hop gets the corpus message. A reference with no mem_id to recall is lost.
 */
import { RECALL_TOOL_NAME } from "../../../src/core/recall-tool.ts";
import { readSse } from "../../../src/proxy/sse.ts";
import { addUsage, overlayUsage } from "../../../src/proxy/usage.ts";
import { textOfResult } from "../../../src/replay/blocks.ts";
import { resultsOf } from "../../../src/replay/policy.ts";
import { detectReferences, type Reference } from "../../../src/replay/references.ts";
import { available, requestFor } from "../../../src/replay/run.ts";
import type { Client, ReplaySession, Request } from "../../../src/replay/types.ts";
import type { AnswerBlock } from "../billing/counter.ts";
import type { BillingFake, Script } from "../billing-fake.ts";

/** The id the replay gives a recall call for a source result (the fake uses the same). */
const recallId = (source: string) => `toolu_replay_recall_${source}`;

export interface DriveOptions {
  proxy: string;
  key: string;
  /** The request's config layer (`x-offload-config`). */
  config: Record<string, unknown>;
  model: string;
  client: Client;
  /** Proxy session and fake conversation. */
  conversation: string;
  /** Seconds the fake's clock moves before each client call. */
  gapSeconds: number;
  stream?: boolean;
}

export interface SessionRun {
  conversation: string;
  client_calls: number;
  provider_calls: number;
  hops: number;
  recalls: number;
  lost: number;
  /** Sum of `saved_usd` over the calls' `x-offload-summary` headers. */
  claimed_saved_usd: number;
  /** Client calls whose usage (as the client got it) differs from the sum the fake billed for them. */
  usage_mismatches: number;
  /** The fake's call numbers of the recall hops (the provider calls after a client call's first). */
  hop_seqs: number[];
  /**
   * The session report's figures after the last call: the estimated saving (net of the hops' billed
   * calls), and the billed ones (the fake's usage as the proxy read it: bill, counterfactual, saving).
   */
  report: {
    saved_usd: number;
    billed_usd: number;
    counterfactual_usd: number;
    billed_saved_usd: number;
  };
}

function answersRecall(message: Request["messages"][number] | undefined): boolean {
  return (
    message?.role === "user" &&
    Array.isArray(message.content) &&
    message.content.some(
      (b) => b.type === "tool_result" && String(b.tool_use_id).startsWith("toolu_replay_recall_"),
    )
  );
}

/** The fake's script for the call whose answer is `session.messages[n]`. */
function scriptFor(session: ReplaySession, n: number, refs: Reference[], run: SessionRun): Script {
  const m = session.messages[n]!;
  const content: AnswerBlock[] =
    typeof m.content === "string"
      ? [{ type: "text", text: m.content }]
      : (m.content as AnswerBlock[]);
  return (call) => {
    const request = call.json as unknown as Request;
    if (answersRecall(request.messages[request.messages.length - 1])) return { content };
    const sent = resultsOf(request);
    const declared = (request.tools ?? []).some(
      (t) => (t as { name?: unknown }).name === RECALL_TOOL_NAME,
    );
    const calls: AnswerBlock[] = [];
    for (const ref of refs) {
      if (available(sent, ref)) continue;
      const source = ref.sources[0]!;
      const memId = declared
        ? ((sent.get(source) ?? [])
            .map((b) => /trm_[0-9a-f]{24}/.exec(textOfResult(b.content)))
            .find((m) => m !== null) ?? null)
        : null;
      if (memId === null) {
        run.lost++;
        continue;
      }
      calls.push({
        type: "tool_use",
        id: recallId(source),
        name: RECALL_TOOL_NAME,
        input: { mem_id: memId[0], query: ref.quote },
      });
    }
    run.recalls += calls.length;
    return { content: calls.length > 0 ? calls : content };
  };
}

async function usageOf(res: Response, stream: boolean): Promise<unknown> {
  if (!stream) return ((await res.json()) as { usage?: unknown }).usage;
  let start: unknown = null;
  let delta: unknown = null;
  for await (const ev of readSse(res.body!)) {
    if (ev.data === "") continue; // a comment (the proxy's closing note)
    const d = JSON.parse(ev.data) as {
      type?: string;
      message?: { usage?: unknown };
      usage?: unknown;
    };
    if (d.type === "message_start") start = d.message?.usage;
    if (d.type === "message_delta") delta = d.usage; // cumulative: the last one holds
    if (d.type === "error") throw new Error(`stream error: ${ev.data}`);
  }
  return overlayUsage(start, delta);
}

const USAGE_FIELDS = [
  "input_tokens",
  "cache_creation_input_tokens",
  "cache_read_input_tokens",
  "output_tokens",
] as const;

/** Drives one session through the proxy to the fake; the fake's bill keeps the provider calls. */
export async function driveSession(
  session: ReplaySession,
  fake: BillingFake,
  o: DriveOptions,
): Promise<SessionRun> {
  const run: SessionRun = {
    conversation: o.conversation,
    client_calls: 0,
    provider_calls: 0,
    hops: 0,
    recalls: 0,
    lost: 0,
    claimed_saved_usd: 0,
    usage_mismatches: 0,
    hop_seqs: [],
    report: { saved_usd: 0, billed_usd: 0, counterfactual_usd: 0, billed_saved_usd: 0 },
  };
  const refs = detectReferences(session);
  for (const n of session.calls) {
    if (session.messages[n]?.role !== "assistant") continue;
    fake.clock.advance(o.gapSeconds);
    fake.script = scriptFor(
      session,
      n,
      refs.filter((r) => r.turn === n),
      run,
    );
    const before = fake.calls.length;
    const request = requestFor(session, n, o.model, o.client);
    const res = await fetch(`${o.proxy}/anthropic/v1/messages`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "anthropic-version": "2023-06-01",
        "x-api-key": "sk-ant-agreement-fake",
        "x-offload-key": o.key,
        "x-offload-session": o.conversation,
        "x-offload-config": JSON.stringify(o.config),
        "x-fake-conversation": o.conversation,
      },
      body: JSON.stringify(o.stream ? { ...request, stream: true } : request),
    });
    if (!res.ok)
      throw new Error(`${o.conversation} call ${n}: HTTP ${res.status} ${await res.text()}`);
    const summary = JSON.parse(res.headers.get("x-offload-summary") ?? "{}") as {
      saved_usd?: number;
    };
    const usage = (await usageOf(res, o.stream === true)) as Record<string, number>;
    const billed = fake.calls.slice(before);
    const sum = billed.reduce<unknown>((s, c) => addUsage(s, c.usage), null) as Record<
      string,
      number
    >;
    if (USAGE_FIELDS.some((f) => usage?.[f] !== sum?.[f])) run.usage_mismatches++;
    run.client_calls++;
    run.provider_calls += billed.length;
    run.hops += Math.max(0, billed.length - 1);
    run.hop_seqs.push(...billed.slice(1).map((c) => c.seq));
    run.claimed_saved_usd += summary.saved_usd ?? 0;
  }
  fake.script = () => ({ content: [{ type: "text", text: "ok" }] });
  const rep = await fetch(`${o.proxy}/v1/sessions/${encodeURIComponent(o.conversation)}/report`, {
    headers: { authorization: `Bearer ${o.key}` },
  });
  if (rep.ok) {
    const t = (
      (await rep.json()) as { totals: { saved_usd: number; billed: Record<string, number> } }
    ).totals;
    run.report = {
      saved_usd: t.saved_usd,
      billed_usd: t.billed.usd!,
      counterfactual_usd: t.billed.counterfactual_usd!,
      billed_saved_usd: t.billed.saved_usd!,
    };
  } else if (rep.status !== 404) throw new Error(`report: HTTP ${rep.status} ${await rep.text()}`);
  return run;
}
