/**
 * What the invariant suites check on a transformed request, shared by the per-format cases
 * (test/unit/formats.test.ts) and the property tests over random conversations (test/unit/properties.test.ts).
 */
import { expect } from "vitest";
import { compact } from "../../src/core/compact.ts";
import type { OffloadStore } from "../../src/core/ports.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import type { Kit, Req } from "./formats.ts";

export const RECALL = "recall_tool_result";

const parse = (s: unknown): Req => JSON.parse(s as string);

export function resultOf(kit: Kit, req: Req, id: string): unknown {
  const r = kit.results(req).find((x) => x.id === id);
  if (r === undefined) throw new Error(`no result ${id}`);
  return r.content;
}

/** The text a result reads as (string content, or its text parts joined). */
export function textOf(kit: Kit, content: unknown): string {
  if (typeof content === "string") return content;
  return (content as Req[])
    .filter((p) => p.type === kit.textType)
    .map((p) => p.text)
    .join("\n");
}

/** The request with every result's content blanked and our recall tool taken out: what must not change. */
export function frame(kit: Kit, req: Req, withoutMarkers = false): string {
  const copy = structuredClone(req);
  const blank = (node: Req) => {
    if (kit.format === "anthropic")
      for (const m of node.messages)
        if (Array.isArray(m.content))
          for (const b of m.content) if (b.type === "tool_result") b.content = null;
    if (kit.format === "openai-chat")
      for (const m of node.messages) if (m.role === "tool") m.content = null;
    if (kit.format === "openai-responses")
      for (const i of node.input)
        if (i.type === "function_call_output" || i.type === "custom_tool_call_output")
          i.output = null;
    if (kit.format === "ai-sdk")
      for (const m of node.prompt)
        if (m.role === "tool") for (const p of m.content) p.output = null;
  };
  blank(copy);
  if (Array.isArray(copy.tools)) {
    const names = kit.toolNames(copy);
    copy.tools = copy.tools.filter((_: Req, i: number) => names[i] !== RECALL);
    // a tools member we added (the request had none) goes too
    if (copy.tools.length === 0 && names.length > 0) delete copy.tools;
  }
  // The advancing cache anchor moves one breakpoint of the format's own between blocks.
  return JSON.stringify(copy, (k, v) => (withoutMarkers && k === kit.markerKey ? undefined : v));
}

/**
 * What the provider must accept: the output differs from the input only in result contents (a string stays
 * a string; parts keep their media parts in order, with one text part of the format's type carrying only
 * `type`, `text` and the client's marker) and in one recall tool at the end of `tools`.
 */
export function expectValidOutput(kit: Kit, input: Req, output: Req, anchored = false): void {
  expect(frame(kit, output, anchored)).toBe(frame(kit, input, anchored));
  const names = kit.toolNames(output);
  expect(names.filter((n) => n === RECALL).length).toBeLessThanOrEqual(1);
  if (names.includes(RECALL)) expect(names.at(-1)).toBe(RECALL);
  const before = kit.results(input);
  const after = kit.results(output);
  expect(after.map((r) => r.id)).toEqual(before.map((r) => r.id));
  after.forEach((r, i) => {
    const was = before[i]!.content;
    if (JSON.stringify(r.content) === JSON.stringify(was)) return;
    if (typeof was === "string") return expect(typeof r.content).toBe("string");
    const parts = r.content as Req[];
    expect(Array.isArray(parts)).toBe(true);
    const media = (was as Req[]).filter((p) => p.type !== kit.textType);
    expect(parts.filter((p) => p.type !== kit.textType)).toEqual(media);
    const texts = parts.filter((p) => p.type === kit.textType);
    expect(texts).toHaveLength(1);
    for (const key of Object.keys(texts[0]!))
      expect(["type", "text", kit.markerKey]).toContain(key);
  });
}

export async function run(
  kit: Kit,
  request: Req | string,
  config: unknown,
  store: OffloadStore = new MemoryStore(),
  session = "s",
) {
  const text = typeof request === "string" ? request : JSON.stringify(request);
  const out = await compact({
    format: kit.format,
    request: text,
    session,
    store,
    config: config as Record<string, unknown>,
  });
  return { ...out, text: out.request as string, req: parse(out.request) };
}
