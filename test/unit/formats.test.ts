/**
 * One case list, three formats: the invariants of the turn transform (the describe blocks below name them)
 * run against every adapter
 * through a per-format request builder (test/support/formats.ts); then what differs per format (OpenAI's
 * automatic caching, server-side history, legacy and custom tools); then the corpus sessions turn by turn,
 * converted to each OpenAI format.
 */
import { describe, expect, it } from "vitest";
import { adapterFor, compact } from "../../src/core/compact.ts";
import { parseJsonSpans } from "../../src/core/json/scan.ts";
import { recallToolDefinition } from "../../src/core/recall-tool.ts";
import type { Format } from "../../src/core/types.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { assistantIndexes, promptAt, readSessions, SAMPLE } from "../support/corpus.ts";
import {
  aiSdkKit,
  chatKit,
  KITS,
  type Kit,
  type Req,
  responsesKit,
  type Step,
} from "../support/formats.ts";
import { expectValidOutput, RECALL, resultOf, run, textOf } from "../support/invariants.ts";
import {
  deepFreeze,
  faultyStore,
  jsonBody,
  ON,
  SIZE_ONLY,
  textBody,
  untouchableStore,
} from "../support/requests.ts";

const LARGE = jsonBody(80_000);
const MEDIUM = textBody(20_000);
const EAGER = { ...ON, tool_result_recall_tool_declaration: "eager" } as const;

const parse = (s: unknown): Req => JSON.parse(s as string);
const analyze = (format: Format, text: string) =>
  adapterFor(format).analyze(text, parseJsonSpans(text));

describe.each(KITS.map((k) => [k.format, k] as const))(
  "%s: the shared invariant cases",
  (_format, kit) => {
    /** t1 large (settled), t2 small (hot) */
    const basic = (model = kit.model) =>
      kit.conversation(
        [
          { id: "t1", result: LARGE },
          { id: "t2", result: "ok" },
        ],
        { model },
      );

    describe("invariant 1: off means the same bytes", () => {
      it("returns the very same string and object, and never touches the store", async () => {
        const store = untouchableStore();
        const text = JSON.stringify(basic());
        for (const config of [undefined, {}, { tool_result_offload_enabled: true }]) {
          const out = await compact({
            format: kit.format,
            request: text,
            session: "s",
            store,
            config,
          });
          expect(out.request).toBe(text);
          expect(out.changed).toBe(false);
        }
        const obj = basic();
        expect(
          (await compact({ format: kit.format, request: obj, session: "s", store })).request,
        ).toBe(obj);
        expect(
          (await compact({ format: kit.format, request: "{not json", session: "s", store }))
            .request,
        ).toBe("{not json");
        expect(store.calls).toEqual([]);
      });

      it("with compaction on and nothing to change returns the same string", async () => {
        const text = JSON.stringify(
          kit.conversation([
            { id: "a", result: "small" },
            { id: "b", result: "small too" },
          ]),
        );
        const out = await compact({
          format: kit.format,
          request: text,
          session: "s",
          store: new MemoryStore(),
          config: SIZE_ONLY,
        });
        expect(out.request).toBe(text);
        expect(out.changed).toBe(false);
      });
    });

    describe("offload of a large settled result", () => {
      it("stubs it, ledgers the body, declares the recall tool at the end of tools", async () => {
        const store = new MemoryStore();
        const input = basic();
        const out = await run(kit, input, ON, store);
        const d = out.decisions.find((x) => x.tool_use_id === "t1")!;
        expect(d).toMatchObject({
          tier: "large",
          action: "offloaded",
          chars: LARGE.length,
          tool_name: "bash",
        });
        expect(d.mem_id).toMatch(/^trm_[0-9a-f]{24}$/);
        expect(d.gate?.fire).toBe(true);
        const stub = resultOf(kit, out.req, "t1") as string;
        expect(stub).toContain(d.mem_id!);
        expect(stub).toContain(RECALL);
        // a short stub; where the provider caches on its own (OpenAI), one whose preview is raised to keep
        // this small prompt at the cache minimum (1,024 tokens), still well below the result
        const raised = /preview raised/.test(d.reason);
        expect(raised).toBe(kit.format.startsWith("openai"));
        expect(stub.length).toBeLessThan(raised ? LARGE.length / 2 : 2500);
        expect((await store.getBody({ tenant: "default", session: "s" }, d.mem_id!))?.body).toBe(
          LARGE,
        );
        expect(kit.toolNames(out.req)).toEqual(["bash", RECALL]);
        expect(out.report).toMatchObject({
          format: kit.format,
          offloaded: 1,
          recall_tool: "added",
          priced_as: kit.model,
        });
        expect(out.report.tokens_after).toBeLessThan(out.report.tokens_before);
        expect(out.report.saved_usd).toBeGreaterThan(0);
        expectValidOutput(kit, input, out.req, out.report.anchor?.placed === true);
        // the declaration is the format's own
        expect(JSON.stringify(out.req.tools.at(-1))).toBe(
          JSON.stringify(recallToolDefinition(kit.format)),
        );
      });

      it("adds a tools array when the request has none", async () => {
        const input = kit.conversation(
          [
            { id: "t1", result: LARGE },
            { id: "t2", result: "x" },
          ],
          { tools: null },
        );
        const out = await run(kit, input, ON);
        expect(kit.toolNames(out.req)).toEqual([RECALL]);
        expectValidOutput(kit, input, out.req, out.report.anchor?.placed === true);
      });
    });

    describe("invariant 2: deterministic", () => {
      it("gives the same bytes for the same request and state, in fresh stores", async () => {
        const a = await run(kit, basic(), ON);
        const b = await run(kit, basic(), ON);
        expect(a.text).toBe(b.text);
        expect(a.changed).toBe(true);
      });

      it("keys mem_ids by secret, tenant and session", async () => {
        const text = JSON.stringify(basic());
        const id = async (session: Parameters<typeof compact>[0]["session"], secret?: string) =>
          (
            await compact({
              format: kit.format,
              request: text,
              session,
              store: new MemoryStore(),
              config: ON,
              ...(secret ? { secret } : {}),
            })
          ).decisions[0]!.mem_id;
        const base = await id("s");
        expect(base).toMatch(/^trm_/);
        expect(await id("s")).toBe(base);
        expect(await id("s2")).not.toBe(base);
        expect(await id({ tenant: "other", session: "s" })).not.toBe(base);
        expect(await id("s", "another secret")).not.toBe(base);
      });
    });

    describe("invariant 3: sticky", () => {
      it("renders a stubbed result with the same bytes whether the client sends the full or the compacted history", async () => {
        const store = new MemoryStore();
        const turns: Step[] = [
          { id: "t1", result: LARGE },
          { id: "t2", result: "ok" },
        ];
        const first = await run(kit, kit.conversation(turns), ON, store);
        const stub = resultOf(kit, first.req, "t1");
        expect(textOf(kit, stub)).toContain("trm_");
        const more: Step[] = [...turns, { id: "t3", result: "three" }];
        const full = await run(kit, kit.conversation(more), ON, store);
        expect(resultOf(kit, full.req, "t1")).toEqual(stub);
        const again = await run(
          kit,
          kit.addTurn(first.req, { id: "t3", result: "three" }),
          ON,
          store,
        );
        expect(resultOf(kit, again.req, "t1")).toEqual(stub);
        expect(again.decisions[0]).toMatchObject({ sticky: true, action: "offloaded" });
        // and the whole prefix up to t3 is byte-identical between the two ways of sending (but for the
        // cache markers: the compacted history echoes the default anchor where it was)
        const cut = (s: string) =>
          s.slice(0, s.indexOf('"t3"')).replace(/,"cache_control":\{"type":"ephemeral"\}/g, "");
        expect(cut(full.text)).toBe(cut(JSON.stringify(again.req)));
      });

      it("does not revisit a kept decision even when the config changes later", async () => {
        const store = new MemoryStore();
        const turns: Step[] = [
          { id: "t1", result: LARGE },
          { id: "t2", result: "ok" },
        ];
        const declined = await run(
          kit,
          kit.conversation(turns, { model: "no-such-model" }),
          ON,
          store,
        );
        expect(declined.decisions[0]).toMatchObject({ action: "kept", tier: "large" });
        expect(declined.decisions[0]!.reason).toContain("unknown model");
        const later = await run(kit, kit.conversation(turns), ON, store);
        expect(later.decisions[0]).toMatchObject({ action: "kept", sticky: true });
      });

      it("recognises the same body re-encoded differently (escapes) and still stubs it", async () => {
        const store = new MemoryStore();
        const turns: Step[] = [
          { id: "t1", result: `${"é".repeat(100)}${LARGE}` },
          { id: "t2", result: "ok" },
        ];
        const first = await run(kit, kit.conversation(turns), ON, store);
        const escaped = JSON.stringify(kit.conversation(turns)).replace(/é/g, "\\u00e9");
        const second = await run(kit, escaped, ON, store);
        expect(resultOf(kit, second.req, "t1")).toEqual(resultOf(kit, first.req, "t1"));
        expect(textOf(kit, resultOf(kit, second.req, "t1"))).toContain("trm_");
      });

      it("keeps a different body sent under a decided id, and says so", async () => {
        const store = new MemoryStore();
        await run(kit, basic(), ON, store);
        const other = jsonBody(90_000);
        const out = await run(
          kit,
          kit.conversation([
            { id: "t1", result: other },
            { id: "t2", result: "ok" },
          ]),
          ON,
          store,
        );
        expect(resultOf(kit, out.req, "t1")).toBe(other);
        expect(out.report.errors).toEqual([
          expect.objectContaining({ code: "conflict", tool_use_id: "t1" }),
        ]);
      });
    });

    describe("invariant 4: idempotent", () => {
      it("compacting a compacted request changes nothing", async () => {
        for (const config of [ON, SIZE_ONLY]) {
          const store = new MemoryStore();
          const once = await run(
            kit,
            kit.conversation([
              { id: "t1", result: LARGE },
              { id: "t2", result: MEDIUM },
              { id: "t3", result: "x" },
            ]),
            config,
            store,
          );
          expect(once.changed).toBe(true);
          const twice = await compact({
            format: kit.format,
            request: once.text,
            session: "s",
            store,
            config,
          });
          expect(twice.request).toBe(once.text);
          expect(twice.changed).toBe(false);
        }
      });
    });

    describe("invariant 5: nothing lost", () => {
      it("keeps the result full when the ledger write fails, reports it, and offloads on a later healthy turn", async () => {
        const store = new MemoryStore();
        const out = await run(kit, basic(), ON, faultyStore(store, { putBody: true }));
        expect(resultOf(kit, out.req, "t1")).toBe(LARGE);
        expect(out.decisions[0]).toMatchObject({ action: "kept", mem_id: null });
        expect(out.report.errors).toEqual([
          expect.objectContaining({ code: "storage_error", tool_use_id: "t1" }),
        ]);
        const healthy = await run(kit, basic(), ON, store);
        expect(healthy.decisions[0]!.action).toBe("offloaded");
      });

      it("keeps new results full when the decisions cannot be saved", async () => {
        const out = await run(kit, basic(), ON, faultyStore(new MemoryStore(), { commit: true }));
        expect(resultOf(kit, out.req, "t1")).toBe(LARGE);
        expect(out.report.errors[0]?.code).toBe("storage_error");
      });

      it("passes the request through when the session state cannot be read", async () => {
        const text = JSON.stringify(basic());
        const out = await compact({
          format: kit.format,
          request: text,
          session: "s",
          store: faultyStore(new MemoryStore(), { beginTurn: true }),
          config: ON,
        });
        expect(out.request).toBe(text);
        expect(out.report.errors[0]?.code).toBe("storage_error");
      });
    });

    describe("invariant 6: valid output", () => {
      it("keeps pairing, ids, order, media parts and the client's cache marker", async () => {
        const parts = [
          { type: "text" as const, text: LARGE.slice(0, 40_000) },
          ...(kit.media ? [{ type: "image" as const }] : []),
          { type: "text" as const, text: LARGE.slice(40_000), marker: true },
        ];
        const input = kit.conversation([
          { id: "t1", result: parts, is_error: true },
          { id: "t2", result: "ok" },
        ]);
        const out = await run(kit, input, ON);
        expect(out.decisions[0]).toMatchObject({ action: "offloaded", chars: LARGE.length + 1 });
        const content = resultOf(kit, out.req, "t1") as Req[];
        expect(content).toHaveLength(kit.media ? 2 : 1);
        expect(content[0]!.type).toBe(kit.textType);
        expect(content[0]!.text).toContain("trm_");
        expect(content[0]![kit.markerKey]).toEqual(
          ((resultOf(kit, input, "t1") as Req[]).at(-1) as Req)[kit.markerKey],
        );
        if (kit.media) expect(content[1]).toEqual((resultOf(kit, input, "t1") as Req[])[1]);
        // (the default anchor may go in: the offloaded result leaves its write within the risk bound)
        expectValidOutput(kit, input, out.req, out.report.anchor?.placed === true);
      });

      it("decides parallel results of one message one by one", async () => {
        const input = kit.conversation([
          { id: "a", result: "x" },
          [LARGE, "small", jsonBody(70_000)].map((result, i) => ({ id: `p${i + 1}`, result })),
          { id: "z", result: "last" },
        ]);
        const out = await run(kit, input, ON);
        expect(out.decisions.map((d) => [d.tool_use_id, d.action])).toEqual([
          ["a", "kept"],
          ["p1", "offloaded"],
          ["p2", "kept"],
          ["p3", "offloaded"],
          ["z", "kept"],
        ]);
        expectValidOutput(kit, input, out.req, out.report.anchor?.placed === true);
      });

      it("never mutates an object request, and returns a new object when it changes", async () => {
        const req = deepFreeze(basic());
        const copy = structuredClone(req);
        const out = await compact({
          format: kit.format,
          request: req,
          session: "s",
          store: new MemoryStore(),
          config: ON,
        });
        expect(out.request).not.toBe(req);
        expect(req).toEqual(copy);
        expect(textOf(kit, resultOf(kit, out.request as Req, "t1"))).toContain("trm_");
      });
    });

    describe("invariant 7: the recall tool", () => {
      it("eager: is declared from the first enabled turn even with nothing to offload, never twice", async () => {
        const store = new MemoryStore();
        const first = await run(kit, kit.conversation([{ id: "a", result: "x" }]), EAGER, store);
        expect(first.report.recall_tool).toBe("added");
        expect(kit.toolNames(first.req).at(-1)).toBe(RECALL);
        const again = await run(kit, first.text, EAGER, store);
        expect(kit.toolNames(again.req).filter((n) => n === RECALL)).toHaveLength(1);
        expect(again.report.recall_tool).toBe("present");
        expect(again.changed).toBe(false);
        const next = await run(
          kit,
          kit.conversation([
            { id: "a", result: "x" },
            { id: "b", result: "y" },
          ]),
          EAGER,
          store,
        );
        expect(JSON.stringify(next.req.tools)).toBe(JSON.stringify(first.req.tools));
      });

      it("lazy (default): costs nothing until the first offload, is declared on that turn and stays", async () => {
        const store = new MemoryStore();
        const none = await run(
          kit,
          kit.conversation([
            { id: "a", result: "x" },
            { id: "b", result: "y" },
          ]),
          ON,
          store,
        );
        expect(none.changed).toBe(false);
        expect(none.report.recall_tool).toBe("none");
        const turns: Step[] = [
          { id: "a", result: "x" },
          { id: "b", result: "y" },
          { id: "c", result: LARGE },
          { id: "d", result: "z" },
        ];
        const first = await run(kit, kit.conversation(turns), ON, store);
        expect(first.report.recall_tool).toBe("added");
        const gate = first.decisions.find((d) => d.tool_use_id === "c")!.gate!;
        expect(gate.tool_declaration_cost_usd).toBeGreaterThan(0);
        expect(gate.inputs.tool_tokens).toBeGreaterThan(50);
        expect(kit.toolNames(first.req)).toEqual(["bash", RECALL]);
        const later = await run(
          kit,
          kit.conversation([
            ...turns,
            { id: "e", result: jsonBody(70_000) },
            { id: "f", result: "w" },
          ]),
          ON,
          store,
        );
        expect(kit.toolNames(later.req)).toEqual(["bash", RECALL]);
        expect(later.decisions.find((d) => d.tool_use_id === "e")).toMatchObject({
          action: "offloaded",
        });
        expect(
          later.decisions.find((d) => d.tool_use_id === "e")!.gate!.tool_declaration_cost_usd,
        ).toBe(0);
      });

      it("stays declared once declared, even when offload is turned off later (stubs still point at it)", async () => {
        const store = new MemoryStore();
        await run(kit, basic(), ON, store);
        const later = await run(kit, basic(), SIZE_ONLY, store);
        expect(kit.toolNames(later.req).at(-1)).toBe(RECALL);
        expect(textOf(kit, resultOf(kit, later.req, "t1"))).toContain("trm_");
      });

      it("is not declared on the size-only path", async () => {
        const out = await run(
          kit,
          kit.conversation([
            { id: "t1", result: MEDIUM },
            { id: "t2", result: "x" },
          ]),
          SIZE_ONLY,
        );
        expect(out.decisions[0]!.action).toBe("compacted");
        expect(kit.toolNames(out.req)).toEqual(["bash"]);
      });
    });

    describe("invariant 8: the hot window", () => {
      it("never stubs the freshest keep_last_n results, even settled and large", async () => {
        const answered = kit.conversation(
          [
            { id: "t1", result: LARGE },
            { id: "t2", result: jsonBody(90_000) },
            { id: "t3", result: jsonBody(100_000) },
          ],
          { answered: true },
        );
        const one = await run(kit, answered, { ...ON, keep_last_n: 1 });
        expect(one.decisions.map((d) => d.tier)).toEqual(["large", "large", "hot"]);
        expect(one.decisions[2]!.action).toBe("kept");
        const three = await run(kit, answered, { ...ON, keep_last_n: 3 });
        expect(three.decisions.map((d) => d.action)).toEqual(["kept", "kept", "kept"]);
        expect(three.decisions.every((d) => d.tier === "hot")).toBe(true);
        expect(three.changed).toBe(false);
      });
    });

    describe("invariant 9: recall answers", () => {
      it("are never offloaded; once settled they become a marker naming the same mem_id and slice", async () => {
        const store = new MemoryStore();
        const first = await run(kit, basic(), ON, store);
        const memId = first.decisions[0]!.mem_id!;
        const turns: Step[] = [
          { id: "t1", result: LARGE },
          { id: "t2", result: "ok" },
          {
            id: "r1",
            name: RECALL,
            input: { mem_id: memId, offset: 0, max_chars: 70_000 },
            result: LARGE.slice(0, 70_000),
          },
          { id: "t4", result: "ok" },
        ];
        const out = await run(kit, kit.conversation(turns), ON, store);
        expect(out.decisions.find((d) => d.tool_use_id === "r1")).toMatchObject({
          action: "compacted",
          mem_id: memId,
          tool_name: RECALL,
        });
        const marker = textOf(kit, resultOf(kit, out.req, "r1"));
        expect(marker).toContain(memId);
        expect(marker).toContain("offset=0");
        expect(marker).toContain("max_chars=70000");
        expect(
          out.decisions.filter((d) => d.action === "offloaded").map((d) => d.tool_use_id),
        ).toEqual(["t1"]);
      });

      it("are ordinary results when the call's arguments are not valid JSON (they name no mem_id we issued)", async () => {
        // Anthropic's and the AI SDK's inputs are JSON values by construction
        if (kit.format === "anthropic" || kit.format === "ai-sdk") return;
        const input = kit.conversation([
          { id: "r1", name: RECALL, input: {}, result: textBody(20_000) },
          { id: "t2", result: "ok" },
        ]);
        const text = JSON.stringify(input).replace(
          JSON.stringify(JSON.stringify({})),
          JSON.stringify('{"mem_id": "trm_'),
        );
        expect(text).toContain('{\\"mem_id\\": \\"trm_"');
        const out = await run(kit, text, ON);
        expect(out.decisions[0]).toMatchObject({ action: "kept", tier: "medium", mem_id: null });
        expect(textOf(kit, resultOf(kit, out.req, "r1"))).toBe(textBody(20_000));
      });
    });

    describe("invariant 10: only text is measured", () => {
      it("ignores media parts (and non-text parts) when sizing a result", async () => {
        if (!kit.media) return; // Chat tool messages take text parts only
        const bigImage =
          kit.format === "anthropic"
            ? {
                type: "image",
                source: { type: "base64", media_type: "image/png", data: "A".repeat(200_000) },
              }
            : { type: "input_image", image_url: `data:image/png;base64,${"A".repeat(200_000)}` };
        const input = kit.conversation([
          { id: "t1", result: [{ type: "text", text: "caption" }] },
          { id: "t2", result: "x" },
        ]);
        const content = resultOf(kit, input, "t1") as Req[];
        content.unshift(bigImage);
        const out = await run(kit, input, ON);
        expect(out.decisions[0]).toMatchObject({ chars: 7, tier: "small", action: "kept" });
      });
    });

    describe("tiers and the size-only path", () => {
      it("classifies at the boundaries of the config", async () => {
        // Eager: the declaration is paid already, so only the tiers decide (on OpenAI every settled result is on
        // the cached side, and rewriting a long cached head for a lazy declaration would decline this one).
        const sizes = [8000, 8001, 59_999, 60_000];
        const input = kit.conversation(
          sizes.map((n, i) => ({ id: `t${i}`, result: textBody(n) })),
          { answered: true },
        );
        const out = await run(kit, input, { ...EAGER, keep_last_n: 0 });
        expect(out.decisions.map((d) => d.tier)).toEqual(["small", "medium", "medium", "large"]);
        expect(out.decisions.map((d) => d.action)).toEqual(["kept", "kept", "kept", "offloaded"]);
      });

      it("shortens settled, non-hot results over the floor to a head preview, bodies still recoverable", async () => {
        const store = new MemoryStore();
        const input = kit.conversation([
          { id: "t1", result: MEDIUM },
          { id: "t2", result: LARGE },
          { id: "t3", result: "hot" },
        ]);
        const out = await run(kit, input, SIZE_ONLY, store);
        expect(out.decisions.map((d) => d.action)).toEqual(["compacted", "compacted", "kept"]);
        const shortened = resultOf(kit, out.req, "t1") as string;
        expect(shortened.startsWith(MEDIUM.slice(0, 1000))).toBe(true);
        expect(shortened).toContain("shortened by edge-offload");
        const memId = out.decisions[0]!.mem_id!;
        expect(shortened).toContain(memId);
        expect((await store.getBody({ tenant: "default", session: "s" }, memId))?.body).toBe(
          MEDIUM,
        );
        expectValidOutput(kit, input, out.req, out.report.anchor?.placed === true);
      });

      it("keeps medium results full when offload is on", async () => {
        const out = await run(
          kit,
          kit.conversation([
            { id: "t1", result: MEDIUM },
            { id: "t2", result: "x" },
          ]),
          ON,
        );
        expect(out.decisions[0]).toMatchObject({ tier: "medium", action: "kept" });
      });

      it("never offloads for an unknown model", async () => {
        const out = await run(kit, basic("gpt-unknown-9"), ON);
        expect(out.decisions[0]).toMatchObject({ action: "kept", tier: "large" });
        expect(out.decisions[0]!.gate).toMatchObject({ fire: false, model: null });
      });
    });

    describe("bad input", () => {
      const reject = (request: unknown) =>
        compact({
          format: kit.format,
          request: typeof request === "string" ? request : JSON.stringify(request),
          session: "s",
          store: untouchableStore(),
          config: ON,
        }).catch((e: unknown) => e);

      it("rejects invalid JSON with the position", async () => {
        expect(await reject(`{"model": "x", "${kit.key}": [}`)).toMatchObject({
          type: "invalid_json",
          status: 400,
        });
        expect(
          await reject(`{"${kit.key}":[{"role":"user","content":"bad \\q escape"}]}`),
        ).toMatchObject({ type: "invalid_json", path: `${kit.key}[0].content` });
      });

      it("passes a shape it cannot read through unchanged, naming its path, without touching the store", async () => {
        for (const [request, path] of kit.badShapes) {
          const text = JSON.stringify(request);
          const store = untouchableStore();
          const out = await compact({
            format: kit.format,
            request: text,
            session: "s",
            store,
            config: ON,
          });
          expect(out.request, text).toBe(text);
          expect(out.changed).toBe(false);
          expect(out.report.errors, text).toEqual([
            { code: "invalid_request", message: expect.stringContaining(path), path },
          ]);
          expect(out.report.errors[0]!.message).toContain("passed through unchanged");
          expect(store.calls).toEqual([]);
        }
      });

      it("leaves a part it cannot place as it is and says where, compacting the rest", async () => {
        for (const [request, path] of kit.unplaced) {
          const out = await run(kit, request as Req, ON);
          expect(out.report.errors, JSON.stringify(request)).toContainEqual({
            code: "unplaced",
            message: expect.any(String),
            path,
          });
        }
        // Around a big settled result: it is still offloaded.
        const input = kit.conversation([
          { id: "t1", result: LARGE },
          { id: "t2", result: "ok" },
        ]);
        const [stray] = kit.unplaced.find(([, p]) => p.endsWith("role"))!;
        const key = kit.key as keyof Req;
        input[key].unshift(...((stray as Req)[key] as unknown[]));
        const out = await run(kit, input, { ...ON, tool_result_recall_tool_declaration: "eager" });
        expect(out.decisions.find((d) => d.tool_use_id === "t1")?.action).toBe("offloaded");
        expect(out.report.errors.map((e) => e.code)).toEqual(["unplaced"]);
      });

      it("leaves a result that does not answer a call it may answer, or answers twice, as it is", async () => {
        for (const [request, path] of kit.badPairing()) {
          const out = await run(kit, request, ON);
          expect(out.report.errors, JSON.stringify(request)).toContainEqual({
            code: "unplaced",
            message: expect.stringContaining("passed through as it is"),
            path,
          });
          expect(out.decisions.length).toBe(kit.results(request).length - 1);
        }
      });
    });

    describe("concurrency", () => {
      it("two turns racing on one session render the shared result identically", async () => {
        const store = new MemoryStore();
        const a = kit.conversation(
          [
            { id: "t1", result: LARGE },
            { id: "t2", result: "ok" },
          ],
          { model: "unpriced-model" },
        );
        const b = kit.conversation([
          { id: "t1", result: LARGE },
          { id: "t2", result: "ok" },
          { id: "t3", result: "more" },
        ]);
        const [x, y] = await Promise.all([run(kit, a, ON, store), run(kit, b, ON, store)]);
        expect(x.decisions[0]!.action).toBe(y.decisions[0]!.action);
        expect(resultOf(kit, x.req, "t1")).toEqual(resultOf(kit, y.req, "t1"));
      });
    });
  },
);

describe("unknown formats", () => {
  it("are an invalid_argument naming `format`, even names every object has", async () => {
    for (const format of ["gemini", "toString", "__proto__"]) {
      await expect(
        compact({
          format: format as Format,
          request: "{}",
          session: "s",
          store: untouchableStore(),
          config: ON,
        }),
      ).rejects.toMatchObject({ type: "invalid_argument", path: "format" });
    }
  });
});

/** A request whose t1 (a large result) is followed by `after` chars of other results before the newest turn. */
function deepResult(kit: Kit, after: number, opts: { model?: string; extra?: Req } = {}): Req {
  const filler = Array.from({ length: Math.ceil(after / 7000) }, (_, i) => ({
    id: `f${i}`,
    result: textBody(7000, `f${i}`),
  }));
  return kit.conversation([{ id: "t1", result: textBody(61_000) }, ...filler], opts);
}

describe.each([chatKit, responsesKit].map((k) => [k.format, k] as const))(
  "%s: OpenAI's automatic prompt caching",
  (_format, kit) => {
    const assistantStart = (text: string): number => {
      // prompt order is tools → instructions → messages/input; the newest turn starts at the last assistant message
      const req = parse(text);
      const items: Req[] = req[kit.key];
      let k = items.length - 1;
      while (items[k]!.role !== "assistant") k--;
      const before = JSON.stringify(items.slice(0, k)).length; // "[" + items + "," up to the last assistant message
      return (
        (req.tools === undefined ? 0 : JSON.stringify(req.tools).length) +
        (typeof req.instructions === "string" ? JSON.stringify(req.instructions).length : 0) +
        before
      );
    };

    it("puts a breakpoint where the newest turn starts once the prompt is long enough: what the previous request cached", () => {
      const text = JSON.stringify(
        kit.conversation(
          [
            { id: "t1", result: LARGE },
            { id: "t2", result: "ok" },
          ],
          { extra: kit.key === "input" ? { instructions: "Be brief." } : {} },
        ),
      );
      const a = analyze(kit.format, text);
      expect(a.client_caches).toBe(true);
      expect(a.breakpoints).toEqual([{ position: assistantStart(text), ttl: "5m" }]);
      expect(a.sites[0]!.position).toBeLessThan(a.breakpoints[0]!.position);
      expect(a.sites[1]!.position).toBeGreaterThan(a.breakpoints[0]!.position);
    });

    it("does not cache a prompt below the model's minimum (1,024 tokens)", () => {
      const short = analyze(
        kit.format,
        JSON.stringify(
          kit.conversation([
            { id: "t1", result: "x".repeat(2000) },
            { id: "t2", result: "ok" },
          ]),
        ),
      );
      expect(short).toMatchObject({ client_caches: false, breakpoints: [] });
      const long = analyze(
        kit.format,
        JSON.stringify(
          kit.conversation([
            { id: "t1", result: "x".repeat(4000) },
            { id: "t2", result: "ok" },
          ]),
        ),
      );
      expect(long.client_caches).toBe(true);
      expect(long.breakpoints).toHaveLength(1);
    });

    it("prices a settled result on the cached side: offloaded near the end, declined deep in a cached prefix", async () => {
      const near = await run(
        kit,
        kit.conversation([
          { id: "t1", result: LARGE },
          { id: "t2", result: "ok" },
        ]),
        ON,
      );
      expect(near.decisions[0]!.gate).toMatchObject({ fire: true, inputs: { cached_side: true } });
      expect(near.decisions[0]!.gate!.inputs.tokens_to_breakpoint).toBeLessThan(
        near.decisions[0]!.gate!.inputs.stub_tokens + 100,
      );
      const deep = await run(kit, deepResult(kit, 84_000), ON);
      const g = deep.decisions[0]!.gate!;
      expect(g).toMatchObject({ fire: false, inputs: { cached_side: true } });
      expect(g.inputs.tokens_to_breakpoint).toBeGreaterThan(20_000);
      expect(g.invalidation_cost_usd).toBeGreaterThan(0);
    });

    it("explicit mode with no breakpoint turns caching off: the result is priced at the input rate", async () => {
      const off = { prompt_cache_options: { mode: "explicit" } };
      const a = analyze(
        kit.format,
        JSON.stringify(deepResult(kit, 84_000, { model: "gpt-5.6", extra: off })),
      );
      expect(a).toMatchObject({ client_caches: false, breakpoints: [] });
      const out = await run(kit, deepResult(kit, 84_000, { model: "gpt-5.6", extra: off }), ON);
      expect(out.decisions[0]!.gate).toMatchObject({
        fire: true,
        invalidation_cost_usd: 0,
        inputs: { cached_side: false },
      });
      // the same request with implicit caching has the deep result on the cached side
      const cached = await run(kit, deepResult(kit, 84_000, { model: "gpt-5.6" }), ON);
      expect(cached.decisions[0]!.gate!.inputs.cached_side).toBe(true);
    });

    it("counts explicit prompt_cache_breakpoint markers where they end, with their TTL slot", () => {
      const req = kit.conversation(
        [
          { id: "t1", result: [{ type: "text", text: LARGE, marker: true }] },
          { id: "t2", result: "ok" },
        ],
        { model: "gpt-6.2-sol", extra: { prompt_cache_options: { ttl: "12h" } } },
      );
      const content = kit.results(req)[0]!.content as Req[];
      content[0]!.prompt_cache_breakpoint = { mode: "explicit", ttl: "30m" };
      const text = JSON.stringify(req);
      const a = analyze(kit.format, text);
      // the marked part's end, then the implicit breakpoint (request TTL 12h: the long write slot)
      expect(a.breakpoints.map((b) => b.ttl)).toEqual(["5m", "1h"]);
      expect(a.breakpoints[0]!.position).toBeLessThan(a.breakpoints[1]!.position);
      expect(a.breakpoints[0]!.position).toBeGreaterThan(LARGE.length);
    });

    it("keeps the prefix byte-stable across turns: only a first decision changes bytes the provider saw", async () => {
      const store = new MemoryStore();
      const itemOf = (req: Req, id: string) =>
        (req[kit.key] as Req[]).findIndex(
          (m) => (m.tool_call_id ?? (m.type?.endsWith("_output") ? m.call_id : undefined)) === id,
        );
      let steps: Step[] = [
        { id: "t1", result: LARGE },
        { id: "t2", result: "ok" },
      ];
      // (every result read in full once: what is checked is the decision once settled)
      const full = { ...ON, tool_result_first_delivery: "full" };
      let previous = (await run(kit, kit.conversation(steps), full, store)).req;
      let firsts = 0;
      for (let i = 3; i < 8; i++) {
        steps = [...steps, { id: `t${i}`, result: i === 4 ? jsonBody(70_000) : `r${i}` }];
        const out = await run(kit, kit.conversation(steps), full, store);
        const fresh = out.decisions
          .filter((d) => !d.sticky && d.action !== "kept")
          .map((d) => itemOf(out.req, d.tool_use_id));
        firsts += fresh.length;
        const stable = Math.min(previous[kit.key].length, ...fresh);
        expect(JSON.stringify(out.req[kit.key].slice(0, stable))).toBe(
          JSON.stringify(previous[kit.key].slice(0, stable)),
        );
        expect(stable).toBe(fresh.length === 0 ? previous[kit.key].length : itemOf(out.req, "t4"));
        expect(JSON.stringify(out.req.tools)).toBe(JSON.stringify(previous.tools));
        previous = out.req;
      }
      expect(firsts).toBe(1); // t4, once it left the hot window
    });
  },
);

describe("openai-chat specifics", () => {
  const kit = chatKit;

  it("passes legacy role:function messages through untouched and never decides them", async () => {
    const input = kit.conversation([{ id: "t1", result: "x" }]);
    input.messages.push(
      { role: "assistant", content: null, function_call: { name: "bash", arguments: "{}" } },
      { role: "function", name: "bash", content: LARGE },
    );
    input.messages.push(
      ...kit.addTurn({ messages: [] }, [{ id: "t2", result: LARGE }]).messages,
      ...kit.addTurn({ messages: [] }, { id: "t3", result: "ok" }).messages,
    );
    const out = await run(kit, input, ON);
    expect(out.decisions.map((d) => d.tool_use_id)).toEqual(["t1", "t2", "t3"]);
    expect(out.req.messages[4]).toEqual(input.messages[4]);
    expect(out.decisions[1]!.action).toBe("offloaded");
  });

  it("pairs custom tool calls like function calls", async () => {
    const input = kit.conversation([]);
    input.messages.push(
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "c1", type: "custom", custom: { name: "apply_patch", input: "*** Begin Patch" } },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: LARGE },
      ...kit.addTurn({ messages: [] }, { id: "t2", result: "ok" }).messages,
    );
    const out = await run(kit, input, ON);
    expect(out.decisions[0]).toMatchObject({
      tool_use_id: "c1",
      tool_name: "apply_patch",
      action: "offloaded",
    });
    expectValidOutput(kit, input, out.req, out.report.anchor?.placed === true);
  });

  it("pairs a tool call of a type it does not know by its id", async () => {
    const input = kit.conversation([]);
    input.messages.push(
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "n1", type: "next_kind", next_kind: {} }],
      },
      { role: "tool", tool_call_id: "n1", content: LARGE },
      ...kit.addTurn({ messages: [] }, { id: "t2", result: "ok" }).messages,
    );
    const out = await run(kit, input, ON);
    expect(out.decisions[0]).toMatchObject({
      tool_use_id: "n1",
      tool_name: "",
      action: "offloaded",
    });
  });

  it("sees a recall tool the client declared itself, and does not declare it again", async () => {
    const input = kit.conversation([
      { id: "t1", result: LARGE },
      { id: "t2", result: "ok" },
    ]);
    input.tools.push(recallToolDefinition("openai-chat"));
    const out = await run(kit, input, ON);
    expect(out.report.recall_tool).toBe("present");
    expect(kit.toolNames(out.req)).toEqual(["bash", RECALL]);
  });

  it("accepts assistant messages without content, and system/developer messages with text parts", async () => {
    const input = kit.conversation([
      { id: "t1", result: LARGE },
      { id: "t2", result: "ok" },
    ]);
    input.messages.unshift(
      { role: "system", content: [{ type: "text", text: "sys" }] },
      { role: "developer", content: "dev" },
    );
    delete input.messages[3].content;
    const out = await run(kit, input, ON);
    expect(out.decisions[0]!.action).toBe("offloaded");
    expectValidOutput(kit, input, out.req, out.report.anchor?.placed === true);
  });
});

describe("openai-responses specifics", () => {
  const kit = responsesKit;
  const output = (call_id: string, out: string) => ({
    type: "function_call_output",
    call_id,
    output: out,
  });

  it("takes a string input and instructions (nothing to decide; an eager declaration still lands at the end of tools)", async () => {
    const input = { model: kit.model, instructions: "Be brief.", input: "hello", tools: [] };
    expect((await run(kit, input, ON)).changed).toBe(false);
    const eager = await run(kit, input, EAGER);
    expect(eager.req).toEqual({ ...input, tools: [recallToolDefinition("openai-responses")] });
    const none = await run(kit, { model: kit.model }, EAGER);
    expect(kit.toolNames(none.req)).toEqual([RECALL]);
  });

  it("with previous_response_id: outputs for calls kept on the server are accepted, but they are the newest and nothing is offloaded", async () => {
    const input = {
      model: kit.model,
      previous_response_id: "resp_1",
      input: [output("call_9", LARGE)],
      tools: [],
    };
    const out = await run(kit, input, {
      ...ON,
      keep_last_n: 0,
      tool_result_first_delivery: "full",
    });
    expect(out.changed).toBe(false);
    expect(out.decisions).toEqual([
      expect.objectContaining({
        tool_use_id: "call_9",
        tool_name: "",
        action: "kept",
        tier: "large",
      }),
    ]);
    expect(out.decisions[0]!.reason).toContain("not settled");
    // the same input without server-side history is an unpaired output: left as it is, and noted
    const unpaired = await run(kit, { ...input, previous_response_id: null }, ON);
    expect(unpaired.decisions).toEqual([]);
    expect(unpaired.report.errors).toMatchObject([{ code: "unplaced", path: "input[0].call_id" }]);
    // a conversation id is server-side history too
    expect(
      (
        await run(
          kit,
          { ...input, previous_response_id: undefined, conversation: "conv_1" },
          { ...ON, tool_result_first_delivery: "full" },
        )
      ).changed,
    ).toBe(false);
  });

  it("with previous_response_id and several turns in input: the settled ones are decided as usual", async () => {
    const input = {
      model: kit.model,
      previous_response_id: "resp_1",
      input: [
        output("call_9", LARGE),
        ...kit.conversation([{ id: "t2", result: "ok" }]).input.slice(1),
      ],
    };
    const out = await run(kit, input, ON);
    expect(out.decisions[0]).toMatchObject({
      tool_use_id: "call_9",
      tool_name: "",
      action: "offloaded",
    });
    expect(resultOf(kit, out.req, "call_9")).toContain("trm_");
  });

  it("an item reference may stand for a stored call", async () => {
    const input = kit.conversation([{ id: "t2", result: "ok" }]);
    input.input.splice(1, 0, { type: "item_reference", id: "fc_1" }, output("call_1", "x"));
    input.input.splice(3, 0, { id: "msg_1" });
    expect((await run(kit, input, ON)).decisions.map((d) => d.tool_use_id)).toEqual([
      "call_1",
      "t2",
    ]);
    // a reference after the output cannot stand for its call
    const late = kit.conversation([{ id: "t2", result: "ok" }]);
    late.input.splice(1, 0, output("call_1", "x"), { type: "item_reference", id: "fc_1" });
    expect((await run(kit, late, ON)).report.errors).toMatchObject([
      { code: "unplaced", path: "input[1].call_id" },
    ]);
  });

  it("passes an output without a call_id through untouched", async () => {
    const input = kit.conversation([
      { id: "t1", result: "x" },
      { id: "t2", result: "ok" },
    ]);
    input.input.splice(3, 0, { type: "function_call_output", output: LARGE });
    const out = await run(kit, input, ON);
    expect(out.decisions.map((d) => d.tool_use_id)).toEqual(["t1", "t2"]);
    expect(out.changed).toBe(false);
  });

  it("pairs custom tool calls and leaves reasoning items, ids and statuses byte for byte", async () => {
    const input = kit.conversation([]);
    input.input.push(
      { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "gAAAA" },
      {
        type: "custom_tool_call",
        id: "ctc_1",
        call_id: "c1",
        name: "apply_patch",
        input: "*** Begin Patch",
        status: "completed",
      },
      {
        type: "custom_tool_call_output",
        call_id: "c1",
        output: [{ type: "input_text", text: LARGE }],
      },
      {
        type: "message",
        id: "msg_1",
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: "next", annotations: [] }],
      },
      {
        type: "function_call",
        id: "fc_2",
        call_id: "t2",
        name: "bash",
        arguments: "{}",
        status: "completed",
      },
      output("t2", "ok"),
    );
    const out = await run(kit, input, ON);
    expect(out.decisions[0]).toMatchObject({
      tool_use_id: "c1",
      tool_name: "apply_patch",
      action: "offloaded",
    });
    expect(out.req.input[3].output).toEqual([
      { type: "input_text", text: expect.stringContaining("trm_") },
    ]);
    expectValidOutput(kit, input, out.req, out.report.anchor?.placed === true);
    expect(out.report.turn).toBe(2);
  });

  it("counts a run of model items as one turn, and a result is settled only once a model item follows it", async () => {
    const input = kit.conversation([]);
    input.input.push(
      { type: "reasoning", id: "rs_1", summary: [] },
      { type: "function_call", call_id: "a", name: "bash", arguments: "{}" },
      { type: "function_call", call_id: "b", name: "bash", arguments: "{}" },
      output("a", "x"),
      output("b", "y"),
      { role: "user", content: "and?" },
    );
    let a = analyze(kit.format, JSON.stringify(input));
    expect(a.assistant_turns).toBe(1);
    expect(a.sites.map((s) => s.settled)).toEqual([false, false]);
    input.input.push(
      { type: "reasoning", id: "rs_2", summary: [] },
      { type: "web_search_call", id: "ws_1", status: "completed" },
    );
    a = analyze(kit.format, JSON.stringify(input));
    expect(a.assistant_turns).toBe(2);
    expect(a.sites.map((s) => s.settled)).toEqual([true, true]);
  });
});

const sessions = readSessions(SAMPLE);
const corpusConfigs: Record<string, Req> = {
  offload: { tool_result_compaction_enabled: true, tool_result_offload_enabled: true },
  "size-only": { tool_result_compaction_enabled: true },
  "offload, low threshold": {
    tool_result_compaction_enabled: true,
    tool_result_offload_enabled: true,
    tool_result_large_offload_threshold_chars: 8001,
  },
};

/**
 * The corpus replay of corpus.test.ts, for the OpenAI formats: each Anthropic session converted, each
 * assistant message one call whose prompt is everything before it. At every call the output must be valid,
 * sticky, idempotent, and the same whether the client sends its full history or our previous output plus the
 * new messages.
 */
describe.each(
  [chatKit, responsesKit, aiSdkKit].flatMap((k) =>
    Object.entries(corpusConfigs).map(
      ([name, config]) => [`${k.format}, ${name}`, k, config] as const,
    ),
  ),
)("corpus replay (%s)", (_name, kit, config) => {
  it.each(sessions.map((s) => [s.id, s] as const))("%s", async (_id, session) => {
    const full = new MemoryStore();
    const fed = new MemoryStore();
    let previousOut: Req | null = null;
    const stubbed = new Map<string, string>();
    let offloads = 0;
    for (const k of assistantIndexes(session)) {
      const prompt = kit.fromAnthropic(promptAt(session, k), kit.model);
      const out = await run(kit, prompt, config, full, session.id);
      expect(
        adapterFor(kit.format)
          .analyze(out.text, parseJsonSpans(out.text))
          .sites.map((s) => s.tool_use_id),
      ).toEqual(kit.results(prompt).map((r) => r.id));
      expectValidOutput(kit, prompt, out.req, out.report.anchor?.placed === true);
      for (const d of out.decisions) {
        const content = JSON.stringify(resultOf(kit, out.req, d.tool_use_id));
        if (stubbed.has(d.tool_use_id))
          expect(content, d.tool_use_id).toBe(stubbed.get(d.tool_use_id));
        else if (d.action !== "kept") stubbed.set(d.tool_use_id, content);
        if (d.action === "offloaded") offloads++;
      }
      expect(
        (
          await compact({
            format: kit.format,
            request: out.text,
            session: session.id,
            store: full,
            config,
          })
        ).request,
      ).toBe(out.text);
      const previous: Req[] = previousOut === null ? [] : previousOut[kit.key];
      const fedPrompt = {
        ...prompt,
        [kit.key]: [...previous, ...prompt[kit.key].slice(previous.length)],
      };
      const fedOut = await run(kit, fedPrompt, config, fed, session.id);
      expect(JSON.stringify(fedOut.req)).toBe(JSON.stringify(out.req));
      previousOut = out.req;
    }
    if (config.tool_result_offload_enabled && session.id.startsWith("dev-"))
      expect(offloads).toBeGreaterThan(0);
  });
});
