/**
 * The agents bench's model of Claude Code's and Codex CLI's own compaction (bench/lib/agent-compaction.ts)
 * and the long sessions it runs (bench/lib/agent-session.ts): the thresholds the agents' sources give, what
 * each keeps after compacting, and a session that holds only the agent's current history.
 */
import { describe, expect, it } from "vitest";
import {
  claudeCodeCompaction,
  codexCompaction,
  type Json,
  textOfTokens,
} from "../../bench/lib/agent-compaction.ts";
import { AgentSession, reachable, resultIds } from "../../bench/lib/agent-session.ts";
import { compact } from "../../src/core/compact.ts";
import { resolveModel } from "../../src/core/pricing.ts";
import { sessionRef } from "../../src/core/session.ts";
import type { TurnDecision } from "../../src/core/types.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { loadTrace } from "../support/agent-traces.ts";
import { countTokens } from "../support/billing/tokenizer.ts";

const items = (raw: string): Json[] => {
  const req = JSON.parse(raw) as Json;
  return (req.messages ?? req.input) as Json[];
};

describe("the agents' thresholds", () => {
  it("are the ones their sources compute", () => {
    // Claude Code: window − min(max output, 20,000) − 13,000.
    expect(claudeCodeCompaction(1_000_000).threshold).toBe(967_000);
    expect(claudeCodeCompaction(200_000).threshold).toBe(167_000);
    expect(claudeCodeCompaction(200_000, 20_000, 8_000).threshold).toBe(179_000);
    // Codex: 90% of its catalog's context window.
    expect(codexCompaction(500_000).threshold).toBe(450_000);
  });

  it("bills a summary of about the tokens asked for", () => {
    for (const n of [500, 4_000, 20_000]) {
      const tokens = countTokens(textOfTokens(n));
      expect(Math.abs(tokens - n) / n).toBeLessThan(0.02);
    }
    expect(textOfTokens(0)).toBe("");
  });

  it("price the Claude 5 models at their 1M window, the older ones at 200K", () => {
    expect(resolveModel("claude-opus-5-5")!.context_window).toBe(1_000_000);
    expect(resolveModel("claude-sonnet-5-5")!.context_window).toBe(1_000_000);
    expect(resolveModel("claude-haiku-5-5")!.context_window).toBe(1_000_000);
    expect(resolveModel("claude-sonnet-4-6")!.context_window).toBe(200_000);
    expect(resolveModel("claude-opus-4-5")!.context_window).toBe(200_000);
    expect(resolveModel("gpt-6.2-sol")!.context_window).toBe(1_050_000);
  });
});

describe("a long agent session", () => {
  it("grows one call and result per turn, fresh ids, the cache marker on the newest block", () => {
    const session = new AgentSession(loadTrace("claude-code"));
    let last = "";
    for (let i = 0; i < 40; i++) last = session.next();
    const messages = items(last);
    const marked = messages.flatMap((m, i) =>
      Array.isArray(m.content)
        ? (m.content as Json[]).flatMap((b, j) => (b.cache_control === undefined ? [] : [[i, j]]))
        : [],
    );
    const lastMessage = messages.at(-1)!;
    expect(marked).toEqual([[messages.length - 1, (lastMessage.content as Json[]).length - 1]]);
    const ids = messages.flatMap(resultIds);
    expect(new Set(ids).size).toBe(ids.length);
    expect(session.produced.size).toBe(ids.length);
    expect(session.held()).toEqual(new Set(ids));
  });

  it("never repeats a pair whose call carries the data itself (Codex's recorded prints)", () => {
    const session = new AgentSession(loadTrace("codex"));
    let last = "";
    for (let i = 0; i < 60; i++) last = session.next();
    const calls = items(last).filter((m) => m.type === "custom_tool_call");
    const size = (repeated: boolean) =>
      Math.max(
        ...calls
          .filter((m) => String(m.call_id).includes("_x") === repeated)
          .map((m) => String(m.input).length),
      );
    // The recording's own calls stay as they were; every repeated call (a fresh `_xN` id) is short.
    expect(size(false)).toBeGreaterThan(50_000);
    expect(size(true)).toBeLessThan(2_000);
  });

  it("Claude Code keeps its opening, the summary and at most 5 recently read files within budget", () => {
    const model = claudeCodeCompaction(200_000, 8_000);
    const session = new AgentSession(loadTrace("claude-code"));
    for (let i = 0; i < 50; i++) session.next();
    const before = session.produced.size;
    const summary = JSON.parse(session.summaryRequest(model)) as Json;
    const prompt = (summary.messages as Json[]).at(-1)!;
    expect(prompt.role).toBe("user");
    session.compact(model);
    expect(session.held().size).toBe(0);
    const after = items(session.next());
    // The opening (the task and the system message), the summary with its restored files, the new pair.
    const kept = after.at(-3)!.content as Json[];
    expect(String(kept[0]!.text)).toMatch(/^This session is being continued/);
    expect(Math.abs(countTokens(String(kept[0]!.text)) - 4_000)).toBeLessThan(200);
    const files = kept.slice(1).map((b) => String(b.text).length);
    expect(files.length).toBeGreaterThan(0);
    expect(files.length).toBeLessThanOrEqual(5);
    for (const f of files) expect(f).toBeLessThanOrEqual(20_000);
    expect(after.slice(0, -3).every((m) => m.role !== "assistant")).toBe(true);
    expect(session.produced.size).toBe(before + 1);
    expect(session.held().size).toBe(1);
    // A second compaction replaces the first summary: nothing accumulates.
    for (let i = 0; i < 20; i++) session.next();
    session.compact(model);
    expect(items(session.next()).length).toBe(after.length);
  });

  it("Codex keeps its initial context, its user messages and the summary, no tool call", () => {
    const model = codexCompaction(500_000, 1_000);
    const session = new AgentSession(loadTrace("codex"));
    for (let i = 0; i < 30; i++) session.next();
    const opening = items(session.summaryRequest(model)).findIndex(
      (m) => m.type === "custom_tool_call",
    );
    session.compact(model);
    const after = items(session.next());
    expect(after.slice(0, opening).every((m) => !String(m.type).endsWith("_call"))).toBe(true);
    const tail = after.slice(opening);
    // The later user message (the follow-up), the summary, then the new call and its output.
    expect(tail.map((m) => `${m.type}:${m.role ?? ""}`)).toEqual([
      "message:user",
      "message:user",
      "custom_tool_call:",
      "custom_tool_call_output:",
    ]);
    expect(String(((tail[1]!.content as Json[])[0] as Json).text).length).toBeGreaterThan(3_000);
    // A second compaction keeps the user's messages again, not the first summary.
    for (let i = 0; i < 10; i++) session.next();
    session.compact(model);
    expect(items(session.next()).length).toBe(after.length);
  });

  it("holds only the agent's current history: a compacted session's requests stay small", () => {
    const model = claudeCodeCompaction(200_000, 2_000);
    const session = new AgentSession(loadTrace("claude-code"));
    const sizes: number[] = [];
    for (let i = 0; i < 120; i++) {
      const raw = session.next();
      sizes.push(raw.length);
      // ~4 chars a token: compact near the threshold, as the bench does from the billed usage.
      if (raw.length / 4 > model.threshold) session.compact(model);
    }
    expect(Math.max(...sizes)).toBeLessThan(model.threshold * 4 + 200_000);
    expect(session.produced.size).toBeGreaterThan(110);
  });
});

describe("what is kept", () => {
  const stub = (id: string, mem_id: string | null): TurnDecision =>
    ({ tool_use_id: id, action: "offloaded", mem_id }) as TurnDecision;

  it("counts a result reachable when the agent still holds it, whole or behind a stub with a body", async () => {
    const produced = new Set(["a", "b", "c", "d", "e"]);
    const held = new Set(["b", "c", "d", "e", "other"]);
    const decisions = [
      { tool_use_id: "b", action: "kept", mem_id: null } as TurnDecision,
      stub("c", "m-c"),
      stub("d", "m-gone"),
      stub("e", null),
      // Dropped by the agent's compaction: its body in the ledger reaches nothing.
      stub("a", "m-a"),
    ];
    const bodies = new Set(["m-c", "m-a"]);
    expect(await reachable(produced, held, decisions, async (m) => bodies.has(m))).toEqual({
      reachable: 2,
      stubs: 3,
    });
  });

  it("pressure keeps every result of a long session reachable; the agent's compaction does not", async () => {
    const session = new AgentSession(loadTrace("claude-code"));
    const store = new MemoryStore();
    const config = {
      tool_result_compaction_enabled: true,
      tool_result_offload_enabled: true,
      tool_result_first_delivery: "full",
      tool_result_context_window_tokens: 100_000,
      tool_result_context_pressure_share: 0.5,
      tool_result_context_pressure_target: 0.2,
    };
    let decisions: readonly TurnDecision[] = [];
    let batches = 0;
    for (let i = 0; i < 30; i++) {
      const out = await compact({
        format: "anthropic",
        request: session.next(),
        session: "kept",
        store,
        config,
        secret: "agents-bench-secret-0123456789",
      });
      decisions = out.decisions;
      if (out.report.pressure !== undefined) batches++;
    }
    const hasBody = async (m: string) => (await store.getBody(sessionRef("kept"), m)) !== null;
    const kept = await reachable(session.produced, session.held(), decisions, hasBody);
    expect(batches).toBeGreaterThan(0);
    expect(kept.stubs).toBeGreaterThan(10);
    expect(kept.reachable).toBe(session.produced.size);
    // The agent compacts: its summary replaces every result, stubbed or whole.
    session.compact(claudeCodeCompaction(200_000, 2_000));
    const after = await reachable(session.produced, session.held(), decisions, hasBody);
    expect(after.reachable).toBe(0);
  });
});
