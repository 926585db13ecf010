import { describe, expect, it } from "vitest";
import { compact, MemoryStore } from "../../src/lib.ts";
import { OffloadError, previewOf, serializeValue } from "../../src/toolkit/entry.ts";

const rows = Array.from({ length: 2000 }, (_, i) => ({
  id: i,
  sku: `SKU-${String(i).padStart(5, "0")}`,
  price: (i % 97) + 0.99,
  tags: ["a"],
}));

describe("previewOf", () => {
  it("reads exactly like the middle of the offload stub compact writes for the same body", async () => {
    const body = JSON.stringify(rows);
    const request = {
      model: "claude-opus-4-5",
      messages: [
        { role: "user", content: "go" },
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "t1", name: "list_products", input: {} }],
        },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: body }] },
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "t2", name: "list_products", input: {} }],
        },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t2", content: "ok" }] },
      ],
    };
    const out = await compact({
      request,
      session: "p1",
      store: new MemoryStore(),
      config: { tool_result_compaction_enabled: true, tool_result_offload_enabled: true },
    });
    expect(out.decisions[0]?.action).toBe("offloaded");
    const sent = out.request as typeof request;
    const stub = (sent.messages[2]!.content as { content: string }[])[0]!.content;
    const preview = previewOf(rows, { tool_name: "list_products" });
    const lines = stub.split("\n");
    // header line, the shared part, the recall hint
    expect(lines.slice(1, -1).join("\n")).toBe(preview);
    expect(preview).toContain(
      "JSON array(2,000) of objects {id: number, sku: string, price: number, tags: array}",
    );
  });

  it("serializes a non-string value as the compact JSON a tool would return, then previews that", () => {
    const value = { total: 2000, rows: rows.slice(0, 3) };
    expect(previewOf(value)).toBe(previewOf(JSON.stringify(value)));
    expect(serializeValue(value)).toBe(JSON.stringify(value));
    expect(serializeValue("as is")).toBe("as is");
  });

  it("is deterministic and keeps the value's own key order", () => {
    const a = { b: 1, a: [1, 2], "odd key": null };
    expect(previewOf(a)).toBe(previewOf({ b: 1, a: [1, 2], "odd key": null }));
    const text = previewOf(a);
    expect(text).toContain(
      "JSON object, 3 keys:\n  $.b: 1\n  $.a: array(2) of numbers\n  $['odd key']: null",
    );
    expect(text.indexOf('"b"')).toBeLessThan(text.indexOf('"a"'));
  });

  it("bounds the head preview by max_chars (default: the stub's 400) and the outline by the stub's 600", () => {
    const whole = JSON.stringify(rows);
    for (const max of [0, 1, 50, 400, 5000]) {
      const text = previewOf(rows, { max_chars: max });
      const marker = text.indexOf("Preview (first ");
      if (max === 0) {
        expect(marker).toBe(-1);
        continue;
      }
      const head = text.slice(text.indexOf("\n", marker) + 1).replace(/\n…$/, "");
      expect(head.length).toBeLessThanOrEqual(max);
      expect(head.length).toBeGreaterThan(0);
      expect(whole.startsWith(head)).toBe(true);
      expect(text.length).toBeLessThanOrEqual(max + 600 + 1200 + 200);
    }
    const byDefault = previewOf(rows);
    expect(byDefault).toContain("Preview (first 400 chars):");
  });

  it("says when the preview is the whole value", () => {
    expect(previewOf({ ok: true })).toBe(
      '11 chars (~5 tokens), json, 1 line.\nJSON object, 1 key:\n  $.ok: true\nPreview (first 11 chars, the whole result):\n{"ok":true}',
    );
  });

  it("describes CSV columns and rows, and text lines", () => {
    const csv = "id,name,price\n1,pan,9.5\n2,pot,12\n3,lid,3\n";
    const text = previewOf(csv, { max_chars: 20 });
    expect(text).toContain("CSV: 3 rows × 3 columns (header: id, name, price)");
    expect(text).toContain("Preview (first 13 chars):\nid,name,price\n…");
    const log = Array.from(
      { length: 50 },
      (_, i) => `2026-11-30T10:00:${String(i).padStart(2, "0")} INFO step ${i}`,
    ).join("\n");
    expect(previewOf(log)).toContain("log output: 50 lines");
  });

  it("previews empty values without a preview block", () => {
    expect(previewOf("")).toBe("0 chars (~0 tokens), text, 0 lines.\ntext: 0 lines, 0 chars");
    expect(previewOf(undefined)).toBe(previewOf(""));
    expect(previewOf([])).toContain("JSON array(0)");
  });

  it("turns BigInts into their digits (JSON has none)", () => {
    expect(serializeValue({ id: 2n ** 64n })).toBe('{"id":"18446744073709551616"}');
  });

  it("rejects what JSON cannot hold, and a bad max_chars, with typed errors", () => {
    const circular: Record<string, unknown> = { a: 1 };
    circular.self = circular;
    for (const [value, options] of [
      [circular, {}],
      [() => 1, {}],
      [Symbol("s"), {}],
      ["x", { max_chars: -1 }],
      ["x", { max_chars: 2.5 }],
      ["x", { max_chars: "100" }],
    ] as const) {
      let error: unknown;
      try {
        previewOf(value, options as never);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(OffloadError);
      expect((error as OffloadError).type).toBe("invalid_argument");
    }
  });

  it("does not mutate the value", () => {
    const value = { rows: rows.slice(0, 10) };
    const before = JSON.stringify(value);
    previewOf(value, { max_chars: 10 });
    expect(JSON.stringify(value)).toBe(before);
  });
});
