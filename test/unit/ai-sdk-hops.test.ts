/**
 * A call the AI SDK middleware answered in hops, split back into its hops in a later prompt
 * (src/integrations/ai-sdk-hops.ts): the edges are found by each hop's first reasoning signature, so an
 * app whose message holds other parts than the `ai` package's would (a UI message without the stream's
 * provider parts, say) still gets each thinking block after what it was produced after.
 */
import type { LanguageModelV4Content, LanguageModelV4Message } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { hopMemo, spliceHops } from "../../src/integrations/ai-sdk-hops.ts";
import type { RecallResult } from "../../src/proxy/recalls.ts";

const PARAMS = { mode: "both" as const, max_chars: 50_000, window: 300 };
const MODEL = { modelId: "claude-opus-5-5", provider: "anthropic.messages" };
const reasoning = (sig: string) =>
  ({ type: "reasoning", text: sig, providerMetadata: { anthropic: { signature: sig } } }) as const;
const meta = { type: "custom", kind: "anthropic.message_start" } as LanguageModelV4Content;
const recall = (id: string): LanguageModelV4Content => ({
  type: "tool-call",
  toolCallId: id,
  toolName: "recall_tool_result",
  input: '{"mem_id":"trm_000000000000000000000000"}',
});
const answers = new Map<string, RecallResult>([
  ["r1", { id: "r1", content: "slice", is_error: false } as RecallResult],
]);

/** The app's assistant message: `parts` as the answer gave them, reasoning sent back with its signature. */
function appMessage(parts: readonly LanguageModelV4Content[]): LanguageModelV4Message {
  return {
    role: "assistant",
    content: parts.map((p) =>
      p.type === "reasoning"
        ? { type: "reasoning", text: p.text, providerOptions: p.providerMetadata! }
        : p.type === "text"
          ? { type: "text", text: p.text }
          : p.type === "tool-call"
            ? { type: "tool-call", toolCallId: p.toolCallId, toolName: p.toolName, input: {} }
            : (p as never),
    ),
  } as LanguageModelV4Message;
}

describe("hops split back into the app's prompt (AI SDK, preserved thinking)", () => {
  // A streamed call: each hop's answer opens with the provider's message_start part.
  const hop = [meta, reasoning("sig-a"), recall("r1")];
  const final: LanguageModelV4Content[] = [
    meta,
    reasoning("sig-b"),
    { type: "text", text: "found it" },
    { type: "tool-call", toolCallId: "app-1", toolName: "bash", input: "{}" },
  ];
  const memo = hopMemo(
    MODEL,
    [{ content: hop, calls: [{ id: "r1", arguments: "{}" }] }],
    final,
    PARAMS,
  )!;

  it("remembers each hop's count, its first signature and the final answer's", () => {
    expect(memo).toMatchObject({
      anchors: ["sig:sig-a"],
      hops: [{ kept: 2, calls: 1, sig: "sig:sig-a" }],
      rest_sig: "sig:sig-b",
    });
    // Nothing to keep on a model without the check, or through another provider package.
    expect(
      hopMemo(
        { ...MODEL, modelId: "claude-sonnet-4-6" },
        [{ content: hop, calls: [] }],
        final,
        PARAMS,
      ),
    ).toBeNull();
    expect(
      hopMemo(
        { ...MODEL, provider: "amazon-bedrock" },
        [{ content: hop, calls: [] }],
        final,
        PARAMS,
      ),
    ).toBeNull();
  });

  it("splits at the next hop's signature when the app's message lacks parts the count included", () => {
    // A UI message dropped the provider parts: by count alone, hop 0 would take both reasoning parts.
    const message = appMessage([reasoning("sig-a"), reasoning("sig-b"), ...final.slice(2)]);
    const { prompt, spliced } = spliceHops([message], [memo], answers);
    expect(spliced).toBe(1);
    expect(prompt.map((m) => m.role)).toEqual(["assistant", "tool", "assistant"]);
    expect(prompt[0]!.content).toMatchObject([
      { type: "reasoning", text: "sig-a" },
      { type: "tool-call", toolCallId: "r1", toolName: "recall_tool_result" },
    ]);
    expect(prompt[1]!.content).toMatchObject([{ type: "tool-result", toolCallId: "r1" }]);
    expect((prompt[2]!.content as { type: string }[]).map((p) => p.type)).toEqual([
      "reasoning",
      "text",
      "tool-call",
    ]);
  });

  it("leaves a message alone when the answers are missing or the parts do not fit", () => {
    const message = appMessage([reasoning("sig-a"), reasoning("sig-b"), ...final.slice(2)]);
    expect(spliceHops([message], [memo], new Map()).spliced).toBe(0);
    // Nothing after the hop: the final answer's parts are gone.
    expect(spliceHops([appMessage([reasoning("sig-a")])], [memo], answers).spliced).toBe(0);
  });
});
