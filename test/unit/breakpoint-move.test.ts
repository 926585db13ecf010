/**
 * The breakpoint move (tool_result_breakpoint_move, on by default): a fresh result the gate prices to
 * offload once settled is kept out of the cache write of its arrival call (the client's breakpoint moves to
 * just before it) and stubbed on the next call. Its pricing (move.ts), the marker edits, and the invariants
 * the move must keep: sticky, deterministic, idempotent, valid (at most 4 breakpoints, TTL order).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compact } from "../../src/core/compact.ts";
import { memberRemoval } from "../../src/core/formats/anthropic-anchor.ts";
import { analyzeAnthropic } from "../../src/core/formats/anthropic-walk.ts";
import { offloadGate } from "../../src/core/gate.ts";
import { type JsonObject, parseJsonSpans } from "../../src/core/json/scan.ts";
import { hotProbability, moveGate } from "../../src/core/move.ts";
import { resolveModel, usd } from "../../src/core/pricing.ts";
import { sentOffset, type TurnContext } from "../../src/core/turn/context.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { anthropicKit } from "../support/formats.ts";
import { expectValidOutput } from "../support/invariants.ts";
import {
  type Block,
  conversation,
  jsonBody,
  ON,
  type Turn,
  textBody,
} from "../support/requests.ts";

type Req = Record<string, any>;
const EPH = { type: "ephemeral" };
const markers = (text: string) => (text.match(/"cache_control":\{/g) ?? []).length;

/** The conversation as a caching client sends it: its breakpoint on the last block of the prompt. */
function cached(turns: Turn[], marker: Record<string, unknown> = EPH, model = "claude-sonnet-4-6") {
  const req = conversation(turns, { model }) as Req;
  const last = req.messages.at(-1).content;
  last[last.length - 1] = { ...last[last.length - 1], cache_control: marker };
  return req;
}

const small = (i: number): Turn => ({ id: `s${i}`, result: `small result ${i}` });
const big = (id = "big", chars = 120_000): Turn => ({ id, result: jsonBody(chars) });
/** Earlier turns where the model answered each result with another tool call (an agent loop). */
const history = Array.from({ length: 6 }, (_, i) => small(i));

/** Every result read in full once (first delivery "full"): the move alone. */
const MOVE = { ...ON, tool_result_first_delivery: "full" };

async function run(
  request: Req | string,
  config: Record<string, unknown> = MOVE,
  store = new MemoryStore(),
  session = "s",
) {
  const text = typeof request === "string" ? request : JSON.stringify(request);
  const out = await compact({ request: text, session, store, config });
  return { out, text: out.request as string, req: JSON.parse(out.request as string) as Req };
}

describe("the move on the arrival call", () => {
  it("moves the client's breakpoint from a large fresh result to the block before it", async () => {
    const request = cached([...history, big()]);
    const { out, req, text } = await run(request);
    const lastUser = req.messages.at(-1).content;
    // the result is sent in full, without the marker; the tool_use before it carries one instead
    expect(lastUser[0].content).toBe(request.messages.at(-1).content[0].content);
    expect(lastUser[0].cache_control).toBeUndefined();
    expect(req.messages.at(-2).content.at(-1).cache_control).toEqual(EPH);
    expect(markers(text)).toBe(1);
    const d = out.decisions.find((x) => x.tool_use_id === "big")!;
    expect(d.action).toBe("kept");
    expect(d.reason).toMatch(/^kept on arrival: the cache breakpoint moved before it/);
    // the rest of the request is byte for byte the client's
    const strip = (s: string) => s.replace(/,"cache_control":\{"type":"ephemeral"\}/g, "");
    expect(strip(text)).toBe(strip(JSON.stringify(request)));
  });

  it("stubs the result on the next call, whatever the gate would say then", async () => {
    const store = new MemoryStore();
    await run(cached([...history, big()]), MOVE, store);
    const next = await run(cached([...history, big(), small(9)]), MOVE, store);
    const d = next.out.decisions.find((x) => x.tool_use_id === "big")!;
    expect(d.action).toBe("offloaded");
    expect(d.gate).toBeUndefined();
    expect(d.reason).toContain("offloaded once settled, as decided on its arrival");
    expect(next.req.messages.at(-3).content[0].content).toContain(d.mem_id!);
    // the client's own breakpoint on the new last block stays where it is
    expect(next.req.messages.at(-1).content.at(-1).cache_control).toEqual(EPH);
  });

  it("is deterministic, idempotent and sticky over a retry", async () => {
    const request = cached([...history, big()]);
    const [a, b] = [new MemoryStore(), new MemoryStore()];
    const first = await run(request, MOVE, a);
    expect((await run(request, MOVE, b)).text).toBe(first.text);
    // our own output again: nothing further moves
    expect((await run(first.text, MOVE, a)).text).toBe(first.text);
    // the same request again (a retry): the record moves it the same way
    const retry = await run(request, MOVE, a);
    expect(retry.text).toBe(first.text);
    expect(retry.out.decisions.find((x) => x.tool_use_id === "big")!.reason).toMatch(
      /^kept on arrival/,
    );
  });

  it("keeps a 1-hour breakpoint's TTL, and the other breakpoints and their order", async () => {
    const request = cached([...history, big()], { type: "ephemeral", ttl: "1h" });
    request.system = [
      { type: "text", text: "sys", cache_control: { type: "ephemeral", ttl: "1h" } },
    ];
    const { req, text } = await run(request);
    expect(req.system[0].cache_control).toEqual({ type: "ephemeral", ttl: "1h" });
    expect(req.messages.at(-2).content.at(-1).cache_control).toEqual({
      type: "ephemeral",
      ttl: "1h",
    });
    expect(markers(text)).toBe(2);
  });

  it("moves several of the client's markers after the result, and never exceeds four", async () => {
    const request = cached([...history, big()]);
    const user = request.messages.at(-1);
    user.content = [
      { ...user.content[0], cache_control: EPH },
      { type: "text", text: "and a note", cache_control: EPH },
    ];
    request.system = [
      { type: "text", text: "a", cache_control: EPH },
      { type: "text", text: "b", cache_control: EPH },
    ];
    expect(markers(JSON.stringify(request))).toBe(4);
    const { req, text } = await run(request);
    expect(markers(text)).toBe(3);
    expect(req.messages.at(-1).content.every((b: Block) => b.cache_control === undefined)).toBe(
      true,
    );
    expect(JSON.parse(text)).toBeTruthy();
  });

  it("does not add a marker where the block before the result already carries one", async () => {
    const request = cached([...history, big()]);
    request.messages.at(-2).content.at(-1).cache_control = EPH;
    const { req, text } = await run(request);
    expect(markers(text)).toBe(1);
    expect(req.messages.at(-2).content.at(-1).cache_control).toEqual(EPH);
    expect(req.messages.at(-1).content[0].cache_control).toBeUndefined();
  });
});

describe("the move against first delivery (both on, the defaults)", () => {
  it("stubs on arrival where that saves more; prices the move's stub as an unseen result's", async () => {
    // A large result: stubbed on arrival saves its whole write and every later read.
    const large = await run(cached([...history, big()]), ON);
    expect(large.out.decisions.find((x) => x.tool_use_id === "big")).toMatchObject({
      action: "offloaded",
    });
    // A medium one the model has not seen, in a longer session (the recall tool already declared): too
    // likely recalled to stub unseen (the margin's hop). The move would bind the same stub on arrival,
    // before the model has used the result, so it is priced at the same recall chance and declines too:
    // the client's breakpoint stays on the result (priced at the settled chance, it used to move).
    const longer = Array.from({ length: 12 }, (_, i) => ({
      id: `h${i}`,
      result: textBody(7000, `h${i}`),
    }));
    const medium = cached([...longer, { id: "big", result: textBody(20_000) }]);
    const EAGER = { ...ON, tool_result_recall_tool_declaration: "eager" };
    const m = await run(medium, EAGER);
    const d = m.out.decisions.find((x) => x.tool_use_id === "big")!;
    expect(d.action).toBe("kept");
    expect(d.reason).toMatch(/^first delivery declined/);
    expect(m.req.messages.at(-1).content[0].cache_control).toEqual(EPH);
    // The move alone (every result read in full once) prices it the same way: not moved either.
    const alone = await run(medium, { ...MOVE, tool_result_recall_tool_declaration: "eager" });
    expect(alone.req.messages.at(-1).content[0].cache_control).toEqual(EPH);
    expect(alone.out.decisions.find((x) => x.tool_use_id === "big")!.reason).not.toMatch(/moved/);
  });
});

describe("where the move does not apply", () => {
  const expectUntouched = async (request: Req, config: Record<string, unknown> = MOVE) => {
    const { out, text } = await run(request, config);
    expect(text).toBe(JSON.stringify(request));
    expect(out.decisions.find((x) => x.tool_use_id === "big")!.reason).not.toMatch(/moved/);
  };

  it("a client that sets no breakpoint (nothing is written), or automatic caching", async () => {
    await expectUntouched(conversation([...history, big()], { model: "claude-sonnet-4-6" }));
    await expectUntouched(
      conversation([...history, big()], {
        model: "claude-sonnet-4-6",
        extra: { cache_control: EPH },
      }),
    );
  });

  it("off, in shadow, or with the size-only path", async () => {
    await expectUntouched(cached([...history, big()]), {
      ...MOVE,
      tool_result_breakpoint_move: false,
    });
    await expectUntouched(cached([...history, big()]), {
      ...MOVE,
      tool_result_offload_shadow: true,
    });
    const sizeOnly = await run(cached([...history, big()]), {
      tool_result_compaction_enabled: true,
    });
    expect(sizeOnly.text).toBe(JSON.stringify(cached([...history, big()])));
  });

  it("a result that stays in the hot window after one more (keep_last_n 2), or a small one", async () => {
    await expectUntouched(cached([...history, big()]), { ...MOVE, keep_last_n: 2 });
    const { text } = await run(cached([...history, small(7)]));
    expect(text).toBe(JSON.stringify(cached([...history, small(7)])));
  });

  it("a marker the format cannot take out: inside the result's content", async () => {
    const request = cached([...history, big()]);
    const result = request.messages.at(-1).content[0];
    delete result.cache_control;
    result.content = [{ type: "text", text: result.content, cache_control: EPH }];
    await expectUntouched(request);
  });

  it("where a cache write costs input (OpenAI before GPT-5.6): nothing to save", async () => {
    await expectUntouched(cached([...history, big()], EPH, "gpt-5"));
  });

  it("a session's first result: nothing shows yet that the model will call a tool again", async () => {
    await expectUntouched(cached([big()]));
  });

  it("where the model answers results without calling a tool (the result would stay hot)", async () => {
    // A dialogue: every result was followed by a text answer and a user turn.
    const req = cached([...history, big()]) as Req;
    const messages: Req[] = [];
    for (const m of req.messages) {
      messages.push(m);
      const isResult = m.role === "user" && Array.isArray(m.content) && m !== req.messages.at(-1);
      if (isResult && m.content[0]?.type === "tool_result") {
        messages.push({ role: "assistant", content: [{ type: "text", text: "noted" }] });
        messages.push({ role: "user", content: "go on" });
      }
    }
    const chat = { ...req, messages };
    const analysis = analyzeAnthropic(JSON.stringify(chat), parseJsonSpans(JSON.stringify(chat)));
    expect(analysis.tool_chain).toEqual({ answered: 6, chained: 0 });
    await expectUntouched(chat);
  });
});

describe("move.ts: the price of the move", () => {
  const sonnet = resolveModel("claude-sonnet-4-6")!;
  const gate = {
    model: sonnet,
    result_tokens: 30_000,
    stub_tokens: 300,
    horizon: 5,
    recall_probability: 0.5,
    cached_side: false,
    context_tokens: 40_000,
    client_caches: true,
  };

  it("adds the move's own saving to the stub once settled, less the hot-window risk", () => {
    const m = moveGate({ gate, rest_tokens: 100, hot_probability: 0.2 });
    const stub = offloadGate({ ...gate, cached_side: true, tokens_to_breakpoint: 0 });
    expect(m.gate.net_usd).toBeCloseTo(stub.net_usd, 9);
    const move =
      usd(30_000, sonnet.cache_write_5m - sonnet.input) -
      usd(300, sonnet.cache_write_5m - sonnet.cache_read) -
      usd(100, sonnet.input - sonnet.cache_read);
    expect(m.move_saving_usd).toBeCloseTo(move, 9);
    expect(m.hot_risk_usd).toBeCloseTo(0.2 * usd(30_100, sonnet.input - sonnet.cache_read), 9);
    expect(m.net_usd).toBeCloseTo(0.8 * (stub.net_usd + move) - m.hot_risk_usd, 9);
    expect(m.fire).toBe(true);
  });

  it("holds the move to the gate's robustness margin, on the move's and the stub's gross together", () => {
    const plain = moveGate({ gate, rest_tokens: 100, hot_probability: 0.2 });
    expect(plain.fire).toBe(true);
    const gross = 0.8 * (plain.gate.reprefill_saving_usd + plain.move_saving_usd);
    const share = plain.net_usd / gross;
    expect(
      moveGate({
        gate: { ...gate, min_net_share: share * 0.99 },
        rest_tokens: 100,
        hot_probability: 0.2,
      }).fire,
    ).toBe(true);
    const over = moveGate({
      gate: { ...gate, min_net_share: share * 1.01 },
      rest_tokens: 100,
      hot_probability: 0.2,
    });
    expect(over.fire).toBe(false);
    expect(over.reason).toContain("tool_result_offload_min_net_share");
  });

  it("saves more under a 1-hour TTL (a write costs 2× input)", () => {
    const short = moveGate({ gate, rest_tokens: 0, hot_probability: 0.2 });
    const long = moveGate({
      gate: { ...gate, cache_ttl: "1h" },
      rest_tokens: 0,
      hot_probability: 0.2,
    });
    expect(long.move_saving_usd).toBeGreaterThan(short.move_saving_usd * 3);
  });

  it("declines where a write costs input, where the result would likely stay hot, for an unknown model", () => {
    const gpt = moveGate({
      gate: { ...gate, model: resolveModel("gpt-5")! },
      rest_tokens: 0,
      hot_probability: 0.1,
    });
    expect(gpt.fire).toBe(false);
    expect(gpt.reason).toContain("costs no more than input");
    expect(moveGate({ gate, rest_tokens: 0, hot_probability: 0.9 }).fire).toBe(false);
    expect(
      moveGate({ gate: { ...gate, model: "no-such-model" }, rest_tokens: 0, hot_probability: 0 })
        .fire,
    ).toBe(false);
    // what follows the result in full and would be billed twice
    expect(
      moveGate({ gate: { ...gate, result_tokens: 2000 }, rest_tokens: 50_000, hot_probability: 0 })
        .fire,
    ).toBe(false);
  });

  it("counts the prefix a moved breakpoint would leave below the minimum cacheable length", () => {
    const opus = resolveModel("claude-opus-4-5")!;
    const g = { ...gate, model: opus, result_tokens: 6000, context_tokens: 9000 };
    const cacheable = moveGate({
      gate: g,
      rest_tokens: 0,
      hot_probability: 0,
      prefix_tokens: 5000,
    });
    const low = moveGate({ gate: g, rest_tokens: 0, hot_probability: 0, prefix_tokens: 3000 });
    // below Opus 4.5's 4,096 tokens the call caches nothing: the next call writes what it would read
    expect(cacheable.move_saving_usd - low.move_saving_usd).toBeCloseTo(
      usd(3000, opus.input - opus.cache_read),
      9,
    );
    expect(cacheable.fire).toBe(true);
    expect(low.fire).toBe(false);
    // unknown prefix (older callers): priced as cacheable
    expect(moveGate({ gate: g, rest_tokens: 0, hot_probability: 0 }).move_saving_usd).toBeCloseTo(
      cacheable.move_saving_usd,
      9,
    );
  });

  it("learns the hot-window chance from the session's history: no move before the model chained a tool call", () => {
    expect(hotProbability(undefined)).toBe(1);
    expect(hotProbability({ answered: 3, chained: 0 })).toBe(1);
    expect(hotProbability({ answered: 1, chained: 1 })).toBeCloseTo(1 / 3, 10);
    expect(hotProbability({ answered: 10, chained: 10 })).toBeCloseTo(1 - 11 / 12, 10);
    expect(hotProbability({ answered: 10, chained: 2 })).toBeCloseTo(1 - 3 / 12, 10);
    expect(hotProbability({ answered: -5, chained: 99 })).toBe(1);
    expect(moveGate({ gate, rest_tokens: 0, hot_probability: 1 }).fire).toBe(false);
  });
});

describe("memberRemoval", () => {
  const remove = (text: string, key = "cache_control") => {
    const node = parseJsonSpans(text) as JsonObject;
    const span = memberRemoval(text, node, key);
    return span === undefined ? undefined : text.slice(0, span.start) + text.slice(span.end);
  };

  it("takes a member out with one comma, wherever it is", () => {
    expect(remove('{"a":1,"cache_control":{"type":"ephemeral"}}')).toBe('{"a":1}');
    expect(remove('{"cache_control":{"type":"ephemeral"},"a":1}')).toBe('{"a":1}');
    expect(remove('{"a":1,"cache_control":{},"b":2}')).toBe('{"a":1,"b":2}');
    expect(remove('{ "cache_control" : {} ,\n "a" : 1 }')).toBe('{"a" : 1 }');
    expect(remove('{"a":[1,{"x":2}] , "cache_control" : { "type" : "ephemeral" } }')).toBe(
      '{"a":[1,{"x":2}] }',
    );
    for (const t of [
      '{"a":1,"cache_control":{"type":"ephemeral"}}',
      '{"cache\\u005fcontrol":{},"a":1}',
    ])
      expect(JSON.parse(remove(t)!)).not.toHaveProperty("cache_control");
  });

  it("refuses a duplicated key or a lone member", () => {
    expect(remove('{"cache_control":{},"a":1,"cache_control":{}}')).toBeUndefined();
    expect(remove('{"cache_control":{}}')).toBeUndefined();
    expect(remove('{"a":1}')).toBeUndefined();
  });
});

describe("the move's invariants over random agent sessions (property)", () => {
  const sizes = fc.oneof(
    fc.integer({ min: 10, max: 7000 }),
    fc.integer({ min: 8001, max: 59_999 }),
    fc.integer({ min: 60_000, max: 150_000 }),
  );
  const session = fc.array(
    fc.record({
      size: sizes,
      history: fc.constantFrom("full", "ours"),
      config: fc.constantFrom<Record<string, unknown>>(MOVE, ON, {
        ...MOVE,
        tool_result_recall_tool_declaration: "eager",
      }),
    }),
    { minLength: 2, maxLength: 8 },
  );

  it("deterministic, idempotent, sticky, at most 4 breakpoints, the moved result stubbed once it leaves the hot window", async () => {
    await fc.assert(
      fc.asyncProperty(session, async (steps) => {
        const [a, b] = [new MemoryStore(), new MemoryStore()];
        const turns: Turn[] = [...history];
        let previous: Req | null = null;
        const moved = new Set<string>();
        const stubbed = new Map<string, string>();
        for (const [k, step] of steps.entries()) {
          const id = `r${k}`;
          turns.push({ id, result: jsonBody(step.size) });
          let request = cached(turns);
          if (step.history === "ours" && previous !== null) {
            // our previous output, with the new turn appended and the client's marker on it
            const fresh = request.messages.slice(-2);
            request = { ...previous, messages: [...previous.messages, ...fresh] };
            if (markers(JSON.stringify(request)) > 4) return;
          }
          const text = JSON.stringify(request);
          const one = await run(text, step.config, a);
          expect((await run(text, step.config, b)).text).toBe(one.text);
          expect((await run(one.text, step.config, a)).text).toBe(one.text);
          await run(one.text, step.config, b);
          expect(markers(one.text)).toBeLessThanOrEqual(Math.max(4, markers(text)));
          expectValidOutput(anthropicKit, request, one.req, true);
          for (const d of one.out.decisions) {
            const content = JSON.stringify(
              one.req.messages
                .flatMap((m: Req) => (Array.isArray(m.content) ? m.content : []))
                .find((x: Block) => x.tool_use_id === d.tool_use_id)?.content,
            );
            if (stubbed.has(d.tool_use_id)) expect(content).toBe(stubbed.get(d.tool_use_id));
            else if (d.action !== "kept") stubbed.set(d.tool_use_id, content);
            if (d.reason.startsWith("kept on arrival: the cache breakpoint moved")) {
              moved.add(d.tool_use_id);
              const last = one.req.messages.at(-1).content as Block[];
              const from = last.findIndex((x) => x.tool_use_id === d.tool_use_id);
              for (const x of last.slice(from)) expect(x.cache_control).toBeUndefined();
            }
          }
          // a result moved on an earlier turn and now out of the hot window is stubbed
          for (const m of moved)
            if (m !== id)
              expect(one.out.decisions.find((d) => d.tool_use_id === m)!.action).toBe("offloaded");
          previous = one.req;
        }
      }),
      { numRuns: Number(process.env.PROPERTIES_RUNS ?? 20), seed: 2800, endOnFailure: true },
    );
  }, 120_000);
});

describe("sentOffset: prices read the prompt as it goes out", () => {
  it("subtracts what earlier decisions replace strictly before an offset", () => {
    const ctx = {
      replaced: { positions: [100, 500, 900], before: [0, 40, 140, 150] },
    } as unknown as TurnContext;
    expect(sentOffset(ctx, 50)).toBe(50);
    expect(sentOffset(ctx, 100)).toBe(100);
    expect(sentOffset(ctx, 101)).toBe(61);
    expect(sentOffset(ctx, 900)).toBe(760);
    expect(sentOffset(ctx, 5000)).toBe(4850);
    expect(sentOffset({} as TurnContext, 77)).toBe(77);
  });
});
