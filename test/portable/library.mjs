/**
 * The library's portable checks: the packed package, installed in a fresh folder, under every runtime the
 * README names (Node, Deno, Bun; test/unit/pack.test.ts runs this file there). Plain JavaScript and no test
 * framework, so each runtime runs the very same file (with catalog-turn.mjs beside it); the attachment
 * fixtures are read from `./fixtures`.
 * Prints one line per check and `N passed, N failed`; exits 1 when anything failed.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { compact, isOffloadError, MemoryStore, OffloadError, recall } from "edge-offload";
import { ExtractionDependencyMissingError, extractText } from "edge-offload/extract";
import { toolRoutes } from "edge-offload/hono";
import { offloadGate } from "edge-offload/pricing";
import { definePagedTool, toolResult } from "edge-offload/toolkit";
import { z } from "zod";
import { catalogTurn as anthropicTurn, CATALOG as catalog } from "./catalog-turn.mjs";

const runtime =
  typeof Deno !== "undefined"
    ? `deno ${Deno.version.deno}`
    : typeof Bun !== "undefined"
      ? `bun ${Bun.version}`
      : `node ${process.versions.node}`;
const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };
const SECRET = "portable-checks-secret-0123456789";

function assert(condition, message) {
  if (!condition) throw new Error(message);
}

const run = (store, request, format = "anthropic", session = "s1") =>
  compact({ format, request, session, config: ON, store, secret: SECRET });

const checks = {
  "everything off returns the very value it was given": async () => {
    const store = new MemoryStore();
    for (const request of ["{not even json", anthropicTurn()]) {
      const out = await compact({ request, session: "s", store });
      assert(out.request === request && !out.changed, "the request was not passed through");
    }
  },

  "a large settled result is offloaded, and recall reads it back three ways": async () => {
    const store = new MemoryStore();
    const out = await run(store, JSON.stringify(anthropicTurn()));
    const d = out.decisions[0];
    assert(d.action === "offloaded" && /^trm_[0-9a-f]{24}$/.test(d.mem_id), JSON.stringify(d));
    assert(
      out.request.length < 5000 && out.request.includes(d.mem_id),
      "the stub is not in the request",
    );
    const item = await recall({ store, session: "s1", mem_id: d.mem_id, json_path: "items[1499]" });
    assert(!item.is_error && item.content.includes('"price": 2248.5'), item.content);
    const query = await recall({ store, session: "s1", mem_id: d.mem_id, query: "item-1234" });
    assert(query.matches === 1 && query.content.includes("item-1234"), query.content);
    const slice = await recall({
      store,
      session: "s1",
      mem_id: d.mem_id,
      offset: 0,
      max_chars: 500,
    });
    assert(
      slice.next_offset === 500 && slice.total_chars === catalog.length,
      JSON.stringify(slice),
    );
    const other = await recall({ store, session: "s2", mem_id: d.mem_id });
    assert(other.is_error, "another session read the body");
  },

  "deterministic, sticky and idempotent": async () => {
    const raw = JSON.stringify(anthropicTurn());
    const a = await run(new MemoryStore(), raw);
    const store = new MemoryStore();
    const b = await run(store, raw);
    assert(a.request === b.request, "two fresh stores gave different bytes");
    assert(!(await run(store, b.request)).changed, "compacting the output changed it");
    const next = JSON.parse(b.request);
    next.messages.push(
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "toolu_3", name: "status", input: {} }],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_3", content: "ok" }] },
    );
    const c = await run(store, JSON.stringify(next));
    const stub = JSON.parse(b.request).messages[2].content[0].content;
    assert(JSON.parse(c.request).messages[2].content[0].content === stub, "the stub changed");
    assert(c.decisions[0].sticky, "the decision was not replayed");
  },

  "OpenAI Chat Completions and Responses requests": async () => {
    const call = (id, name) => ({ id, type: "function", function: { name, arguments: "{}" } });
    const chat = {
      model: "gpt-5.1",
      messages: [
        { role: "user", content: "go" },
        { role: "assistant", content: null, tool_calls: [call("c1", "dump")] },
        { role: "tool", tool_call_id: "c1", content: catalog },
        { role: "assistant", content: null, tool_calls: [call("c2", "status")] },
        { role: "tool", tool_call_id: "c2", content: "ok" },
      ],
    };
    const responses = {
      model: "gpt-5.1",
      input: [
        { role: "user", content: "go" },
        { type: "function_call", call_id: "c1", name: "dump", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: catalog },
        { type: "function_call", call_id: "c2", name: "status", arguments: "{}" },
        { type: "function_call_output", call_id: "c2", output: "ok" },
      ],
    };
    for (const [format, request] of [
      ["openai-chat", chat],
      ["openai-responses", responses],
    ]) {
      const out = await run(new MemoryStore(), JSON.stringify(request), format);
      assert(out.decisions[0].action === "offloaded", `${format}: ${out.decisions[0].reason}`);
      assert(out.report.recall_tool === "added", `${format}: no recall tool`);
    }
  },

  "the net-saving gate": async () => {
    const seed = {
      model: "claude-opus-4-5",
      result_tokens: 321_000,
      stub_tokens: 300,
      horizon: 5,
      recall_probability: 0.5,
      cached_side: false,
      context_tokens: 9000,
    };
    const fired = offloadGate(seed);
    assert(fired.fire && fired.net_usd > 7 && fired.net_usd < 9, JSON.stringify(fired));
    assert(!offloadGate({ ...seed, model: "no-such-model" }).fire, "an unpriced model fired");
  },

  "bad input is an OffloadError naming where": async () => {
    const error = await run(new MemoryStore(), '{"model":"claude-opus-4-5","messages":[}').then(
      () => null,
      (e) => e,
    );
    assert(isOffloadError(error) && error instanceof OffloadError, String(error));
    assert(error.type === "invalid_json" && error.status === 400, JSON.stringify(error.toJSON()));
  },

  "attachments: CSV, HTML, DOCX, XLSX and PDF to text": async () => {
    const want = {
      "table.csv": "csv",
      "page.html": "html",
      "report.docx": "docx",
      "workbook.xlsx": "xlsx",
      "text.pdf": "pdf",
    };
    for (const [file, format] of Object.entries(want)) {
      const data = new Uint8Array(readFileSync(`fixtures/${file}`));
      const out = await extractText({ data, filename: file });
      assert(out.format === format && out.text.trim().length > 0, `${file}: ${out.format}`);
    }
    assert(ExtractionDependencyMissingError.name !== "", "typed errors are exported");
  },

  "tool kit: a paged tool, its result block, and edge-offload/hono": async () => {
    const rows = Array.from({ length: 95 }, (_, i) => ({ sku: `p${i}` }));
    const tool = definePagedTool({
      name: "search_products",
      description: "Search the catalog.",
      input: z.object({ query: z.string() }),
      rows: () => rows,
    });
    const answer = await tool.call({ query: "p", limit: 20 });
    assert(
      !answer.is_error && answer.value.total === 95 && answer.value.next_offset === 20,
      answer.content,
    );
    const block = toolResult("anthropic", "toolu_9", answer);
    assert(block.type === "tool_result" && block.tool_use_id === "toolu_9", JSON.stringify(block));
    const bad = await tool.call({ query: 3 });
    assert(bad.is_error && bad.content.includes("query"), bad.content);
    const app = toolRoutes([tool]);
    const res = await app.request("/tools/search_products?query=p&limit=5");
    const page = await res.json();
    assert(res.status === 200 && page.returned === 5, JSON.stringify(page));
  },

  "require() hands back the same module as import": async () => {
    const required = createRequire(import.meta.url)("edge-offload");
    assert(required.compact === compact, "require() loaded a second copy");
  },
};

let passed = 0;
let failed = 0;
for (const [name, check] of Object.entries(checks)) {
  try {
    await check();
    passed++;
    console.log(`ok - ${name}`);
  } catch (e) {
    failed++;
    console.log(`not ok - ${name}: ${e instanceof Error ? e.message : String(e)}`);
  }
}
console.log(runtime);
console.log(`${passed} passed, ${failed} failed`);
if (failed > 0) process.exit(1);
