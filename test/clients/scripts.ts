/**
 * What the real-client tests script the fake provider with, and the conversation they send: the catalog
 * (a settled ~75K-char result, so it gets offloaded) and a small hot result, as provider answers, AI SDK
 * messages and tools. Also a store whose backends fail.
 */
import { tool } from "ai";
import { afterAll, beforeAll, expect } from "vitest";
import { z } from "zod";
import { ComposedStore } from "../../src/store/composed.ts";
import { MemoryIndex } from "../../src/store/memory-index.ts";
import { MemoryLedger } from "../../src/store/memory-ledger.ts";
import { MemorySessionState } from "../../src/store/memory-state.ts";
import { BillingFake } from "../support/billing-fake.ts";
import {
  anthropicEvents,
  anthropicMessage,
  catalog,
  chatCompletion,
  chatEvents,
  memIdIn,
  type Part,
  RECALL_NAME,
  response,
  responseEvents,
} from "../support/providers.ts";
import { jsonBody } from "../support/requests.ts";
import type { Received, Script, Scripted } from "./fake-provider.ts";

export { aiMessages } from "../support/ai-sdk.ts";

let n = 0;

export const recallArgs = (r: Received) => ({
  mem_id: memIdIn(r.body),
  json_path: "$.items[1499]",
});

export type Api = "anthropic" | "chat" | "responses" | "gemini";

/** One provider answer of `api`, as JSON or as its event stream. */
export function answerOf(api: Api, id: string, parts: Part[], stream: boolean): Scripted {
  const usage = { input: 900, output: 15 };
  if (api === "anthropic") {
    const m = anthropicMessage(id, parts, usage);
    return stream ? { events: anthropicEvents(m) } : { json: m };
  }
  if (api === "gemini") {
    const g = geminiAnswer(parts);
    return stream ? { events: [`data: ${JSON.stringify(g)}\n\n`] } : { json: g };
  }
  if (api === "chat") {
    const c = chatCompletion(id, parts, usage);
    return stream ? { events: chatEvents(c) } : { json: c };
  }
  const r = response(id, parts, usage, { store: false });
  return stream ? { events: responseEvents(r) } : { json: r };
}

/** The model reads item 1499 back through our tool (alone, or between `before` and `after`), then says `text`. */
export function hop(
  api: Api,
  text: string,
  opts: { stream?: boolean; before?: Part[]; after?: Part[] } = {},
): Script[] {
  const stream = opts.stream ?? false;
  return [
    (r) =>
      answerOf(
        api,
        `${api}_a${++n}`,
        [
          ...(opts.before ?? []),
          { call: RECALL_NAME, id: `toolu_r${n}`, input: recallArgs(r) },
          ...(opts.after ?? []),
        ],
        stream,
      ),
    answerOf(api, `${api}_b${n}`, [{ text }], stream),
  ];
}

export function names(tools: unknown, key: (t: Record<string, unknown>) => unknown): unknown[] {
  return (tools as Record<string, unknown>[]).map(key);
}

/** The first request carries our stub (not the catalog) and our tool, once and last. */
export function expectCompacted(r: Received, toolNames: unknown[]): void {
  expect(r.body).not.toContain("item-1499");
  expect(r.body).toContain("trm_");
  expect(toolNames.filter((t) => t === RECALL_NAME)).toHaveLength(1);
  expect(toolNames.at(-1)).toBe(RECALL_NAME);
}

export const statusCalls: string[] = [];
export const aiTools = {
  dump: tool({
    description: "Dump the catalog",
    inputSchema: z.object({}),
    execute: async () => catalog(),
  }),
  status: tool({
    description: "Check the status",
    inputSchema: z.object({}),
    execute: async () => {
      statusCalls.push("status");
      return "ok";
    },
  }),
};

/** A store whose session state (or ledger) fails, as an unreachable backend would. */
export function brokenStore(which: { ledger?: boolean } = {}): ComposedStore {
  const sessions = new MemorySessionState();
  const ledger = new MemoryLedger();
  const down = async (): Promise<never> => {
    throw new Error("backend down");
  };
  if (which.ledger) ledger.put = down;
  else Object.assign(sessions, { begin: down, records: down, commit: down });
  return new ComposedStore({ sessions, ledger, index: new MemoryIndex(), log: () => {} });
}

/** A Gemini generateContent answer (the streamed form sends it as one event). */
export function geminiAnswer(parts: Part[]): Record<string, unknown> {
  return {
    candidates: [
      {
        content: {
          role: "model",
          parts: parts.map((p) =>
            "call" in p
              ? { functionCall: { name: p.call, args: p.input } }
              : { text: "text" in p ? p.text : "" },
          ),
        },
        finishReason: "STOP",
        index: 0,
      },
    ],
    usageMetadata: { promptTokenCount: 900, candidatesTokenCount: 15, totalTokenCount: 915 },
    modelVersion: "gemini-2.5-flash",
  };
}

/** A Responses turn, then a Chat Completions turn, each over a recall hop: both compacted. */
export function expectResponsesThenChat(got: Received[]): void {
  expect(got.map((r) => r.path)).toEqual([
    "/openai/v1/responses",
    "/openai/v1/responses",
    "/openai/v1/chat/completions",
    "/openai/v1/chat/completions",
  ]);
  expectCompacted(
    got[0]!,
    names(got[0]!.json.tools, (t) => t.name),
  );
  expectCompacted(
    got[2]!,
    names(got[2]!.json.tools, (t) => (t.function as { name: string }).name),
  );
}

/** The billing fake on 127.0.0.1 for one test file: started before its tests, stopped after them. */
export function billingFakeServer(): { fake: BillingFake; base: () => string } {
  const fake = new BillingFake();
  let base = "";
  beforeAll(async () => {
    base = await fake.start();
  });
  afterAll(() => fake.stop());
  return { fake, base: () => base };
}

/** An app's `bash` tool: step `n` returns a JSON body of `chars(n)` characters. */
export function bashTool(chars: (n: number) => number) {
  return tool({
    description: "run a command",
    inputSchema: z.object({ n: z.number() }),
    execute: async ({ n }) => jsonBody(chars(n)),
  });
}
