import { describe, expect, it } from "vitest";
import { structureOf } from "../../src/core/structure.ts";
import { renderCompacted, renderRecallMarker, renderStub } from "../../src/core/stub.ts";
import { countLines, formatInt, headOf, safeCut } from "../../src/core/text.ts";
import {
  CHARS_PER_TOKEN,
  detectKind,
  estimateTokens,
  whitespaceShare,
} from "../../src/core/tokens.ts";
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

describe("whitespace share", () => {
  const exact = (t: string) =>
    Math.round(((t.match(/[ \t\n\r]/g) ?? []).length / t.length) * 100) / 100;

  it("counts a short text whole", () => {
    expect(whitespaceShare("")).toBe(0);
    expect(whitespaceShare("a b\nc\td")).toBe(0.43);
    const indented = JSON.stringify({ items: [{ id: 1, name: "a" }] }, null, 2).repeat(100);
    expect(whitespaceShare(indented)).toBe(exact(indented));
  });

  it("reads a long text through windows, within 0.03 of the whole count, whatever the layout", () => {
    const layouts = [
      jsonBody(400_000),
      JSON.stringify(JSON.parse(jsonBody(300_000)), null, 2),
      textBody(500_000),
      // Fixed-width lines whose length divides the text: a stride would see one column only.
      `${"x".repeat(63)}\n`.repeat(8_192),
      // Dense first half, indented second half: the windows must span the whole text.
      "y".repeat(200_000) + " ".repeat(20_000) + "z".repeat(180_000),
    ];
    for (const t of layouts)
      expect(Math.abs(whitespaceShare(t) - exact(t))).toBeLessThanOrEqual(0.03);
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
    expect(s.outline).toMatch(/\$\.total: \d+/);
    expect(s.outline).toMatch(
      /\$\.items: array\(\d+\) of objects \{id: number, sku: string, name: string, price: number, tags: array\}/,
    );
  });

  it("describes arrays, odd keys and mixed items", () => {
    expect(structureOf('[{"a":1},{"a":2,"b":null}]').outline).toContain(
      "JSON array(2) of objects {a: number, b: null}",
    );
    expect(structureOf('{"odd key\'s":1}').outline).toContain("$['odd key\\'s']: 1");
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
    // the outline (600), the index (1,200), the preview (400) and three short lines
    expect(s.length).toBeLessThanOrEqual(2_600);
    expect(estimateTokens(s.length)).toBeLessThan(700);
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

describe("stub bytes: the index and the end of a log", () => {
  const stubOf = (body: string, tool = "api") =>
    renderStub({
      mem_id: "trm_0123456789abcdef01234567",
      tool_name: tool,
      chars: body.length,
      tokens: estimateTokens(body.length),
      structure: structureOf(body),
      body,
      preview_chars: 120,
      mode: "both",
    });

  it("carries the id column of an array of records", () => {
    const orders = JSON.stringify(
      Array.from({ length: 40 }, (_, i) => ({
        order_id: `ORD-${48200 + i}`,
        customer: `c${i}`,
        name: `Order ${i}`,
        total: i * 10,
      })),
    );
    const s = stubOf(orders);
    expect(s).toBe(stubOf(orders));
    expect(s).toMatchInlineSnapshot(`
      "[tool result offloaded by edge-offload · mem_id trm_0123456789abcdef01234567]
      Output of api: 2,850 chars (~792 tokens), json, 1 line.
      JSON array(40) of objects {order_id: string, customer: string, name: string, total: number}
        paths: $[0] … $[39]
      Index $[*].order_id (name): ORD-48200 (Order 0), ORD-48201 (Order 1), ORD-48202 (Order 2), ORD-48203 (Order 3), ORD-48204 (Order 4), ORD-48205 (Order 5), ORD-48206 (Order 6), ORD-48207 (Order 7), ORD-48208 (Order 8), ORD-48209 (Order 9), ORD-48210 (Order 10), ORD-48211 (Order 11), ORD-48212 (Order 12), ORD-48213 (Order 13), ORD-48214 (Order 14), ORD-48215 (Order 15), ORD-48216 (Order 16), ORD-48217 (Order 17), ORD-48218 (Order 18), ORD-48219 (Order 19), ORD-48220 (Order 20), ORD-48221 (Order 21), ORD-48222 (Order 22), ORD-48223 (Order 23), ORD-48224 (Order 24), ORD-48225 (Order 25), ORD-48226 (Order 26), ORD-48227 (Order 27), ORD-48228 (Order 28), ORD-48229 (Order 29), ORD-48230 (Order 30), ORD-48231 (Order 31), ORD-48232 (Order 32), ORD-48233 (Order 33), ORD-48234 (Order 34), ORD-48235 (Order 35), ORD-48236 (Order 36), ORD-48237 (Order 37), ORD-48238 (Order 38), ORD-48239 (Order 39)
      Preview (first 120 chars):
      [{"order_id":"ORD-48200","customer":"c0","name":"Order 0","total":0},{"order_id":"ORD-48201","customer":"c1","name":"Ord
      …
      The full result is kept. To read it, call recall_tool_result with mem_id="trm_0123456789abcdef01234567" and query="…" (every exact match, with context), or json_path="$…" (part of the JSON), or offset and max_chars (a slice)."
    `);
  });

  it("carries the keys of a map of records with the ids inside each, and the short values of an object", () => {
    const spec = JSON.stringify({
      openapi: "3.1.0",
      info: { version: "23.0.2" },
      paths: Object.fromEntries(
        Array.from({ length: 12 }, (_, i) => [
          `/repos/{owner}/{repo}/thing${i}`,
          {
            get: { operationId: `things/get-${i}`, summary: "Get" },
            post: { operationId: `things/create-${i}` },
          },
        ]),
      ),
    });
    expect(stubOf(spec)).toMatchInlineSnapshot(`
      "[tool result offloaded by edge-offload · mem_id trm_0123456789abcdef01234567]
      Output of api: 1,587 chars (~441 tokens), json, 1 line.
      JSON object, 3 keys:
        $.openapi: "3.1.0"
        $.info: object {version}
        $.paths: object(12 keys), values of objects {get: object, post: object}
      Keys of $.paths: /repos/{owner}/{repo}/thing0 (things/get-0, things/create-0), /repos/{owner}/{repo}/thing1 (things/get-1, things/create-1), /repos/{owner}/{repo}/thing2 (things/get-2, things/create-2), /repos/{owner}/{repo}/thing3 (things/get-3, things/create-3), /repos/{owner}/{repo}/thing4 (things/get-4, things/create-4), /repos/{owner}/{repo}/thing5 (things/get-5, things/create-5), /repos/{owner}/{repo}/thing6 (things/get-6, things/create-6), /repos/{owner}/{repo}/thing7 (things/get-7, things/create-7), /repos/{owner}/{repo}/thing8 (things/get-8, things/create-8), /repos/{owner}/{repo}/thing9 (things/get-9, things/create-9), /repos/{owner}/{repo}/thing10 (things/get-10, things/create-10), /repos/{owner}/{repo}/thing11 (things/get-11, things/create-11)
      Preview (first 120 chars):
      {"openapi":"3.1.0","info":{"version":"23.0.2"},"paths":{"/repos/{owner}/{repo}/thing0":{"get":{"operationId":"things/get
      …
      The full result is kept. To read it, call recall_tool_result with mem_id="trm_0123456789abcdef01234567" and query="…" (every exact match, with context), or json_path="$…" (part of the JSON), or offset and max_chars (a slice)."
    `);
  });

  it("carries a CSV's id column and the end of a log", () => {
    const csv = `method,path,operation_id\n${Array.from({ length: 30 }, (_, i) => `GET,/x/${i},x/get-${i}`).join("\n")}\n`;
    expect(stubOf(csv)).toMatchInlineSnapshot(`
      "[tool result offloaded by edge-offload · mem_id trm_0123456789abcdef01234567]
      Output of api: 575 chars (~160 tokens), csv, 31 lines.
      CSV: 30 rows × 3 columns (header: method, path, operation_id)
      Column operation_id: x/get-0, x/get-1, x/get-2, x/get-3, x/get-4, x/get-5, x/get-6, x/get-7, x/get-8, x/get-9, x/get-10, x/get-11, x/get-12, x/get-13, x/get-14, x/get-15, x/get-16, x/get-17, x/get-18, x/get-19, x/get-20, x/get-21, x/get-22, x/get-23, x/get-24, x/get-25, x/get-26, x/get-27, x/get-28, x/get-29
      Preview (first 109 chars):
      method,path,operation_id
      GET,/x/0,x/get-0
      GET,/x/1,x/get-1
      GET,/x/2,x/get-2
      GET,/x/3,x/get-3
      GET,/x/4,x/get-4
      …
      The full result is kept. To read it, call recall_tool_result with mem_id="trm_0123456789abcdef01234567" and query="…" (every exact match, with context), or offset and max_chars (a slice)."
    `);
    const log = `${Array.from({ length: 200 }, (_, i) => `test_${i} PASSED`).join("\n")}\n=== 199 passed, 1 failed in 3.2s ===\n`;
    expect(stubOf(log, "bash")).toMatchInlineSnapshot(`
      "[tool result offloaded by edge-offload · mem_id trm_0123456789abcdef01234567]
      Output of bash: 3,127 chars (~869 tokens), text, 201 lines.
      text: 201 lines, 3,127 chars
      Preview (first 111 chars):
      test_0 PASSED
      test_1 PASSED
      test_2 PASSED
      test_3 PASSED
      test_4 PASSED
      test_5 PASSED
      test_6 PASSED
      test_7 PASSED
      …
      Last 292 chars:
      …
      test_184 PASSED
      test_185 PASSED
      test_186 PASSED
      test_187 PASSED
      test_188 PASSED
      test_189 PASSED
      test_190 PASSED
      test_191 PASSED
      test_192 PASSED
      test_193 PASSED
      test_194 PASSED
      test_195 PASSED
      test_196 PASSED
      test_197 PASSED
      test_198 PASSED
      test_199 PASSED
      === 199 passed, 1 failed in 3.2s ===
      The full result is kept. To read it, call recall_tool_result with mem_id="trm_0123456789abcdef01234567" and query="…" (every exact match, with context), or offset and max_chars (a slice)."
    `);
  });

  it("keeps a stub of a large body bounded", () => {
    const huge = JSON.stringify(
      Array.from({ length: 5000 }, (_, i) => ({ id: `row-${i}-${"z".repeat(90)}`, v: i })),
    );
    const s = stubOf(huge);
    const index = s.split("\n").find((l) => l.startsWith("Index "))!;
    expect(index.length).toBeLessThanOrEqual(1200);
    expect(index).toMatch(/… \(\+4,9\d\d more\)$/);
  });
});
