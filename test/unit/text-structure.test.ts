import { describe, expect, it } from "vitest";
import { structureOf } from "../../src/core/structure.ts";
import { renderCompacted, renderRecallMarker, renderStub } from "../../src/core/stub.ts";
import { countLines, formatInt, headOf, safeCut } from "../../src/core/text.ts";
import { CHARS_PER_TOKEN, detectKind, estimateTokens } from "../../src/core/tokens.ts";
import { jsonBody, textBody } from "../support/requests.ts";

describe("token estimates per kind", () => {
  it("classifies content by its head", () => {
    expect(detectKind('{"a": [1, 2, 3]}')).toBe("json");
    expect(detectKind("[1,2]")).toBe("json");
    expect(detectKind('id,name,price\n1,a,2\n2,b,3\n3,"c, d",4\n')).toBe("csv");
    expect(detectKind("id\tname\n1\ta\n2\tb\n")).toBe("tsv");
    expect(
      detectKind(
        "2026-01-01T00:00:01 INFO start\n2026-01-01T00:00:02 WARN slow\n2026-01-01T00:00:03 ERROR boom\n",
      ),
    ).toBe("log");
    expect(detectKind("import x from 'y';\nconst a = 1;\nfunction f() {\n  return a;\n}\n")).toBe(
      "code",
    );
    expect(
      detectKind(
        "The committee met on Tuesday to discuss the plan. Everyone agreed that the proposal was sound and should go ahead as soon as possible, with a review in the spring. ".repeat(
          3,
        ),
      ),
    ).toBe("prose");
    expect(detectKind("")).toBe("text");
  });

  it("prices dense kinds at fewer chars per token than prose, within 2.7–4.2", () => {
    const ratios = Object.values(CHARS_PER_TOKEN);
    expect(Math.min(...ratios)).toBe(2.7);
    expect(Math.max(...ratios)).toBe(4.2);
    expect(estimateTokens(27_000, "json")).toBe(10_000);
    expect(estimateTokens(42_000, "prose")).toBe(10_000);
    expect(estimateTokens(0, "json")).toBe(0);
    expect(estimateTokens(1, "prose")).toBe(1);
  });
});

describe("text helpers", () => {
  it("formats integers without locale data", () => {
    expect([0, 7, 1000, 1234567, -98765].map(formatInt)).toEqual([
      "0",
      "7",
      "1,000",
      "1,234,567",
      "-98,765",
    ]);
  });

  it("never cuts a surrogate pair", () => {
    const s = "ab😀cd";
    expect(safeCut(s, 3)).toBe(2);
    expect(safeCut(s, 4)).toBe(4);
    const { head } = headOf("😀".repeat(10), 5);
    expect(head).toBe("😀😀");
  });

  it("cuts previews at a line break when one is near", () => {
    expect(headOf("aaaa\nbbbb\ncccc", 12)).toEqual({ head: "aaaa\nbbbb", cut: true });
    expect(headOf("short", 12)).toEqual({ head: "short", cut: false });
    expect(countLines("a\nb\n")).toBe(2);
    expect(countLines("a\nb")).toBe(2);
    expect(countLines("")).toBe(0);
  });
});

describe("structural index", () => {
  it("describes JSON objects: keys, types, array lengths, item keys", () => {
    const s = structureOf(jsonBody(5000));
    expect(s.kind).toBe("json");
    expect(s.outline).toMatch(/^JSON object, 2 keys:/);
    expect(s.outline).toMatch(/\$\.total: number/);
    expect(s.outline).toMatch(
      /\$\.items: array\(\d+\) of objects \{id: number, sku: string, name: string, price: number, tags: array\}/,
    );
  });

  it("describes arrays, odd keys and mixed items", () => {
    expect(structureOf('[{"a":1},{"a":2,"b":null}]').outline).toContain(
      "JSON array(2) of objects {a: number, b: null}",
    );
    expect(structureOf('{"odd key\'s":1}').outline).toContain("$['odd key\\'s']: number");
    expect(structureOf('[1,"x",null]').outline).toContain("of mixed (number, string, null)");
  });

  it("falls back to text for JSON-looking text that does not parse", () => {
    expect(structureOf("{not json}", "json").kind).toBe("text");
  });

  it("describes CSV columns and rows, and plain text lines", () => {
    const csv = structureOf("id,name\n1,a\n2,b\n\n3,c\n", "csv");
    expect(csv.table).toEqual({ delimiter: ",", columns: ["id", "name"], rows: 3 });
    expect(csv.outline).toBe("CSV: 3 rows × 2 columns (header: id, name)");
    expect(structureOf("a\nb\nc", "text").outline).toBe("text: 3 lines, 5 chars");
  });

  it("stays bounded for a pathological body", () => {
    const wide = JSON.stringify(
      Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`key_${"x".repeat(50)}_${i}`, i])),
    );
    expect(structureOf(wide).outline.length).toBeLessThanOrEqual(600);
  });
});

describe("stubs and markers", () => {
  const structure = structureOf(jsonBody(100_000));
  const stub = (mode: "both" | "window" | "structural" = "both") =>
    renderStub({
      mem_id: "trm_0123456789abcdef01234567",
      tool_name: "db",
      chars: 100_000,
      tokens: 37_000,
      structure,
      body: jsonBody(100_000),
      preview_chars: 400,
      mode,
    });

  it("carries mem_id, size, kind, structure, a bounded preview and how to recall", () => {
    const s = stub();
    expect(s).toContain("trm_0123456789abcdef01234567");
    expect(s).toContain("100,000 chars (~37,000 tokens), json");
    expect(s).toContain(structure.outline);
    expect(s).toContain('{"total":');
    expect(s).toMatch(
      /call recall_tool_result with mem_id="trm_0123456789abcdef01234567" and query=.*json_path=.*offset and max_chars/,
    );
    expect(s).toBe(stub());
  });

  it("offers only the recall arguments of the mode", () => {
    expect(stub("window")).not.toContain("json_path");
    expect(stub("structural")).not.toContain("query=");
  });

  it("is a few hundred tokens at most, whatever the body", () => {
    const ugly = JSON.stringify(
      Object.fromEntries(
        Array.from({ length: 2000 }, (_, i) => [`k${i}_${"y".repeat(80)}`, { nested: [i] }]),
      ),
    );
    const s = renderStub({
      mem_id: "trm_0123456789abcdef01234567",
      tool_name: "x".repeat(40),
      chars: ugly.length,
      tokens: 99_999,
      structure: structureOf(ugly),
      body: ugly,
      preview_chars: 400,
      mode: "both",
    });
    expect(estimateTokens(s.length)).toBeLessThan(500);
  });

  it("renders the size-only preview and the recall marker deterministically", () => {
    const body = textBody(20_000);
    const c = renderCompacted({
      mem_id: "trm_x",
      body,
      chars: 20_000,
      tokens: 5000,
      preview_chars: 2000,
      recall_available: false,
    });
    expect(c.startsWith(body.slice(0, 1500))).toBe(true);
    expect(c).toContain("showing 1,9");
    expect(c).not.toContain("recall_tool_result");
    expect(
      renderCompacted({
        mem_id: "trm_x",
        body,
        chars: 20_000,
        tokens: 5000,
        preview_chars: 2000,
        recall_available: true,
      }),
    ).toContain("recall_tool_result");
    expect(renderRecallMarker(1234, { mem_id: "trm_a", query: "needle", window: 50 })).toBe(
      '[recall answer of 1,234 chars, shortened by edge-offload after use. To see it again, call recall_tool_result with mem_id="trm_a", query="needle", window=50.]',
    );
  });
});
