/**
 * offloadMiddleware's billed figures against the billing fake's bill (Anthropic's documented cache rules on
 * the bytes it receives, its own prices and tokenizer: test/support/billing-fake.ts). An app on the AI SDK's
 * own agent loop (generateText, and streamText) runs over @ai-sdk/anthropic, marking a cache breakpoint on its
 * last message each step, and over @ai-sdk/openai (Responses, which caches prefixes on its own); its tool returns large results, and the fake model recalls each stub it sees once. The
 * same loop runs with offload off (the true counterfactual) and on, with the middleware's `count` option
 * (the fake's count routes): the session report's claimed billed saving must be the bill's (the agreement
 * bench's 5%), and the recall hops' calls are in the bill. Without `count`, the results stubbed on arrival
 * are estimated, and the report says they are.
 */
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, type ModelMessage, stepCountIs, streamText, wrapLanguageModel } from "ai";
import { describe, expect, it } from "vitest";
import { offloadMiddleware } from "../../src/integrations/ai-sdk.ts";
import type { OffloadCallReport } from "../../src/integrations/options.ts";
import { sessionReport } from "../../src/report.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import type { Incoming, Scripted } from "../support/billing-fake.ts";
import { ON } from "../support/requests.ts";
import { bashTool, billingFakeServer } from "./scripts.ts";

const RECALL = "recall_tool_result";
const STEPS = 6;
const EPHEMERAL = { anthropic: { cacheControl: { type: "ephemeral" } } };

/**
 * The fake model: a recall of the first stub it has not read yet (when the tool is offered), else the next
 * `bash` step, else a text. Its answers depend only on what the request holds, so the runs off and on take
 * the same steps.
 */
function agentModel() {
  const recalled = new Set<string>();
  let id = 0;
  return (call: Incoming): Scripted => {
    // Either API's request: Anthropic's `messages`, OpenAI Responses' `input`.
    const messages = JSON.stringify(call.json.messages ?? call.json.input);
    const offered = JSON.stringify(call.json.tools ?? []).includes(`"${RECALL}"`);
    const unread = [...messages.matchAll(/trm_[0-9a-f]{24}/g)]
      .map((m) => m[0])
      .find((s) => !recalled.has(s));
    if (unread !== undefined && offered) {
      recalled.add(unread);
      return {
        content: [
          {
            type: "tool_use",
            id: `toolu_r${++id}`,
            name: RECALL,
            input: { mem_id: unread, query: "SKU-000042" },
          },
        ],
      };
    }
    // Steps done: the distinct calls of the app's tool the history holds (each answered by now).
    const done = new Set(messages.match(/toolu_b\d+/g) ?? []).size;
    if (done < STEPS)
      return {
        content: [
          { type: "text", text: `step ${done}` },
          { type: "tool_use", id: `toolu_b${done}`, name: "bash", input: { n: done } },
        ],
      };
    return { content: [{ type: "text", text: "done" }] };
  };
}

const { fake, base: baseUrl } = billingFakeServer();

const tools = { bash: bashTool((n) => 40_000 + n * 7_000) };

/** The app's cache breakpoint, on its last message each step (as the AI SDK's docs show it). */
function marked(messages: ModelMessage[]): ModelMessage[] {
  return messages.map((m, i) =>
    i === messages.length - 1 ? ({ ...m, providerOptions: EPHEMERAL } as ModelMessage) : m,
  );
}

/** The provider packages: Anthropic's with the app's breakpoint, OpenAI's (Responses) caching on its own. */
const PROVIDERS = {
  anthropic: {
    model: () => createAnthropic({ apiKey: "k", baseURL: `${baseUrl()}/v1` })("claude-sonnet-4-6"),
    marks: true,
  },
  openai: {
    model: () => createOpenAI({ apiKey: "k", baseURL: `${baseUrl()}/v1` })("gpt-5.4"),
    marks: false,
  },
} as const;

async function session(
  name: string,
  config: object,
  stream: boolean,
  provider: keyof typeof PROVIDERS,
  count = true,
) {
  fake.script = agentModel();
  const store = new MemoryStore();
  const reports: OffloadCallReport[] = [];
  const model = wrapLanguageModel({
    model: PROVIDERS[provider].model(),
    middleware: offloadMiddleware({
      store,
      session: name,
      secret: "ai-sdk-bill-secret-0123456789abcdef",
      config,
      // The provider's count of results stubbed on arrival, from the fake's count routes.
      ...(count ? { count: { provider, apiKey: "k", baseURL: `${baseUrl()}/v1` } } : {}),
      onReport: (r) => reports.push(r),
      log: () => {},
    }),
  });
  const from = fake.calls.length;
  const options = {
    model,
    tools,
    // Its own system prompt: no session reads another's cache entries (OpenAI's are shared by prefix).
    system: `You are ${name}, a careful agent. ${"Follow the house rules. ".repeat(200)}`,
    stopWhen: stepCountIs(STEPS + 4),
    prepareStep: ({ messages }: { messages: ModelMessage[] }) => ({
      messages: PROVIDERS[provider].marks ? marked(messages) : messages,
    }),
    messages: [{ role: "user" as const, content: "Read the files and sum the prices." }],
  };
  if (stream) {
    const out = streamText(options);
    expect(await out.text).toBe("done");
  } else {
    const out = await generateText(options);
    expect(out.text).toBe("done");
  }
  fake.clock.advance(30);
  const calls = fake.calls.slice(from);
  return { usd: fake.total(calls).usd, calls, store, reports, name };
}

describe.each([
  ["anthropic", "@ai-sdk/anthropic, Sonnet 4.6"],
  ["openai", "@ai-sdk/openai Responses, GPT-5.4"],
] as const)("offloadMiddleware's billed saving is the bill's (%s: %s)", (provider, _about) => {
  for (const stream of [false, true])
    it(`${stream ? "streamText" : "generateText"}: the report claims what the bill shows, hops included`, async () => {
      const tag = `${provider}-${stream ? "stream" : "generate"}`;
      const off = await session(
        `bill-off-${tag}`,
        { tool_result_compaction_enabled: false },
        stream,
        provider,
      );
      const on = await session(`bill-on-${tag}`, ON, stream, provider);
      // The runs took the same steps; on, the model recalled and the results went out as stubs.
      const hops = on.reports.reduce((n, r) => n + (r.summary.proxy?.hops ?? 0), 0);
      expect(hops).toBeGreaterThan(0);
      expect(on.calls.length).toBe(off.calls.length + hops);
      const truth = off.usd - on.usd;
      expect(truth).toBeGreaterThan(0.05 * off.usd);
      const report = await sessionReport({ store: on.store, session: on.name });
      const billed = report.totals.billed;
      // Every call measured, the hops' included: the report's bill is the fake's.
      expect(billed.complete).toBe(true);
      expect(billed.usd).toBeCloseTo(on.usd, 6);
      // The results were stubbed as they arrived, never sent in full: the provider's count measured them.
      expect(billed.removed.measured).toBe(billed.removed.results);
      expect(Math.abs(billed.saved_usd - truth)).toBeLessThanOrEqual(0.05 * truth);
      // Without the count option they are estimated, and the report says so.
      const guess = await session(`bill-guess-${tag}`, ON, stream, provider, false);
      const unmeasured = (await sessionReport({ store: guess.store, session: guess.name })).totals
        .billed;
      expect(unmeasured.removed.measured).toBe(0);
      expect(unmeasured.removed.results).toBeGreaterThan(0);
    });
});
