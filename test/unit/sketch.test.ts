/**
 * A turn's sketch: prefix hashes that key what the provider keys (a moved breakpoint, or a string spelled as
 * a text block, changes nothing), the request sent departing from the client's exactly
 * where an edit or the recall tool's declaration is, a bounded number of marks, and an encoding that reads
 * back, refusing anything else.
 */
import { describe, expect, it } from "vitest";
import { parseJsonSpans } from "../../src/core/json/scan.ts";
import { promptUnits } from "../../src/core/prompt-units.ts";
import {
  decodeSketch,
  encodeSketch,
  type SketchInput,
  type SketchMark,
  sketchTurn,
} from "../../src/core/sketch.ts";
import type { Format } from "../../src/core/types.ts";

function sketch(
  format: Format,
  request: unknown,
  more: Partial<Omit<SketchInput, "raw" | "units">> = {},
): SketchMark[] {
  const raw = JSON.stringify(request);
  const root = parseJsonSpans(raw);
  return sketchTurn({
    raw,
    units: promptUnits(format, raw, root),
    breakpoints: [],
    sites: [],
    edits: [],
    declaration: null,
    anchor: null,
    ...more,
  });
}

const EPH = { type: "ephemeral" };
const tools = [{ name: "bash", description: "run", input_schema: { type: "object" } }];
const history = (n: number) =>
  Array.from({ length: n }, (_, i) => [
    {
      role: "assistant" as const,
      content: [{ type: "tool_use", id: `t${i}`, name: "bash", input: { cmd: `c${i}` } }],
    },
    {
      role: "user" as const,
      content: [{ type: "tool_result", tool_use_id: `t${i}`, content: `result ${i}` }],
    },
  ]).flat();
const ends = (marks: SketchMark[]) => marks[marks.length - 1]!;

describe("the prefix hashes key what the provider keys", () => {
  it("a breakpoint moved forward leaves the earlier prefix's hash as it was", () => {
    const turn1 = [{ role: "user", content: "task" }, ...history(2)];
    const marked = structuredClone(turn1);
    (marked[4]!.content as Record<string, unknown>[])[0]!.cache_control = EPH;
    const first = sketch("anthropic", { model: "m", tools, messages: marked });
    const turn2 = [...turn1, ...history(3).slice(4)];
    const second = sketch("anthropic", { model: "m", tools, messages: turn2 });
    expect(second.some((m) => m.hc === ends(first).hc)).toBe(true);
  });

  it("a string is the text block it stands for", () => {
    const a = sketch("anthropic", { messages: [{ role: "user", content: "hello" }] });
    const b = sketch("anthropic", {
      messages: [{ role: "user", content: [{ type: "text", text: "hello", cache_control: EPH }] }],
    });
    expect(ends(a).hc).toBe(ends(b).hc);
    const c = sketch("anthropic", { messages: [{ role: "user", content: "hellO" }] });
    expect(ends(c).hc).not.toBe(ends(a).hc);
  });

  it("a marker first or last in its object is cut with its comma", () => {
    const first = sketch("anthropic", {
      messages: [{ role: "user", content: [{ cache_control: EPH, type: "text", text: "hi" }] }],
    });
    const none = sketch("anthropic", {
      messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
    });
    expect(ends(first).hc).toBe(ends(none).hc);
  });

  it("OpenAI's prompt_cache_breakpoint is a marker, not content", () => {
    const part = (extra: object) => ({
      model: "gpt-4.1",
      messages: [{ role: "user", content: [{ type: "text", text: "hi", ...extra }] }],
    });
    expect(ends(sketch("openai-chat", part({}))).hc).toBe(
      ends(sketch("openai-chat", part({ prompt_cache_breakpoint: { mode: "explicit" } }))).hc,
    );
  });
});

describe("the request sent beside the client's", () => {
  const request = {
    model: "m",
    tools,
    messages: [{ role: "user", content: "task" }, ...history(3)],
  };
  const raw = JSON.stringify(request);

  it("is the client's where nothing changed", () => {
    for (const m of sketch("anthropic", request)) {
      expect(m.ha).toBe(m.hc);
      expect(m.a).toBe(m.c);
    }
  });

  it("departs at an edit: the same before it, other after, and lighter by what it took out", () => {
    const at = raw.indexOf('"result 1"');
    const end = at + '"result 1"'.length;
    const marks = sketch("anthropic", request, {
      sites: [{ start: at, end, tokens: 500, sent_tokens: 20 }],
      edits: [{ start: at, end, text: '"stub"' }],
    });
    const split = marks.findIndex((m) => m.ha !== m.hc);
    expect(split).toBeGreaterThan(0);
    expect(marks.slice(0, split).every((m) => m.a === m.c)).toBe(true);
    expect(ends(marks).c - ends(marks).a).toBe(480);
    expect(marks.slice(split).every((m) => m.ha !== m.hc)).toBe(true);
  });

  it("departs after the tools for the recall tool: a breakpoint on the last tool still reads", () => {
    const cached = { ...request, tools: [{ ...tools[0], cache_control: EPH }] };
    const marks = sketch("anthropic", cached, {
      // The adapters' position of a tool's breakpoint: the tool's end within `tools`.
      breakpoints: [{ position: JSON.stringify(cached.tools).length - 1, ttl: "5m" }],
      declaration: { text: '{"name":"recall_tool_result"}', tokens: 300 },
    });
    const tool = marks.find((m) => m.bc === "5m")!;
    expect(tool.ha).toBe(tool.hc);
    expect(marks.filter((m) => m.b > tool.b).every((m) => m.ha !== m.hc && m.a === m.c + 300)).toBe(
      true,
    );
  });

  it("carries the anchor's breakpoint on the request sent only", () => {
    const at = raw.lastIndexOf("}]}]}") + 1;
    const marks = sketch("anthropic", request, {
      anchor: { at, ttl: "5m" },
      edits: [{ start: at, end: at, text: ',"cache_control":{"type":"ephemeral"}' }],
    });
    expect(ends(marks).ba).toBe("5m");
    expect(ends(marks).bc).toBeUndefined();
    // The marker is no content: the prefix is the client's.
    expect(ends(marks).ha).toBe(ends(marks).hc);
  });
});

describe("bounded and encoded", () => {
  it("keeps at most 60 marks, the last units and the end among them", () => {
    const big = { messages: [{ role: "user", content: "task" }, ...history(1500)] };
    const marks = sketch("anthropic", big);
    expect(marks.length).toBeLessThanOrEqual(60);
    expect(ends(marks).b).toBe(3001);
    expect(marks.filter((m) => m.b > 3001 - 24)).toHaveLength(24);
    expect(encodeSketch(marks).length).toBeLessThan(60 * 40);
  });

  it("reads back what it wrote", () => {
    const marks = sketch("anthropic", {
      messages: [{ role: "user", content: "task" }, ...history(4)],
    });
    marks[2] = { ...marks[2]!, ha: "zz", a: 1, bc: "1h", ba: "5m" };
    expect(decodeSketch(encodeSketch(marks))).toEqual(marks);
  });

  it("refuses anything else", () => {
    for (const bad of [
      undefined,
      42,
      "",
      "s1",
      "s0;1,1,1,abc,,",
      "s1;1,1,1,ABC!,,",
      "s1;-1,1,1,abc,,",
      "s1;1.5,1,1,abc,,",
      "s1;1,1,1,abc,,9",
      "s1;1,1,1,abc,bad-hash,",
      "s1;1,1,abc,,",
      `s1;${"9".repeat(5000)}`,
    ])
      expect(decodeSketch(bad)).toBeNull();
  });
});

describe("members in any order", () => {
  it("finds an edit's unit when the request lists its messages before its tools", () => {
    const many = Array.from({ length: 8 }, (_, i) => ({ ...tools[0]!, name: `tool${i}` }));
    const request = {
      messages: [{ role: "user", content: "task" }, ...history(3)],
      model: "m",
      tools: many,
    };
    const raw = JSON.stringify(request);
    const at = raw.indexOf('"result 0"');
    const end = at + '"result 0"'.length;
    const marks = sketch("anthropic", request, {
      sites: [{ start: at, end, tokens: 500, sent_tokens: 20 }],
      edits: [{ start: at, end, text: '"stub"' }],
    });
    expect(ends(marks).c - ends(marks).a).toBe(480);
    expect(ends(marks).ha).not.toBe(ends(marks).hc);
    // Tools come first in prompt order whatever their place in the JSON.
    expect(marks[0]!.ha).toBe(marks[0]!.hc);
  });
});
