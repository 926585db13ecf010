/**
 * One agreement scenario: corpus sessions driven call by call by one kind of client (clients.ts), through
 * the proxy or the compact route, to the billing fake of the client's provider, three times: offload off (the
 * bill the client pays without us: the true counterfactual), on with nothing to change (its claimed saving
 * must be exactly 0, its bill the same), and on at the defaults. The truth is the fake's bills; the claims are
 * the session reports'.
 *
 * The fake model answers each call with the corpus's next assistant message, unless that message quotes a
 * result the request no longer holds in full: then it first calls recall_tool_result (proxy clients only; a
 * compact-route client runs no recall loop, so its model answers without). The clock moves `gap` seconds
 * before each client call.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RECALL_TOOL_NAME } from "../../../src/core/recall-tool.ts";
import { readSse } from "../../../src/proxy/sse.ts";
import { detectReferences, type Reference } from "../../../src/replay/references.ts";
import type { ReplaySession } from "../../../src/replay/types.ts";
import type { AnswerBlock } from "../billing/counter.ts";
import type { BillingFake, Format, Script } from "../billing-fake.ts";
import { type LocalWorker, startProxyWorker } from "../worker.ts";
import {
  answersRecall,
  type Client,
  clientRequest,
  declaresRecall,
  providerHeaders,
  proxyPath,
  RECALL_ID_PREFIX,
  resultText,
} from "./clients.ts";

export interface Scenario {
  name: string;
  /** What it stands for, in a few words (the table's first column says the rest). */
  about: string;
  client: Client;
  route: "proxy" | "compact";
  /** Compact route: the usage of the call on which the first stub lands is never posted. */
  missingUsage?: boolean;
  /** Compact route: the Worker restarts on its own storage halfway through each session. */
  restart?: boolean;
  /**
   * Compact route: the client says it sends the betas the summary names (`x-offload-sends-betas`) and adds
   * them to its provider call (`anthropic-beta`).
   */
  sendsBetas?: boolean;
  /** Each session ends this many calls after its first stub lands (a realistic ending). */
  endAfterStub?: number;
  /** At most this many client calls per session. */
  maxCalls?: number;
  sessions: { file: string; session: ReplaySession }[];
}

export type RunKind = "off" | "same" | "on";

/** The request config layer of each run. */
export const RUN_CONFIG: Record<RunKind, Record<string, unknown>> = {
  off: { tool_result_compaction_enabled: false },
  same: {
    tool_result_compaction_enabled: true,
    tool_result_offload_enabled: true,
    tool_result_compaction_size_chars: 1_000_000_000,
    tool_result_large_offload_threshold_chars: 1_000_000_000,
    // the cache anchor (a default) changes the request too: off, so that nothing changes
    tool_result_medium_tier: "off",
  },
  on: { tool_result_compaction_enabled: true, tool_result_offload_enabled: true },
};

/** What the session report claims (null for an "off" run: nothing is logged). */
export interface Claim {
  saved_usd: number;
  estimate_basis: string;
  billed_usd: number;
  billed_saved_usd: number;
  counterfactual_usd: number;
  complete: boolean;
  turns_measured: number;
  turns_unmeasured: number;
  removed: { tokens: number; results: number; measured: number };
  model_check: { turns: number; read_share_error: number | null };
  gate_fired: number;
}

/** The restart check (compact route): what a retried usage got, and whether seqs stayed unique. */
export interface RestartCheck {
  /** The retried usage's answer after the restart (200 "unchanged" when it survived). */
  retry: string;
  /** A seq was issued twice in the session. */
  duplicate_seq: boolean;
  /** Usage posts answered "recorded", and turns the report measured. */
  recorded: number;
  measured: number;
}

export interface SessionRun {
  file: string;
  session: string;
  calls: number;
  /** The fake's bill for every provider call of the run (recall hops included). */
  bill: number;
  claim: Claim | null;
  /** Results offloaded or shortened (the summaries' counts, first time each). */
  offloads: number;
  /** Client calls whose request declared the recall tool in a system message (the summary's beta). */
  declared_inline: number;
  /** Provider calls the fake model answered with a recall (the hops the proxy made). */
  hops: number;
  /** Chat stream chunks that carried usage the client did not ask for. */
  usage_leaks: number;
  /** Compact route: usage posts not answered "recorded" (their answers). */
  usage_refused: string[];
  restart?: RestartCheck;
}

export interface ScenarioRun {
  scenario: Scenario;
  runs: Record<RunKind, SessionRun[]>;
}

export interface Env {
  fake: BillingFake;
  worker: LocalWorker;
  key: (run: string) => string;
  /** Restart the Worker on its storage (compact-route restart scenarios). */
  restart?: () => Promise<void>;
}

type Json = Record<string, unknown>;

function contentOf(m: ReplaySession["messages"][number]): AnswerBlock[] {
  return typeof m.content === "string"
    ? [{ type: "text", text: m.content }]
    : (m.content as unknown as AnswerBlock[]);
}

/**
 * The fake model's script for the call answered by `session.messages[n]`: that message, after recalling
 * (`recalls`) each result it quotes that the request no longer holds in full.
 */
export function scriptFor(
  format: Format,
  session: ReplaySession,
  n: number,
  refs: readonly Reference[],
  recalls: boolean,
): Script {
  const content = contentOf(session.messages[n]!);
  return (call) => {
    const json = call.json;
    if (!recalls || answersRecall(format, json)) return { content };
    const calls: AnswerBlock[] = [];
    for (const ref of refs) {
      if (ref.sources.some((id) => resultText(format, json, id)?.includes(ref.quote))) continue;
      const source = ref.sources[0]!;
      const memId = declaresRecall(format, json)
        ? /trm_[0-9a-f]{24}/.exec(resultText(format, json, source) ?? "")
        : null;
      if (memId === null) continue;
      calls.push({
        type: "tool_use",
        id: `${RECALL_ID_PREFIX}${source}`,
        name: "recall_tool_result",
        input: { mem_id: memId[0], query: ref.quote },
      });
    }
    return { content: calls.length > 0 ? calls : content };
  };
}

/** The calls of a session that the corpus answers (its assistant messages' indexes). */
export function answeredCalls(session: ReplaySession): number[] {
  return session.calls.filter((n) => session.messages[n]?.role === "assistant");
}

/** The next client call: the fake's clock 30 s on, its model scripted to answer `session.messages[n]`. */
export function nextCall(
  fake: BillingFake,
  format: Format,
  session: ReplaySession,
  n: number,
  refs: readonly Reference[],
  recalls: boolean,
): void {
  fake.clock.advance(30);
  fake.script = scriptFor(
    format,
    session,
    n,
    refs.filter((r) => r.turn === n),
    recalls,
  );
}

/** Reads a client's answer to its end; counts Chat chunks with usage the client did not ask for. */
async function consume(res: Response, client: Client): Promise<{ usage: unknown; leaks: number }> {
  if (!client.stream) return { usage: ((await res.json()) as Json).usage, leaks: 0 };
  let leaks = 0;
  for await (const ev of readSse(res.body!)) {
    if (ev.data === "" || ev.data === "[DONE]") continue;
    const d = JSON.parse(ev.data) as Json;
    if (d.type === "error" || d.error !== undefined) throw new Error(`stream error: ${ev.data}`);
    if (client.format === "openai-chat" && "usage" in d) leaks++;
  }
  return { usage: null, leaks };
}

async function reportOf(env: Env, sid: string, key: string): Promise<Claim | null> {
  const res = await fetch(
    `${env.worker.base}/v1/sessions/${encodeURIComponent(sid)}/report?turns=false`,
    { headers: { authorization: `Bearer ${key}` } },
  );
  if (res.status === 404) return null;
  if (!res.ok) throw new Error(`report: HTTP ${res.status} ${await res.text()}`);
  const t = ((await res.json()) as { totals: Json & { billed: Json } }).totals;
  const b = t.billed;
  return {
    saved_usd: t.saved_usd as number,
    estimate_basis: String(b.estimate_basis),
    billed_usd: b.usd as number,
    billed_saved_usd: b.saved_usd as number,
    counterfactual_usd: b.counterfactual_usd as number,
    complete: b.complete as boolean,
    turns_measured: b.turns_measured as number,
    turns_unmeasured: b.turns_unmeasured as number,
    removed: b.removed as Claim["removed"],
    model_check: b.model_check as Claim["model_check"],
    gate_fired: t.gate_fired as number,
  };
}

/**
 * Drives one session once; `calls` caps the client calls (the "on" run decides it when sessions end
 * after their first stub).
 */
async function driveSession(
  env: Env,
  s: Scenario,
  kind: RunKind,
  item: Scenario["sessions"][number],
  calls: number,
): Promise<SessionRun> {
  const { fake } = env;
  const { session } = item;
  const { client } = s;
  const sid = `${s.name}.${kind}.${session.id}`.replace(/[^A-Za-z0-9._:-]/g, "_").slice(0, 128);
  const key = env.key(`${s.name}.${kind}`);
  const config = JSON.stringify(RUN_CONFIG[kind]);
  const refs = detectReferences(session);
  const from = fake.calls.length;
  const run: SessionRun = {
    file: item.file,
    session: session.id,
    calls: 0,
    bill: 0,
    claim: null,
    offloads: 0,
    declared_inline: 0,
    hops: 0,
    usage_leaks: 0,
    usage_refused: [],
  };
  const seqs: number[] = [];
  let recorded = 0;
  let lastPost: { body: string } | null = null;
  let stubAt = -1;
  const answered = answeredCalls(session);
  for (const n of answered.slice(0, calls)) {
    nextCall(fake, client.format, session, n, refs, s.route === "proxy");
    const request = JSON.stringify(clientRequest(session, n, client, sid));
    let summary: Json;
    if (s.route === "proxy") {
      const res = await fetch(`${env.worker.base}${proxyPath(client.format)}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...providerHeaders(client.format),
          "x-offload-key": key,
          "x-offload-session": sid,
          "x-offload-config": config,
          "x-fake-conversation": sid,
        },
        body: request,
      });
      if (!res.ok) throw new Error(`${sid} call ${n}: HTTP ${res.status} ${await res.text()}`);
      summary = JSON.parse(res.headers.get("x-offload-summary") ?? "{}") as Json;
      run.usage_leaks += (await consume(res, client)).leaks;
    } else {
      const c = await fetch(
        `${env.worker.base}/v1/sessions/${encodeURIComponent(sid)}/compact?format=${client.format}`,
        {
          method: "POST",
          headers: {
            "content-type": "application/json",
            authorization: `Bearer ${key}`,
            "x-offload-config": config,
            ...(s.sendsBetas ? { "x-offload-sends-betas": "true" } : {}),
          },
          body: request,
        },
      );
      if (!c.ok) throw new Error(`${sid} compact ${n}: HTTP ${c.status} ${await c.text()}`);
      const sent = await c.text();
      summary = JSON.parse(c.headers.get("x-offload-summary") ?? "{}") as Json;
      const betas = (summary.anthropic_beta ?? []) as string[];
      const answer = await fetch(`${fake.url}${proxyPath(client.format)}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...providerHeaders(client.format),
          ...(betas.length > 0 ? { "anthropic-beta": betas.join(",") } : {}),
          "x-fake-conversation": sid,
        },
        body: sent,
      });
      if (!answer.ok)
        throw new Error(`${sid} call ${n}: HTTP ${answer.status} ${await answer.text()}`);
      const usage = ((await answer.json()) as Json).usage;
      // The turn's line by its seq when the summary names one (a steady turn's commit follows the
      // answer: then by its turn number).
      // A steady turn's summary names no seq (null): its usage goes by its turn number.
      const seq = (summary.seq ?? undefined) as number | undefined;
      const landing = stubAt < 0 && ((summary.offloaded as number) ?? 0) > 0;
      if (seq !== undefined) seqs.push(seq);
      if (!(s.missingUsage && landing)) {
        const turn = seq === undefined ? { turn: summary.turn } : { seq };
        lastPost = { body: JSON.stringify({ ...turn, format: client.format, usage }) };
        const posted = await postUsage(env, sid, key, lastPost.body);
        if (posted === "recorded") recorded++;
        else run.usage_refused.push(posted);
      }
    }
    run.calls++;
    if (((summary.anthropic_beta ?? []) as string[]).some((b) => b.startsWith("inline-tools-")))
      run.declared_inline++;
    const offloaded = ((summary.offloaded as number) ?? 0) + ((summary.compacted as number) ?? 0);
    if (stubAt < 0 && offloaded > 0) stubAt = run.calls;
    run.offloads = Math.max(run.offloads, offloaded);
    if (s.restart && env.restart !== undefined && run.calls === Math.ceil(answered.length / 2)) {
      await env.restart();
      const retry = lastPost === null ? "none" : await postUsage(env, sid, key, lastPost.body);
      run.restart = { retry, duplicate_seq: false, recorded: 0, measured: 0 };
    }
    if (s.endAfterStub !== undefined && kind === "on" && stubAt > 0)
      if (run.calls >= stubAt + s.endAfterStub) break;
  }
  fake.script = () => ({ content: [{ type: "text", text: "ok" }] });
  run.bill = fake.total(fake.calls.slice(from)).usd;
  run.hops = fake.calls
    .slice(from)
    .filter((c) =>
      c.answer.some((b) => b.type === "tool_use" && b.name === RECALL_TOOL_NAME),
    ).length;
  if (kind !== "off") run.claim = await reportOf(env, sid, key);
  if (run.restart !== undefined) {
    run.restart.duplicate_seq = new Set(seqs).size !== seqs.length;
    run.restart.recorded = recorded;
    run.restart.measured = run.claim?.turns_measured ?? 0;
  }
  return run;
}

async function postUsage(env: Env, sid: string, key: string, body: string): Promise<string> {
  const res = await fetch(`${env.worker.base}/v1/sessions/${encodeURIComponent(sid)}/usage`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body,
  });
  const text = await res.text();
  if (!res.ok)
    return `HTTP ${res.status} ${(JSON.parse(text) as { error?: Json }).error?.path ?? ""}`.trim();
  return String((JSON.parse(text) as Json).status);
}

/**
 * The scenario's three runs, each over every session in turn (sessions of one run share the fake's cache,
 * as a tenant's sessions share the provider's); "on" first, as it decides where sessions end.
 */
export async function runScenario(env: Env, s: Scenario): Promise<ScenarioRun> {
  const runs: Record<RunKind, SessionRun[]> = { off: [], same: [], on: [] };
  const all = s.maxCalls ?? Number.POSITIVE_INFINITY;
  for (const item of s.sessions) runs.on.push(await driveSession(env, s, "on", item, all));
  env.fake.flush();
  for (const kind of ["off", "same"] as const) {
    for (const [i, item] of s.sessions.entries()) {
      const calls = s.endAfterStub === undefined ? all : runs.on[i]!.calls;
      runs[kind].push(await driveSession(env, s, kind, item, calls));
    }
    env.fake.flush();
  }
  return { scenario: s, runs };
}

/**
 * A Worker for the scenarios on storage of its own (a restart finds what it wrote), with one tenant per
 * scenario and run (`runs`: their names).
 */
export async function startEnv(
  fake: BillingFake,
  runs: readonly string[],
): Promise<Env & { close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "eo-agreement-"));
  const keyOf = (i: number) => `agreement-key-${i}-0123456789`;
  const secrets = {
    OFFLOAD_API_KEYS: runs.map((_, i) => `agree${i}:${keyOf(i)}`).join(","),
    OFFLOAD_SECRET: "agreement-bench-secret-0123456789",
    // The compact route's clients call the fake themselves: the deployment's own keys count what they
    // never send (the proxy routes count with the client's credentials).
    OFFLOAD_COUNT_ANTHROPIC_KEY: "sk-ant-agreement-counting",
    OFFLOAD_COUNT_OPENAI_KEY: "sk-agreement-counting",
  };
  const start = () => startProxyWorker({ provider: fake.url, secrets, persist: dir });
  const env = {
    fake,
    worker: await start(),
    key: (run: string) => {
      const i = runs.indexOf(run);
      if (i < 0) throw new Error(`no tenant for ${run}`);
      return keyOf(i);
    },
    restart: async () => {
      await env.worker.dispose();
      env.worker = await start();
    },
    close: async () => {
      await env.worker.dispose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return env;
}
