/**
 * Preserved thinking (src/core/turn/frozen.ts): on a model that checks the prefix of every thinking block
 * sent back, an agent loop through compact() never changes what came before a thinking block. The check
 * below is written from Anthropic's documented rule, not from the product's code: a thinking block is
 * valid when `system`, `tools` and the messages before it, cache breakpoints aside, are what was sent
 * when it was produced.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { compact } from "../../src/core/compact.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { jsonBody, ON } from "../support/requests.ts";

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Msg = { role: string; content: Json };
type Req = { model: string; max_tokens: number; system?: Json; tools?: Json; messages: Msg[] };

/** The value without cache breakpoints (clients move theirs every call; the check ignores them). */
function bare(v: Json): Json {
  if (Array.isArray(v)) return v.map(bare);
  if (v !== null && typeof v === "object")
    return Object.fromEntries(
      Object.entries(v)
        .filter(([k]) => k !== "cache_control")
        .map(([k, x]) => [k, bare(x)]),
    );
  return v;
}

/** What a thinking block at messages[i] is bound to: system, tools and the messages before it. */
function prefixOf(req: Req, i: number): string {
  const prefix = {
    system: req.system ?? null,
    tools: req.tools ?? null,
    messages: req.messages.slice(0, i),
  } as Json;
  return createHash("sha256")
    .update(JSON.stringify(bare(prefix)))
    .digest("hex");
}

/** The thinking blocks of a request sent back whose prefix changed since they were produced. */
function failedBlocks(req: Req): string[] {
  const failed: string[] = [];
  req.messages.forEach((m, i) => {
    if (m.role !== "assistant" || !Array.isArray(m.content)) return;
    for (const b of m.content as { type: string; signature?: string }[])
      if (b.type === "thinking" && b.signature !== prefixOf(req, i)) failed.push(`messages[${i}]`);
  });
  return failed;
}

/**
 * An agent loop: each call goes through compact(); the model answers with a thinking block signed over
 * the prefix it was produced after (the request as sent, plus nothing: the block opens its message) and a
 * tool call; the client appends its own history (never our output) and the tool's result.
 */
async function loop(model: string, config: Record<string, unknown>, results: string[]) {
  const store = new MemoryStore();
  const tools: Json = [
    { name: "bash", description: "run a command", input_schema: { type: "object" } },
  ];
  const messages: Msg[] = [{ role: "user", content: "Find the failing test and fix it." }];
  const sent: Req[] = [];
  const outputs = [];
  for (let call = 0; call <= results.length; call++) {
    const request: Req = {
      model,
      max_tokens: 1024,
      system: "You are a coding agent.",
      tools,
      messages,
    };
    const out = await compact({
      request: JSON.stringify(request),
      session: `pt-${model.replace(/[^A-Za-z0-9._:-]/g, "_")}`,
      store,
      config,
    });
    const req = JSON.parse(out.request as string) as Req;
    sent.push(req);
    outputs.push(out);
    if (call === results.length) break;
    const id = `toolu_${call}`;
    messages.push(
      {
        role: "assistant",
        content: [
          {
            type: "thinking",
            thinking: `step ${call}`,
            signature: prefixOf(req, req.messages.length),
          },
          { type: "tool_use", id, name: "bash", input: { command: `cat file${call}.json` } },
        ],
      },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: id, content: results[call]! }],
      },
    );
  }
  return { sent, outputs };
}

const big = (i: number) => jsonBody(60_000 + i);
const RESULTS = [big(0), big(1), big(2), big(3), big(4)];

describe("preserved thinking", () => {
  it("the check has teeth: on a model without it, the defaults change what a thinking block follows", async () => {
    const { sent, outputs } = await loop("claude-sonnet-4-6", ON, RESULTS);
    // the defaults offload here (the recall tool declared on the way) ...
    expect(outputs.some((o) => o.decisions.some((d) => d.action === "offloaded"))).toBe(true);
    // ... which a preserved-thinking model would reject
    expect(sent.some((r) => failedBlocks(r).length > 0)).toBe(true);
  });

  it("on a preserved-thinking model nothing before a thinking block changes, and each decision says why", async () => {
    const { sent, outputs } = await loop("claude-sonnet-5-5", ON, RESULTS);
    for (const r of sent) expect(failedBlocks(r)).toEqual([]);
    // tools never change once the model has thought
    for (const r of sent) expect(r.tools).toEqual(sent[0]!.tools);
    const last = outputs.at(-1)!.decisions;
    expect(last.every((d) => d.action === "kept")).toBe(true);
    expect(last.at(-1)!.reason).toMatch(/declaring the recall tool now would change tools/);
    expect(last[0]!.reason).toMatch(/preserved thinking follows it/);
  });

  it("with the recall tool declared from the first call, fresh results are still stubbed on arrival", async () => {
    const eager = { ...ON, tool_result_recall_tool_declaration: "eager" };
    const { sent, outputs } = await loop("claude-sonnet-5-5", eager, RESULTS);
    for (const r of sent) expect(failedBlocks(r)).toEqual([]);
    const offloaded = outputs.flatMap((o) => o.decisions.filter((d) => d.action === "offloaded"));
    expect(offloaded.length).toBeGreaterThan(0);
    // every stub landed on its result's arrival (first delivery) and stayed as it was
    for (const d of offloaded)
      expect(d.sticky || d.gate?.inputs.first_delivery === true).toBe(true);
    const sizes = sent.map((r) => JSON.stringify(r).length);
    expect(sizes.at(-1)!).toBeLessThan(RESULTS.join("").length / 2);
  });

  it("a dated or prefixed id of such a model is frozen too, and an unknown Claude model is treated alike", async () => {
    for (const model of [
      "claude-sonnet-5-5-20260928",
      "anthropic/claude-opus-5-5",
      "claude-nova-9",
    ]) {
      const { sent } = await loop(model, ON, RESULTS.slice(0, 3));
      for (const r of sent) expect(failedBlocks(r)).toEqual([]);
    }
  });
});
