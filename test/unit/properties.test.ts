/**
 * Property tests of the turn transform: random conversations in all three formats (random sizes and kinds
 * of results, nesting, parallel calls, tool names including recall_tool_result, media parts, the client's
 * cache markers, the client sending back either its full history or our compacted output, the config
 * changing between turns), each turn checked against every invariant of the README's list. A fixed seed per
 * format makes a failure reproduce; fast-check prints the shrunk counterexample.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compact } from "../../src/core/compact.ts";
import { recall } from "../../src/core/recall.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { KITS, type Kit, type Part, type Req, type Turn } from "../support/formats.ts";
import { expectValidOutput, RECALL, textOf } from "../support/invariants.ts";
import { jsonBody, textBody } from "../support/requests.ts";

const SESSION = { tenant: "t", session: "prop" };
const SECRET = "property-test-secret-0123456789";

interface ResultSpec {
  size: number;
  kind: "json" | "text" | "nested" | "unicode";
  depth: number;
  /** Recall-named: which earlier result it reads (by index), else an ordinary tool. */
  name: "bash" | "read_file" | "recall";
  recallOf: number;
  parts: boolean;
  image: boolean;
  marker: boolean;
}

interface TurnSpec {
  results: ResultSpec[];
  /** The client sends its full history, or our previous output plus the new turn. */
  history: "full" | "ours";
  /** Anthropic: the client puts its advancing breakpoint on the last block (a caching client). */
  advancing: boolean;
  config: Record<string, unknown>;
}

const ON = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };
const CONFIGS: Record<string, unknown>[] = [
  {},
  ON,
  ON,
  ON,
  { tool_result_compaction_enabled: true },
  { ...ON, keep_last_n: 0 },
  { ...ON, keep_last_n: 2 },
  { ...ON, keep_last_n: 3 },
  { ...ON, tool_result_recall_tool_declaration: "eager" },
  { ...ON, tool_result_offload_shadow: true },
  { ...ON, tool_result_medium_tier: "cache_anchor" },
  { ...ON, tool_result_first_delivery: "gated", tool_result_first_delivery_min_chars: 8001 },
  { ...ON, tool_result_breakpoint_move: false },
  // every result read in full once: large ones are where the breakpoint moves
  { ...ON, tool_result_first_delivery: "full", tool_result_recall_tool_declaration: "eager" },
  { ...ON, tool_result_first_delivery: "full" },
  { ...ON, tool_result_recall_mode: "window" },
  { ...ON, tool_result_recall_mode: "structural" },
  {
    ...ON,
    tool_result_large_offload_threshold_chars: 20_000,
    tool_result_compaction_size_chars: 3000,
  },
];

const resultSpec: fc.Arbitrary<ResultSpec> = fc.record({
  size: fc.oneof(
    fc.constant(2),
    fc.integer({ min: 10, max: 7000 }),
    fc.integer({ min: 8001, max: 59_999 }),
    fc.integer({ min: 60_000, max: 110_000 }),
  ),
  kind: fc.constantFrom("json", "text", "nested", "unicode"),
  depth: fc.integer({ min: 1, max: 60 }),
  name: fc.constantFrom("bash", "bash", "read_file", "recall"),
  recallOf: fc.nat(20),
  parts: fc.boolean(),
  image: fc.boolean(),
  marker: fc.boolean(),
});

const scenario = fc.array(
  fc.record({
    results: fc.array(resultSpec, { minLength: 1, maxLength: 3 }),
    history: fc.constantFrom("full", "ours"),
    advancing: fc.boolean(),
    config: fc.constantFrom(...CONFIGS),
  }),
  { minLength: 1, maxLength: 5 },
);

function body(spec: ResultSpec, seed: number): string {
  switch (spec.kind) {
    case "json":
      return jsonBody(spec.size);
    case "text":
      return textBody(spec.size, `r${seed}`);
    case "nested":
      return `${"[".repeat(spec.depth)}${jsonBody(Math.max(0, spec.size - 2 * spec.depth))}${"]".repeat(spec.depth)}`;
    case "unicode":
      return textBody(spec.size, `é😀${seed}`);
  }
}

const enabled = (c: Record<string, unknown>) => c.tool_result_compaction_enabled === true;
const shadow = (c: Record<string, unknown>) => c.tool_result_offload_shadow === true;
const keepLast = (c: Record<string, unknown>) => (c.keep_last_n as number | undefined) ?? 1;
const sizeFloor = (c: Record<string, unknown>) =>
  (c.tool_result_compaction_size_chars as number | undefined) ?? 8000;
const MEM = /trm_[0-9a-f]{24}/g;

/** What the runs exercised (printed with PROPERTIES_VERBOSE=1): a property that never offloads tests little. */
const seen: Record<string, number> = {};
const count = (what: string) => {
  seen[what] = (seen[what] ?? 0) + 1;
};

const WARM = "kept while the cache is warm";
const MOVED = "kept on arrival: the cache breakpoint moved";
const countMarkers = (text: string) => (text.match(/"cache_control":\{/g) ?? []).length;

/** Runs one conversation turn by turn against two stores in lockstep, checking every invariant. */
async function play(kit: Kit, turns: TurnSpec[]): Promise<void> {
  const [a, b] = [new MemoryStore(), new MemoryStore()];
  const steps: Turn[][] = [];
  const original = new Map<string, string>(); // id → the result's text as the client has it
  const recallArg = new Map<string, string>(); // id of a recall-named result → the mem_id it reads
  const rendered = new Map<string, string>(); // id → its text once we changed it (sticky)
  const issued = new Map<number, string>(); // result number → mem_id issued for it
  let declared = false;
  let previous: Req | null = null;
  let n = 0;
  let markers = 0;

  for (const [k, turn] of turns.entries()) {
    const step: Turn[] = [];
    for (const spec of turn.results) {
      const id = `c${n}`;
      const number = n++;
      let text = body(spec, number);
      let name = spec.name === "recall" ? RECALL : spec.name;
      let input: Record<string, unknown> = { cmd: id };
      if (spec.name === "recall") {
        // A recall answer reads a body this session offloaded; without one, it is an ordinary call.
        const target = [...issued.entries()].find(([i]) => i === spec.recallOf % number);
        if (target === undefined) name = "read_file";
        else {
          input = { mem_id: target[1], offset: 0, max_chars: spec.size };
          recallArg.set(id, target[1]);
          text = text.slice(0, spec.size);
        }
      }
      original.set(id, text);
      // The client's own cache markers: at most 4 in an Anthropic request, as the API requires.
      const marker = spec.marker && kit.format !== "openai-responses" && markers < 3;
      if (marker) markers++;
      const parts: Part[] = [{ type: "text", text, marker }];
      if (spec.image && kit.media) parts.unshift({ type: "image" });
      step.push({ id, name, input, result: spec.parts || parts.length > 1 ? parts : text });
    }
    steps.push(step);
    const request: Req =
      turn.history === "ours" && previous !== null
        ? kit.addTurn(previous, step)
        : kit.conversation(steps);
    // A caching client's advancing breakpoint, within the API's four (our output may carry the one we
    // moved: a client that sends it back keeps it).
    if (kit.format === "anthropic" && turn.advancing && countMarkers(JSON.stringify(request)) < 4) {
      const last = request.messages.at(-1).content;
      last[last.length - 1] = { ...last[last.length - 1], cache_control: { type: "ephemeral" } };
    }
    const text = JSON.stringify(request);
    const config = turn.config;
    const run = (store: MemoryStore, req: string) =>
      compact({
        format: kit.format,
        request: req,
        session: SESSION,
        store,
        config,
        secret: SECRET,
      });
    const out = await run(a, text);
    const twin = await run(b, text);
    const output = JSON.parse(out.request as string) as Req;
    const where = `turn ${k + 1} (${JSON.stringify(config)}, ${turn.history})`;

    // 1. off: the same bytes.
    if (!enabled(config)) {
      expect(out.request, where).toBe(text);
      expect(out.changed).toBe(false);
    }
    // 2. deterministic: the same request and state give the same bytes.
    expect(twin.request, where).toBe(out.request);
    // 6. valid output (and 7: our tool at the end of tools, at most once).
    // (the anchor and the breakpoint move change where the format's markers are, nothing else)
    expectValidOutput(kit, request, output, true);
    if (kit.format === "anthropic") {
      expect(countMarkers(out.request as string)).toBeLessThanOrEqual(4);
      expect(countMarkers(out.request as string)).toBeLessThanOrEqual(
        Math.max(4, countMarkers(text)),
      );
      // The move: no breakpoint at or after a result kept out of the cache write on its arrival.
      const moved = out.decisions.filter((d) => d.reason.startsWith(MOVED));
      if (moved.length > 0 && enabled(config) && !shadow(config)) {
        count("breakpoint moved");
        const last = output.messages.at(-1).content as Req[];
        const from = last.findIndex((b) => b.tool_use_id === moved[0]!.tool_use_id);
        expect(from, `${where}: moved result in the last message`).toBeGreaterThanOrEqual(0);
        for (const b of last.slice(from))
          expect(b.cache_control, `${where}: moved`).toBeUndefined();
      }
    }
    if (kit.format !== "anthropic" || !enabled(config) || shadow(config))
      expect(
        out.decisions.some((d) => d.reason.startsWith(MOVED)),
        where,
      ).toBe(false);

    const live = enabled(config) && !shadow(config);
    const decidedBefore = new Set(rendered.keys());
    const results = kit.results(output);
    const ids = results.map((r) => r.id);
    const texts = new Map(results.map((r) => [r.id, textOf(kit, r.content)]));
    for (const [id, now] of texts) {
      const was = original.get(id)!;
      // 3. sticky: once changed, the same bytes on every later live turn, whichever history was sent.
      if (live && rendered.has(id)) expect(now, `${where}: ${id} sticky`).toBe(rendered.get(id));
      if (live && now !== was && !rendered.has(id)) rendered.set(id, now);
      // 10. only text is measured: a small text stays, whatever media sit next to it (unless an earlier
      // turn, under a lower size floor, decided it: sticky).
      if (was.length <= sizeFloor(config) && !decidedBefore.has(id))
        expect(now, `${where}: ${id} small`).toBe(was);
      // 9. a recall answer never gets a mem_id of its own.
      if (recallArg.has(id))
        for (const m of now.match(MEM) ?? []) expect(m, `${where}: ${id}`).toBe(recallArg.get(id));
    }
    // 8. the hot window: the freshest keep_last_n results stay as sent (a result stubbed on an earlier turn,
    // before a larger keep_last_n put it back in the window, stays stubbed: stickiness wins).
    // First delivery stubs a fresh result before the model reads it (the gate priced it): the window
    // keeps what the model has read.
    const firstDelivered = new Set(
      out.decisions.filter((d) => /first delivery/.test(d.reason)).map((d) => d.tool_use_id),
    );
    if (enabled(config))
      for (const id of ids.slice(Math.max(0, ids.length - keepLast(config))))
        if (!decidedBefore.has(id) && !firstDelivered.has(id))
          expect(texts.get(id), `${where}: ${id} hot`).toBe(original.get(id));
    // 7. once declared, the recall tool stays declared.
    const hasTool = kit.toolNames(output).includes(RECALL);
    if (live && declared) expect(hasTool, `${where}: tool stays`).toBe(true);
    if (live && hasTool) declared = true;
    // 5. nothing lost: a changed result's body is in the ledger, recallable, under the id it names.
    for (const d of out.decisions) {
      count(
        `${d.action}${recallArg.has(d.tool_use_id) ? " (recall answer)" : ""}${d.sticky ? " sticky" : ""}`,
      );
      if (d.mem_id === null || d.action === "kept") continue;
      const stored = await a.getBody(SESSION, d.mem_id);
      expect(stored, `${where}: ${d.tool_use_id} stored`).not.toBeNull();
      if (recallArg.has(d.tool_use_id)) expect(d.mem_id).toBe(recallArg.get(d.tool_use_id));
      else {
        expect(stored!.body, `${where}: ${d.tool_use_id} body`).toBe(original.get(d.tool_use_id));
        issued.set(Number(d.tool_use_id.slice(1)), d.mem_id);
        const head = await recall({ store: a, session: SESSION, mem_id: d.mem_id });
        expect(head.is_error).toBe(false);
        expect(head.content).toContain(stored!.body.slice(0, 200));
      }
    }
    // 4. idempotent: compacting our output changes nothing (on both stores, to keep them in lockstep).
    if (enabled(config)) {
      const again = await run(a, out.request as string);
      await run(b, out.request as string);
      expect(again.request, `${where}: idempotent`).toBe(out.request);
      if (out.decisions.some((d) => d.reason.startsWith(WARM)))
        count("kept while the cache is warm");
    }
    previous = output;
  }
}

describe.each(KITS.map((k, i) => [k.format, k, i] as const))(
  "%s: the invariants over random conversations",
  (_format, kit, i) => {
    it("hold on every turn", async () => {
      await fc.assert(
        fc.asyncProperty(scenario, (turns) => play(kit, turns)),
        {
          numRuns: Number(process.env.PROPERTIES_RUNS ?? 25),
          seed:
            process.env.PROPERTIES_SEED === undefined
              ? 1100 + i
              : Number(process.env.PROPERTIES_SEED),
          endOnFailure: true,
        },
      );
      if (process.env.PROPERTIES_VERBOSE) console.log(kit.format, JSON.stringify(seen));
    }, 120_000);
  },
);

describe("idempotent, even for a result declined while the cache is warm", () => {
  // A result the gate declines only because the cache is warm is recorded as kept while warm: compacting
  // the output again (priced against this turn's other changes: a later result stubbed, the recall tool
  // added) finds the record and decides nothing new.
  it("compacting our own output re-decides nothing", async () => {
    const ON_EAGER = { ...ON, tool_result_recall_tool_declaration: "eager" };
    const result = (size: number, more: Partial<ResultSpec> = {}): ResultSpec => ({
      size,
      kind: "json",
      depth: 1,
      name: "bash",
      recallOf: 0,
      parts: false,
      image: false,
      marker: false,
      ...more,
    });
    await play(KITS[0]!, [
      { results: [result(8001)], history: "full", advancing: false, config: ON_EAGER },
      { results: [result(60_000), result(10)], history: "full", advancing: false, config: {} },
      {
        results: [result(10, { image: true, marker: true })],
        history: "full",
        advancing: false,
        config: ON,
      },
    ]);
  });
});

describe.each(KITS.map((k) => [k.format, k] as const))("%s: nothing lost", (_format, kit) => {
  // A client's own tool named recall_tool_result, whose arguments name no mem_id this session issued:
  // its settled result is ordinary (a marker would point at a body stored nowhere).
  it("holds for a result of a client's own tool named recall_tool_result", async () => {
    const store = new MemoryStore();
    const text = textBody(61_300);
    const request = kit.conversation([
      { id: "r1", name: RECALL, input: { query: "x" }, result: text },
      { id: "t2", name: "bash", result: "ok" },
    ]);
    const out = await compact({
      format: kit.format,
      request: JSON.stringify(request),
      session: SESSION,
      store,
      config: ON,
      secret: SECRET,
    });
    const now = textOf(kit, kit.results(JSON.parse(out.request as string))[0]!.content);
    if (now === text) return;
    const memIds = now.match(MEM) ?? [];
    expect(memIds.length, "a changed result names where its body is").toBeGreaterThan(0);
    const stored = await store.getBody(SESSION, memIds[0]!);
    expect(stored?.body).toBe(text);
  });
});
