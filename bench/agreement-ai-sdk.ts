/**
 * The agreement bench for the AI SDK middleware (in process: bench/agreement.ts drives the Worker, so the
 * middleware is not one of its scenarios). The same sample of corpus sessions, each call made by an app
 * through `generateText`, and again through `streamText`, wrapped in `offloadMiddleware`, over @ai-sdk/anthropic (Sonnet 4.6, the app's
 * breakpoint on its last message) and @ai-sdk/openai's Responses (GPT-5.4, caching on its own), to the
 * billing fake (test/support/billing-fake.ts: each provider's documented cache rules, its own prices and
 * tokenizer). Every session runs three times: offload off (the true counterfactual), on with nothing to
 * change (its claim must be exactly 0), and on at the defaults; the fake's clock moves past every cache
 * lifetime between runs, so no run reads another's entries. The fake model answers with the corpus's next
 * message, first recalling a result that message quotes when the request no longer holds it.
 *
 * Target (issue 26): the claimed billed saving within 5% of (bill off − bill on) where that saving exceeds
 * 1% of the bill, exactly 0 where nothing changed, never of the wrong sign. Where the results were stubbed
 * on arrival the middleware cannot measure them (the AI SDK has no token count): the table says how much
 * of what was removed was measured.
 *
 * `npm run bench -- agreement-ai-sdk [--no-count]` (a few seconds): with the middleware's `count` option
 * (the provider's token count of results stubbed on arrival, from the fake's count routes), or without.
 */
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import type { LanguageModelV4 } from "@ai-sdk/provider";
import {
  generateText,
  jsonSchema,
  type ModelMessage,
  streamText,
  type TextPart,
  type Tool,
  type ToolCallPart,
  type ToolResultPart,
  tool,
  wrapLanguageModel,
} from "ai";
import { offloadMiddleware } from "../src/integrations/ai-sdk.ts";
import { textOfResult } from "../src/replay/blocks.ts";
import { detectReferences } from "../src/replay/references.ts";
import { requestFor } from "../src/replay/run.ts";
import type { ReplaySession } from "../src/replay/types.ts";
import { sessionReport } from "../src/report.ts";
import { MemoryStore } from "../src/store/memory.ts";
import {
  answeredCalls,
  nextCall,
  RUN_CONFIG,
  type RunKind,
} from "../test/support/agreement/scenario.ts";
import { BillingFake } from "../test/support/billing-fake.ts";
import { MAX_CALLS, sample } from "./agreement.ts";
import { textTable } from "./lib/table.ts";

type Json = Record<string, unknown>;
type Block = Json & { type: string };

interface Provider {
  name: string;
  format: "anthropic" | "openai-responses";
  model: (base: string) => LanguageModelV4;
  /** The app marks a cache breakpoint on its last message (Anthropic's explicit caching). */
  marks: boolean;
}

const PROVIDERS: Provider[] = [
  {
    name: "@ai-sdk/anthropic, Sonnet 4.6",
    format: "anthropic",
    model: (base) => createAnthropic({ apiKey: "k", baseURL: `${base}/v1` })("claude-sonnet-4-6"),
    marks: true,
  },
  {
    name: "@ai-sdk/openai Responses, GPT-5.4",
    format: "openai-responses",
    model: (base) => createOpenAI({ apiKey: "k", baseURL: `${base}/v1` })("gpt-5.4"),
    marks: false,
  },
];

const blocksOf = (content: unknown): Block[] =>
  typeof content === "string" ? [{ type: "text", text: content }] : (content as Block[]);

/** A corpus prompt (Anthropic's messages) as the AI SDK's messages, the last one marked when asked. */
function modelMessages(messages: readonly Json[], marks: boolean): ModelMessage[] {
  const names = new Map<string, string>();
  const out: ModelMessage[] = [];
  for (const m of messages) {
    const blocks = blocksOf(m.content);
    if (m.role === "assistant") {
      const content = blocks.flatMap((b): (TextPart | ToolCallPart)[] => {
        if (b.type === "text" && String(b.text) !== "")
          return [{ type: "text" as const, text: String(b.text) }];
        if (b.type !== "tool_use") return [];
        names.set(String(b.id), String(b.name));
        return [
          {
            type: "tool-call" as const,
            toolCallId: String(b.id),
            toolName: String(b.name),
            input: b.input ?? {},
          },
        ];
      });
      if (content.length > 0) out.push({ role: "assistant", content });
      continue;
    }
    const results = blocks.filter((b) => b.type === "tool_result");
    if (results.length > 0)
      out.push({
        role: "tool",
        content: results.map(
          (r): ToolResultPart => ({
            type: "tool-result" as const,
            toolCallId: String(r.tool_use_id),
            toolName: names.get(String(r.tool_use_id)) ?? "tool",
            output: {
              type: r.is_error === true ? ("error-text" as const) : ("text" as const),
              value: textOfResult(r.content),
            },
          }),
        ),
      });
    const texts = blocks.filter((b) => b.type === "text" && String(b.text) !== "");
    if (texts.length > 0)
      out.push({
        role: "user",
        content: texts.map((b) => ({ type: "text" as const, text: String(b.text) })),
      });
  }
  if (marks && out.length > 0) {
    const last = out[out.length - 1]!;
    out[out.length - 1] = {
      ...last,
      providerOptions: { anthropic: { cacheControl: { type: "ephemeral" } } },
    } as ModelMessage;
  }
  return out;
}

/** The corpus's tools as the app declares them (no `execute`: the app runs them itself). */
function toolsOf(defs: readonly Json[]): Record<string, Tool> {
  return Object.fromEntries(
    defs.map((d) => [
      String(d.name),
      tool({
        description: String(d.description ?? ""),
        inputSchema: jsonSchema((d.input_schema ?? { type: "object" }) as never),
      }),
    ]),
  );
}

interface Run {
  bill: number;
  claim: number;
  complete: boolean;
  removed: number;
  measured: number;
  hops: number;
  calls: number;
}

async function runSession(
  fake: BillingFake,
  provider: Provider,
  kind: RunKind,
  item: { file: string; session: ReplaySession },
  count: boolean,
  stream: boolean,
): Promise<Run> {
  const { session } = item;
  const store = new MemoryStore();
  const name = `${kind}.${stream ? "stream" : "generate"}.${session.id}`
    .replace(/[^A-Za-z0-9._:-]/g, "_")
    .slice(0, 128);
  let hops = 0;
  const model = wrapLanguageModel({
    model: provider.model(fake.url),
    middleware: offloadMiddleware({
      store,
      session: name,
      secret: "agreement-ai-sdk-secret-0123456789",
      config: RUN_CONFIG[kind],
      // The provider's count of what is stubbed on arrival (the fake's count routes), or none.
      ...(count
        ? {
            count: {
              provider:
                provider.format === "anthropic" ? ("anthropic" as const) : ("openai" as const),
              apiKey: "k",
              baseURL: `${fake.url}/v1`,
            },
          }
        : {}),
      onReport: (r) => {
        hops += r.summary.proxy?.hops ?? 0;
      },
      log: () => {},
    }),
  });
  const refs = detectReferences(session);
  const from = fake.calls.length;
  let calls = 0;
  for (const n of answeredCalls(session).slice(0, MAX_CALLS)) {
    nextCall(fake, provider.format, session, n, refs, true);
    const base = requestFor(session, n, "claude-sonnet-4-6", "uncached") as unknown as Json;
    const system = typeof base.system === "string" ? base.system : textOfResult(base.system);
    const call = {
      model,
      ...(system === "" ? {} : { system }),
      messages: modelMessages(base.messages as Json[], provider.marks),
      tools: toolsOf((base.tools ?? []) as Json[]),
    };
    if (stream) await streamText(call).consumeStream();
    else await generateText(call);
    calls++;
  }
  fake.script = () => ({ content: [{ type: "text", text: "ok" }] });
  const bill = fake.total(fake.calls.slice(from)).usd;
  if (kind === "off")
    return { bill, claim: 0, complete: true, removed: 0, measured: 0, hops, calls };
  const billed = (await sessionReport({ store, session: name })).totals.billed;
  return {
    bill,
    claim: billed.saved_usd,
    complete: billed.complete,
    removed: billed.removed.results,
    measured: billed.removed.measured,
    hops,
    calls,
  };
}

const money = (x: number) => `${x < 0 ? "−" : ""}$${Math.abs(x).toFixed(4)}`;
const pct = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(1)}%`;

export async function benchAgreementAiSdk(argv: readonly string[] = []): Promise<void> {
  // `--no-count`: the middleware without its `count` option (results stubbed on arrival stay estimated).
  const count = !argv.includes("--no-count");
  const t0 = performance.now();
  const fake = new BillingFake();
  await fake.start();
  const head = [
    "provider",
    "session",
    "calls",
    "hops",
    "bill off",
    "true saving",
    "claimed",
    "claimed vs true",
    "nothing changed: claim",
    "removed measured",
    "verdict",
  ];
  const rows: string[][] = [];
  let within = 0;
  let significant = 0;
  let exact = 0;
  let wrongSign = 0;
  try {
    for (const provider of PROVIDERS)
      for (const stream of [false, true]) {
        const label = `${provider.name}, ${stream ? "streamText" : "generateText"}`;
        const totals = {
          off: 0,
          on: 0,
          claim: 0,
          same: 0,
          calls: 0,
          hops: 0,
          removed: 0,
          measured: 0,
        };
        for (const item of sample()) {
          const runs = {} as Record<RunKind, Run>;
          for (const kind of ["off", "same", "on"] as RunKind[]) {
            runs[kind] = await runSession(fake, provider, kind, item, count, stream);
            // Past every cache lifetime: the next run reads nothing this one wrote.
            fake.clock.advance(7200);
          }
          const truth = runs.off.bill - runs.on.bill;
          const big = Math.abs(truth) > 0.01 * runs.off.bill;
          const ok = !big || Math.abs(runs.on.claim - truth) <= 0.05 * Math.abs(truth);
          const sign =
            Math.abs(truth) < 1e-6 || !big || Math.sign(runs.on.claim) === Math.sign(truth);
          if (big) significant++;
          if (big && ok) within++;
          if (runs.same.claim === 0) exact++;
          if (!sign) wrongSign++;
          totals.off += runs.off.bill;
          totals.on += runs.on.bill;
          totals.claim += runs.on.claim;
          totals.same += Math.abs(runs.same.claim);
          totals.calls += runs.on.calls;
          totals.hops += runs.on.hops;
          totals.removed += runs.on.removed;
          totals.measured += runs.on.measured;
          rows.push([
            label,
            `${item.file}/${item.session.id}`,
            String(runs.on.calls),
            String(runs.on.hops),
            money(runs.off.bill),
            money(truth),
            money(runs.on.claim),
            Math.abs(truth) < 1e-9
              ? runs.on.claim === 0
                ? "0 = 0"
                : "≠ 0"
              : pct(runs.on.claim / truth - 1),
            runs.same.claim === 0 ? "0 (exact)" : money(runs.same.claim),
            runs.on.removed === 0
              ? "—"
              : `${((runs.on.measured / runs.on.removed) * 100).toFixed(0)}%`,
            !sign ? "wrong sign" : !ok ? "> 5%" : big ? "pass" : "pass (saving < 1%)",
          ]);
        }
        const truth = totals.off - totals.on;
        rows.push([
          label,
          "all",
          String(totals.calls),
          String(totals.hops),
          money(totals.off),
          money(truth),
          money(totals.claim),
          pct(totals.claim / truth - 1),
          totals.same === 0 ? "0 (exact)" : money(totals.same),
          totals.removed === 0 ? "—" : `${((totals.measured / totals.removed) * 100).toFixed(0)}%`,
          "",
        ]);
      }
  } finally {
    await fake.stop();
  }
  console.log(
    `\n== agreement-ai-sdk (${count ? "with" : "without"} the provider's count) ==\n\n${textTable(head, rows)}`,
  );
  console.log(
    `\n${rows.length - 2 * PROVIDERS.length} sessions in ${((performance.now() - t0) / 1000).toFixed(0)} s: nothing changed ⇒ exactly 0 in ${exact}; of ${significant} with a saving over 1% of their bill, ${within} within 5%; wrong sign in ${wrongSign}`,
  );
}
