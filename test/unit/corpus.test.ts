/**
 * Turn-by-turn properties on real sessions: each assistant message is one call whose prompt is everything
 * before it. At every call the transform's output must be valid, sticky, idempotent, and the same whether
 * the client sends its full history or our previous output plus the new messages.
 */
import { describe, expect, it } from "vitest";
import { compact } from "../../src/core/compact.ts";
import { anthropicAdapter } from "../../src/core/formats/anthropic.ts";
import { parseJsonSpans } from "../../src/core/json/scan.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { assistantIndexes, promptAt, readSessions, SAMPLE } from "../support/corpus.ts";

const sessions = readSessions(SAMPLE);
type Req = { messages: { role: string; content: unknown }[]; tools: { name: string }[] };

const configs: Record<
  string,
  {
    tool_result_compaction_enabled: boolean;
    tool_result_offload_enabled?: boolean;
    tool_result_large_offload_threshold_chars?: number;
  }
> = {
  offload: { tool_result_compaction_enabled: true, tool_result_offload_enabled: true },
  "size-only": { tool_result_compaction_enabled: true },
  "offload, low threshold": {
    tool_result_compaction_enabled: true,
    tool_result_offload_enabled: true,
    tool_result_large_offload_threshold_chars: 8001,
  },
};

describe.each(Object.entries(configs))("corpus replay (%s)", (_name, config) => {
  it.each(sessions.map((s) => [s.id, s] as const))("%s", async (_id, session) => {
    const full = new MemoryStore();
    const fed = new MemoryStore();
    let previousOut: Req | null = null;
    const stubbed = new Map<string, string>();
    let offloads = 0;
    for (const k of assistantIndexes(session)) {
      const prompt = promptAt(session, k);
      const text = JSON.stringify(prompt);
      const out = await compact({ request: text, session: session.id, store: full, config });
      const outText = out.request as string;
      // valid: parses, analyses, same results in the same order with the same ids
      const analysis = anthropicAdapter.analyze(outText, parseJsonSpans(outText));
      expect(analysis.sites.map((s) => s.tool_use_id)).toEqual(
        anthropicAdapter.analyze(text, parseJsonSpans(text)).sites.map((s) => s.tool_use_id),
      );
      const got = JSON.parse(outText) as Req;
      expect(got.messages.length).toBe(prompt.messages.length);
      expect(got.tools.filter((t) => t.name === "recall_tool_result").length).toBeLessThanOrEqual(
        1,
      );
      // sticky: once replaced, a result keeps the same bytes on every later call
      for (const d of out.decisions) {
        const content = JSON.stringify(findContent(got, d.tool_use_id));
        if (stubbed.has(d.tool_use_id))
          expect(content, d.tool_use_id).toBe(stubbed.get(d.tool_use_id));
        else if (d.action !== "kept") stubbed.set(d.tool_use_id, content);
        if (d.action === "offloaded") offloads++;
      }
      // idempotent
      expect(
        (await compact({ request: outText, session: session.id, store: full, config })).request,
      ).toBe(outText);
      // a client that sends back our previous output plus the new messages gets the same bytes
      const previousMessages: unknown[] = previousOut === null ? [] : previousOut.messages;
      const fedPrompt = {
        ...prompt,
        messages: [...previousMessages, ...prompt.messages.slice(previousMessages.length)],
      };
      const fedOut = await compact({
        request: JSON.stringify(fedPrompt),
        session: session.id,
        store: fed,
        config,
      });
      // (but for cache markers: the fed history carries the default anchor where it went in before)
      const unmarked = (t: string) =>
        t.replace(/,"cache_control":\{"type":"ephemeral"(,"ttl":"1h")?\}/g, "");
      expect(unmarked(JSON.stringify(JSON.parse(fedOut.request as string)))).toBe(
        unmarked(JSON.stringify(got)),
      );
      previousOut = got;
    }
    if (config.tool_result_offload_enabled && session.id.startsWith("dev-"))
      expect(offloads).toBeGreaterThan(0);
  });
});

function findContent(req: Req, id: string): unknown {
  for (const m of req.messages) {
    if (!Array.isArray(m.content)) continue;
    for (const b of m.content as { type: string; tool_use_id?: string; content?: unknown }[])
      if (b.type === "tool_result" && b.tool_use_id === id) return b.content;
  }
  return undefined;
}
