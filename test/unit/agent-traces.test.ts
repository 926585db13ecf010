/**
 * The synthetic agent traces (test/fixtures/agent-traces, recorded by `npm run record:agent-traces`) expand
 * into requests that reproduce the recorded shapes: the same tool results to the char and line, the same
 * breakpoints, items and block types, tools and system prompt of the same size (within the difference
 * JSON escapes make), and the transform takes every one of them without a note.
 */
import { describe, expect, it } from "vitest";
import { compact } from "../../src/core/compact.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import {
  compress,
  decompress,
  expandTrace,
  filler,
  loadTrace,
  skeletonOf,
  traceStats,
} from "../support/agent-traces.ts";

describe("trace plumbing", () => {
  it("filler has exactly the chars and lines asked for", () => {
    for (const [chars, lines] of [
      [0, 1],
      [1, 1],
      [5, 3],
      [100, 1],
      [83_327, 1501],
      [40, 40],
    ] as const) {
      const text = filler(chars, lines);
      expect(text.length).toBe(chars);
      expect(text.split("\n").length).toBe(
        Math.max(1, Math.min(lines, Math.floor((chars + 1) / 2))),
      );
    }
  });

  it("compress and decompress are inverse; prose and long strings become markers", () => {
    const bodies = [
      {
        model: "m",
        tools: [{ name: "Read", description: "Reads a file." }],
        messages: [{ role: "user", content: "hi there" }],
      },
      {
        model: "m",
        tools: [{ name: "Read", description: "Reads a file." }],
        messages: [
          { role: "user", content: "hi there" },
          {
            role: "assistant",
            content: [{ type: "tool_use", id: "toolu_1", name: "Read", input: {} }],
          },
        ],
      },
    ];
    const stored = compress(bodies);
    expect(stored[1]).toMatchObject({ tools: { $prev: true }, messages: { $prev_items: 1 } });
    expect(decompress(stored)).toEqual(bodies.map(skeletonOf));
    expect(skeletonOf(bodies[0])).toMatchObject({
      tools: [{ name: "Read", description: { $text: 13, lines: 1 } }],
    });
  });
});

describe.each(["claude-code", "codex"] as const)("the %s trace", (name) => {
  const trace = loadTrace(name);
  const requests = expandTrace(trace);

  it("expands into requests of the recorded shapes", () => {
    expect(requests.length).toBe(trace.requests.length);
    requests.forEach((text, i) => {
      const recorded = trace.requests[i]!.stats;
      const stats = traceStats(trace.format, text);
      expect(stats.results, `${i}`).toEqual(recorded.results);
      expect(stats.breakpoints).toEqual(recorded.breakpoints);
      expect(stats.items).toBe(recorded.items);
      expect(stats.types).toEqual(recorded.types);
      expect(stats.tools).toBe(recorded.tools);
      expect(Math.abs(stats.tools_chars - recorded.tools_chars)).toBeLessThanOrEqual(
        recorded.tools_chars * 0.03,
      );
      expect(Math.abs(stats.system_chars - recorded.system_chars)).toBeLessThanOrEqual(
        recorded.system_chars * 0.03,
      );
    });
  });

  it("every request compacts without a note", async () => {
    const store = new MemoryStore();
    for (const text of requests) {
      const out = await compact({
        format: trace.format,
        request: text,
        session: name,
        store,
        config: { tool_result_compaction_enabled: true, tool_result_offload_enabled: true },
      });
      expect(out.report.errors).toEqual([]);
    }
  });
});
