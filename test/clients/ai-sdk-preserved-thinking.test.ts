/**
 * offloadMiddleware on a model with preserved thinking (Opus 5.5), with the AI SDK's real Anthropic
 * provider package and its own agent loop (generateText and streamText over several steps), against the
 * billing fake on 127.0.0.1 playing a model that signs each thinking block over the prefix it was
 * produced after and refuses any request whose thinking no longer follows that prefix (Anthropic's rule,
 * test/support/thinking-prefix.ts). The fake also refuses a system message the API would (its place, its
 * beta).
 *
 * What must hold: large results are offloaded on arrival, the recall tool is declared in a system message
 * (the provider package's `toolChanges`), the model's recalls are answered in hops, and every later step
 * goes out with those hops split back into the history, so no request is refused.
 */
import { createAnthropic } from "@ai-sdk/anthropic";
import { generateText, stepCountIs, streamText, wrapLanguageModel } from "ai";
import { describe, expect, it } from "vitest";
import { offloadMiddleware } from "../../src/integrations/ai-sdk.ts";
import type { OffloadCallReport } from "../../src/integrations/options.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import type { Incoming, Scripted } from "../support/billing-fake.ts";
import { ON } from "../support/requests.ts";
import { failedBlocks, prefixOf, type ThinkingReq } from "../support/thinking-prefix.ts";
import { bashTool, billingFakeServer } from "./scripts.ts";

type Req = ThinkingReq;

const RECALL = "recall_tool_result";
const MODEL = "claude-opus-5-5";

/** The recall tool is offered: in `tools`, or defined in a system message. */
function declared(req: Req): boolean {
  const inTools = ((req.tools ?? []) as { name?: string }[]).some((t) => t.name === RECALL);
  return (
    inTools ||
    req.messages.some(
      (m) =>
        m.role === "system" &&
        JSON.stringify(m.content).includes(`"definition":{"name":"${RECALL}"`),
    )
  );
}

/**
 * The fake model: it checks every thinking block it is sent back, then answers with a thinking block
 * signed over the request and one call: a recall of the first stub it has not read yet (once the tool is
 * offered), else the app's `bash` for the next step, else a text.
 */
function agentModel(steps: number) {
  const recalled = new Set<string>();
  const requests: Incoming[] = [];
  let bash = 0;
  let id = 0;
  const script = (call: Incoming): Scripted => {
    requests.push(call);
    const req = call.json as unknown as Req;
    const failed = failedBlocks(req);
    if (failed.length > 0)
      return {
        error: {
          status: 400,
          message: `thinking blocks in ${failed.join(", ")} do not follow the prefix they were produced after`,
        },
      };
    const thinking = {
      type: "thinking",
      thinking: "next",
      signature: prefixOf(req, req.messages.length),
    };
    const stubs = [...JSON.stringify(req.messages).matchAll(/trm_[0-9a-f]{24}/g)].map((m) => m[0]);
    const unread = stubs.find((s) => !recalled.has(s));
    if (unread !== undefined && declared(req)) {
      recalled.add(unread);
      return {
        content: [
          thinking,
          {
            type: "tool_use",
            id: `toolu_r${++id}`,
            name: RECALL,
            input: { mem_id: unread, query: "SKU-000042" },
          },
        ],
      };
    }
    if (bash < steps)
      return {
        content: [
          thinking,
          { type: "tool_use", id: `toolu_b${++id}`, name: "bash", input: { n: bash++ } },
        ],
      };
    return { content: [thinking, { type: "text", text: "done" }] };
  };
  return { script, requests, recalled };
}

const { fake, base: baseUrl } = billingFakeServer();

const tools = { bash: bashTool((n) => 60_000 + n) };

function wrapped(session: string, config: object = ON) {
  const reports: OffloadCallReport[] = [];
  const model = wrapLanguageModel({
    model: createAnthropic({ apiKey: "k", baseURL: `${baseUrl()}/v1` })(MODEL),
    middleware: offloadMiddleware({
      store: new MemoryStore(),
      session,
      secret: "preserved-thinking-secret-0123456789",
      config,
      onReport: (r) => reports.push(r),
      log: () => {},
    }),
  });
  return { model, reports };
}

/** What the loop sent and what the middleware reported, for either way of running it. */
function check(agent: ReturnType<typeof agentModel>, reports: OffloadCallReport[]) {
  const sent = agent.requests.map((r) => r.json as unknown as Req);
  // Large results stubbed as they arrived; the tool declared in a system message, never in `tools`.
  expect(reports.reduce((n, r) => n + (r.summary.offloaded ?? 0), 0)).toBeGreaterThan(0);
  expect(sent.some((r) => r.messages.some((m) => m.role === "system"))).toBe(true);
  expect(
    sent.every((r) => !((r.tools ?? []) as { name?: string }[]).some((t) => t.name === RECALL)),
  ).toBe(true);
  expect(
    agent.requests.some((r) =>
      (r.headers.get("anthropic-beta") ?? "").includes("inline-tools-2026-09-15"),
    ),
  ).toBe(true);
  // The model recalled, in hops; a later step's history holds a hop as its own exchange.
  expect(agent.recalled.size).toBeGreaterThan(0);
  expect(reports.reduce((n, r) => n + (r.summary.proxy?.hops ?? 0), 0)).toBeGreaterThan(0);
  const last = sent.at(-1)!;
  const recallAt = last.messages.findIndex(
    (m) => m.role === "assistant" && JSON.stringify(m.content).includes(`"name":"${RECALL}"`),
  );
  expect(recallAt).toBeGreaterThan(0);
  expect(recallAt).toBeLessThan(last.messages.length - 1);
  expect(failedBlocks(last)).toEqual([]);
}

describe("offloadMiddleware on a model with preserved thinking (@ai-sdk/anthropic, Opus 5.5)", () => {
  it("the check has teeth: one assistant message holding two hops' thinking is refused", async () => {
    const agent = agentModel(0);
    fake.script = agent.script;
    const req: Req = { messages: [{ role: "user", content: "go" }] };
    const sig = prefixOf(req, 1);
    const merged = {
      model: MODEL,
      max_tokens: 100,
      messages: [
        ...req.messages,
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "a", signature: sig },
            { type: "thinking", thinking: "b", signature: "produced after a hop" },
            { type: "text", text: "x" },
          ],
        },
        { role: "user", content: "more" },
      ],
    };
    const res = await fetch(`${baseUrl()}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(merged),
    });
    expect(res.status).toBe(400);
  });

  it("generateText over several steps: stubs on arrival, declares inline, recalls in hops, nothing refused", async () => {
    const agent = agentModel(4);
    fake.script = agent.script;
    const w = wrapped("pt-generate");
    const out = await generateText({
      model: w.model,
      tools,
      stopWhen: stepCountIs(8),
      messages: [{ role: "user", content: "Read the four files and sum the prices." }],
    });
    expect(out.text).toBe("done");
    expect(JSON.stringify(out.response.messages)).not.toContain(RECALL);
    check(agent, w.reports);
  });

  it("streamText over several steps: the same, streamed", async () => {
    const agent = agentModel(4);
    fake.script = agent.script;
    const w = wrapped("pt-stream");
    const out = streamText({
      model: w.model,
      tools,
      stopWhen: stepCountIs(8),
      messages: [{ role: "user", content: "Read the four files and sum the prices." }],
    });
    expect(await out.text).toBe("done");
    expect(JSON.stringify((await out.response).messages)).not.toContain(RECALL);
    check(agent, w.reports);
  });
});
