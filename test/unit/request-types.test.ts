/**
 * Every request the provider accepts goes through: one request per documented message role, block or item
 * type, content part, tool type and top-level field of each format (the cases are typed against the official
 * SDKs, so a new member of their unions fails the type check until it has a case here), compacted with offload
 * on and the recall tool declared. Each must come back with no error or note, as valid JSON, its large
 * settled result offloaded, and every byte outside that result and the declared tool as it was.
 */
import { describe, expect, it } from "vitest";
import { compact } from "../../src/core/compact.ts";
import { recallToolDefinition } from "../../src/core/recall-tool.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { anthropicCases } from "../support/request-types/anthropic.ts";
import { chatCases } from "../support/request-types/chat.ts";
import { responsesCases } from "../support/request-types/responses.ts";
import { BIG, type FormatCases } from "../support/request-types/shared.ts";

const CONFIG = {
  tool_result_compaction_enabled: true,
  tool_result_offload_enabled: true,
  tool_result_recall_tool_declaration: "eager",
};

/** The stub the large result became: the one string in the output that starts like one. */
function stubIn(value: unknown): string | undefined {
  if (typeof value === "string")
    return value.startsWith("[tool result offloaded by edge-offload") ? value : undefined;
  if (typeof value !== "object" || value === null) return undefined;
  for (const v of Object.values(value)) {
    const found = stubIn(v);
    if (found !== undefined) return found;
  }
  return undefined;
}

const FORMATS = [anthropicCases, chatCases, responsesCases] as FormatCases<any>[];

describe.each(FORMATS.map((f) => [f.format, f] as const))("%s: every documented type", (_, f) => {
  it("has a case per type (and no case twice)", () => {
    const names = f.cases.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names.length).toBeGreaterThan(40);
  });

  it.each(f.cases.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const req = f.base();
    c.edit(req);
    const text = JSON.stringify(req);
    const out = await compact({
      format: f.format,
      request: text,
      session: "types",
      store: new MemoryStore(),
      config: CONFIG,
    });
    expect(out.report.errors).toEqual([]);
    const parsed = JSON.parse(out.request as string) as unknown;
    expect(out.decisions.find((d) => d.tool_use_id === "t1")?.action).toBe("offloaded");
    expect(out.report.recall_tool).toBe("added");

    // Undo the two edits the turn made: what is left must be the request as it came, byte for byte.
    const stub = stubIn(parsed);
    expect(stub).toBeDefined();
    const tool = JSON.stringify(recallToolDefinition(f.format, "both"));
    let back = (out.request as string).replace(JSON.stringify(stub), JSON.stringify(BIG));
    back = back.includes(`,${tool}`)
      ? back.replace(`,${tool}`, "")
      : back.replace(`,"tools":[${tool}]`, "");
    // and the default anchor's marker, where it went in (the client's markers are then compared with it)
    const unmarked = (t: string) =>
      out.report.anchor?.placed === true
        ? t.replace(/,"cache_control":\{"type":"ephemeral"(,"ttl":"1h")?\}/g, "")
        : t;
    expect(unmarked(back)).toBe(unmarked(text));
  });
});
