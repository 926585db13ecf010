/** The cost replay: cache simulation, reference detection, policies, the runner and the CLI. */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { resolveModel } from "../../src/core/pricing.ts";
import { BlockCache } from "../../src/replay/blocks.ts";
import { CacheSim } from "../../src/replay/cache.ts";
import { cutAfter, ENDINGS_MIN_CHARS, earlyEndings } from "../../src/replay/endings.ts";
import { edgeOffload } from "../../src/replay/policies/edge-offload.ts";
import { DEFAULT_POLICIES, policyByName } from "../../src/replay/policies/index.ts";
import { mapResults, type Policy } from "../../src/replay/policy.ts";
import { detectReferences } from "../../src/replay/references.ts";
import { type CallEvent, replay, requestFor } from "../../src/replay/run.ts";
import { parseSessions } from "../../src/replay/sessions.ts";
import type { Block, Message, ReplaySession, Request } from "../../src/replay/types.ts";
import { SAMPLE } from "../support/corpus.ts";
import { textBody } from "../support/requests.ts";

const sonnet = resolveModel("claude-sonnet-4-6")!;
const ON_ALL = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };
const block = (key: string, tokens: number, breakpoint = false) => ({
  key,
  tokens,
  ...(breakpoint ? { breakpoint } : {}),
});

describe("cache simulation", () => {
  it("reads the shared prefix, writes up to the breakpoint, bills the rest at input", () => {
    const sim = new CacheSim(sonnet);
    const first = sim.call([block("a", 2000), block("b", 1000, true), block("c", 500)], 100);
    expect(first).toMatchObject({
      read_tokens: 0,
      write_tokens: 3000,
      input_tokens: 500,
      output_tokens: 100,
    });
    expect(first.usd).toBeCloseTo((3000 * 3.75 + 500 * 3 + 100 * 15) / 1e6, 12);
    const second = sim.call([block("a", 2000), block("b", 1000), block("x", 700, true)], 0);
    expect(second).toMatchObject({ read_tokens: 3000, write_tokens: 700, input_tokens: 0 });
    // a change early in the prompt breaks everything after it
    const third = sim.call([block("A", 2000), block("b", 1000), block("x", 700, true)], 0);
    expect(third).toMatchObject({ read_tokens: 0, write_tokens: 3700 });
  });

  it("caches nothing without a breakpoint or below the model's minimum", () => {
    const sim = new CacheSim(sonnet);
    expect(sim.call([block("a", 5000)], 0)).toMatchObject({
      read_tokens: 0,
      write_tokens: 0,
      input_tokens: 5000,
    });
    expect(sim.call([block("a", 500, true)], 0)).toMatchObject({
      write_tokens: 0,
      input_tokens: 500,
    });
  });

  it("automatic (OpenAI): caches every prompt whole, reads in 128-token steps, lapses after 5 idle minutes", () => {
    const gpt = resolveModel("gpt-5.4")!;
    const sim = new CacheSim(gpt, "automatic");
    // no marker needed, and none honoured: the whole prompt is cached
    const first = sim.call([block("a", 1100), block("b", 1000, true), block("c", 500)], 10, 0);
    expect(first).toMatchObject({ read_tokens: 0, write_tokens: 2600, input_tokens: 0 });
    // GPT-5.4 bills writes as plain input
    expect(first.usd).toBeCloseTo((2600 * 2.5 + 10 * 15) / 1e6, 12);
    // the shared prefix (a, b, c: 2,600 tokens) read in 128-token steps; the rest paid at input
    const second = sim.call(
      [block("a", 1100), block("b", 1000), block("c", 500), block("d", 300)],
      0,
      60_000,
    );
    expect(second).toMatchObject({ read_tokens: 2560, write_tokens: 340 });
    expect(second.usd).toBeCloseTo((2560 * 0.25 + 340 * 2.5) / 1e6, 12);
    // within 5 minutes of the last use it is still there; after 5 idle minutes it is gone
    expect(sim.call([block("a", 1100), block("x", 100)], 0, 60_000 + 299_000).read_tokens).toBe(
      1024,
    );
    expect(
      sim.call([block("a", 1100), block("x", 100)], 0, 60_000 + 299_000 + 300_001).read_tokens,
    ).toBe(0);
    // a prompt under the minimum is not cached at all; a shared prefix under it reads nothing
    const fresh = new CacheSim(gpt, "automatic");
    expect(fresh.call([block("a", 1000)], 0, 0)).toMatchObject({
      write_tokens: 0,
      input_tokens: 1000,
    });
    expect(fresh.call([block("a", 1000), block("y", 500)], 0, 1).read_tokens).toBe(0);
    expect(fresh.call([block("a", 1000), block("z", 500)], 0, 2)).toMatchObject({
      read_tokens: 0,
      write_tokens: 1500,
    });
  });

  it("turns a request's cache_control markers into breakpoints (top level: the last block)", () => {
    const cache = new BlockCache();
    const req: Request = {
      model: "m",
      max_tokens: 1,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "hi", cache_control: { type: "ephemeral" } },
            { type: "text", text: "there" },
          ],
        },
      ],
    };
    expect(cache.blocksOf(req).map((b) => b.breakpoint ?? false)).toEqual([true, false]);
    expect(
      cache.blocksOf({ ...req, cache_control: { type: "ephemeral" } }).at(-1)!.breakpoint,
    ).toBe(true);
    // the marker is not part of the content: same key with or without it
    const plain: Request = {
      ...req,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "hi" },
            { type: "text", text: "there" },
          ],
        },
      ],
    };
    expect(cache.blocksOf(plain)[0]!.key).toBe(cache.blocksOf(req)[0]!.key);
  });
});

function session(messages: Message[], extra: Partial<ReplaySession> = {}): ReplaySession {
  return {
    id: "s",
    system: "You are an agent.",
    messages,
    calls: messages.flatMap((m, i) => (m.role === "assistant" ? [i] : [])),
    ...extra,
  };
}
const QUOTE = "unique-identifier-XYZ-1234567890";

describe("references", () => {
  const messages: Message[] = [
    { role: "user", content: "find the id" },
    {
      role: "assistant",
      content: [{ type: "tool_use", id: "t1", name: "bash", input: { cmd: "cat data" } }],
    },
    {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "t1", content: `noise ${QUOTE} more noise` }],
    },
    { role: "assistant", content: [{ type: "text", text: `The id is ${QUOTE}.` }] },
  ];

  it("finds an assistant message quoting an earlier result", () => {
    const refs = detectReferences(session(messages));
    expect(refs).toHaveLength(1);
    expect(refs[0]).toMatchObject({ turn: 3, sources: ["t1"] });
    expect(refs[0]!.quote).toHaveLength(24);
    expect(`noise ${QUOTE} more noise`).toContain(refs[0]!.quote);
    expect(`The id is ${QUOTE}.`).toContain(refs[0]!.quote);
  });

  it("ignores a quote that also stands outside results before that turn", () => {
    const withTask = [{ role: "user" as const, content: `find ${QUOTE}` }, ...messages.slice(1)];
    expect(detectReferences(session(withTask))).toHaveLength(0);
  });

  it("takes the corpus's own refs, one per turn and source", () => {
    const refs = detectReferences(
      session(messages, {
        id: "s2",
        refs: [{ turn: 3, quote: `is ${QUOTE.slice(0, 5)}`, source_tool_use_id: "t1" }],
      }),
    );
    expect(refs).toHaveLength(1);
    expect(refs[0]!.quote).toBe(`is ${QUOTE.slice(0, 5)}`);
  });
});

describe("policies", () => {
  const results = (n: number): Message[] => {
    const m: Message[] = [{ role: "user", content: "go" }];
    for (let i = 0; i < n; i++) {
      m.push({
        role: "assistant",
        content: [{ type: "tool_use", id: `t${i}`, name: "bash", input: {} }],
      });
      m.push({
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: `t${i}`,
            content: `result ${i}\n`.repeat(i === 0 ? 30_000 : 3),
          },
        ],
      });
    }
    return m;
  };
  const req = (n: number): Request => ({
    model: "claude-sonnet-4-6",
    max_tokens: 1,
    messages: results(n),
  });
  const contents = (r: Request) =>
    r.messages.flatMap((m) =>
      typeof m.content === "string"
        ? []
        : m.content
            .filter((b) => b.type === "tool_result")
            .map((b) => String(b.content).slice(0, 30)),
    );

  it("mask-last-10 masks all but the last 10, so the mask moves every turn", async () => {
    const run = policyByName("mask-last-10")!.start({ model: "m", client: "cached", session: "s" });
    const sent = contents(await run.send(req(12)));
    expect(sent.slice(0, 2).every((c) => c.startsWith("Old environment output"))).toBe(true);
    expect(sent.slice(2).every((c) => c.startsWith("result"))).toBe(true);
    expect(await run.recover("t0", "x")).toBeNull();
  });

  it("evict-20k replaces a result over 80K chars on first delivery and can read it back", async () => {
    const run = policyByName("evict-20k")!.start({ model: "m", client: "cached", session: "s" });
    const sent = await run.send(req(1));
    expect(contents(sent)[0]).toMatch(/^Tool result too large/);
    const rec = await run.recover("t0", "result 0");
    expect(rec?.result.content).toContain("result 0");
  });

  it("clear-tool-uses clears only past 100K input tokens, keeping the last 3", async () => {
    const run = policyByName("clear-tool-uses")!.start({
      model: "m",
      client: "cached",
      session: "s",
    });
    expect(contents(await run.send(req(5)))).toEqual(contents(req(5)));
    const big = req(5);
    big.messages[2] = {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "t0", content: "x".repeat(500_000) }],
    };
    const sent = contents(await run.send(big));
    expect(sent.slice(0, 2).every((c) => c.startsWith("[cleared by context"))).toBe(true);
    expect(sent.slice(2).every((c) => c.startsWith("result"))).toBe(true);
  });

  it("prune-messages runs the ai package's pruneMessages: old tool calls and results are gone", async () => {
    const run = policyByName("prune-messages")!.start({
      model: "m",
      client: "cached",
      session: "s",
    });
    const sent = await run.send(req(4));
    const ids = sent.messages
      .flatMap((m) =>
        typeof m.content === "string" ? [] : m.content.map((b) => b.id ?? b.tool_use_id),
      )
      .filter(Boolean);
    expect(ids).toEqual(["t3", "t3"]);
  });

  it("knows every default policy by name", () => {
    for (const name of DEFAULT_POLICIES) expect(policyByName(name), name).not.toBeNull();
    expect(policyByName("nope")).toBeNull();
    expect(policyByName("edge-offload+all/no-cold")?.name).toBe("edge-offload+all/no-cold");
    expect(
      policyByName("edge-offload/full-delivery/no-move/fixed-horizon/no-anchor"),
    ).not.toBeNull();
    expect(policyByName("edge-offload/bogus")).toBeNull();
    expect(policyByName("edge-offload/no-move/bogus")).toBeNull();
    expect(policyByName("evict-20k/no-cold")).toBeNull();
  });
});

describe("replay runner", () => {
  const sessions = parseSessions(gunzipSync(readFileSync(SAMPLE)).toString("utf8"), "sample");

  it("prices every policy; edge-offload is never dearer than none and loses no reference", async () => {
    const report = await replay(sessions, {
      model: "claude-sonnet-4-6",
      client: "cached",
      policies: ["none", "edge-offload", "mask-last-10", "edge-offload/full-delivery"].map(
        (n) => policyByName(n)!,
      ),
    });
    const by = Object.fromEntries(report.policies.map((p) => [p.policy, p]));
    expect(by.none!.ratio_to_none).toBe(1);
    for (const row of ["edge-offload", "edge-offload/full-delivery"]) {
      expect(by[row]!.worst_session_ratio, row).toBeLessThanOrEqual(1);
      expect(by[row]!.dearer_sessions, row).toBe(0);
      expect(by[row]!.lost_references, row).toBe(0);
    }
    // first delivery (the default) stubs on arrival and pays hops for it
    expect(by["edge-offload"]!.total_usd).toBeLessThan(by["edge-offload/full-delivery"]!.total_usd);
    expect(by["edge-offload"]!.recall_hops).toBeGreaterThan(0);
    expect(by["mask-last-10"]!.dearer_sessions).toBeGreaterThan(0);
    // masking moves every turn and breaks the cached prefix: dearer than nothing with a caching client
    expect(by["mask-last-10"]!.total_usd).toBeGreaterThan(by.none!.total_usd);
    expect(report.sessions).toBe(6);
  }, 60_000);

  it("explains a session call by call: the calls' costs add up to its total, hops marked, decisions seen", async () => {
    const events: CallEvent[] = [];
    const seen: { session: string; call: number; decisions: number }[] = [];
    const ours = edgeOffload("edge-offload", ON_ALL, "", {
      observe: (session, call, out) =>
        seen.push({ session, call, decisions: out.decisions.length }),
    });
    const report = await replay(sessions, {
      model: "claude-sonnet-4-6",
      client: "uncached",
      policies: [policyByName("none")!, ours],
      onCall: (e) => events.push(e),
    });
    for (const p of report.policies)
      for (const r of p.sessions) {
        const mine = events.filter((e) => e.policy === p.policy && e.session === r.session);
        expect(mine.length, `${p.policy} ${r.session}`).toBe(r.calls);
        expect(mine.filter((e) => e.hop === 1).length).toBe(r.recall_hops);
        expect(mine.reduce((n, e) => n + e.cost.usd, 0)).toBeCloseTo(r.usd, 12);
      }
    // one observation per client call of every session, numbered from 0 in order, and one more per
    // hop (the agent's second call, under its call's index: the exchange is kept)
    const clientCalls = sessions.reduce((n, s) => n + s.calls.length, 0);
    const hops = report.policies[1]!.recall_hops;
    expect(hops).toBeGreaterThan(0);
    expect(seen).toHaveLength(clientCalls + hops);
    expect([
      ...new Set(seen.filter((s) => s.session === sessions[0]!.id).map((s) => s.call)),
    ]).toEqual(sessions[0]!.calls.map((_, i) => i));
    expect(seen.some((s) => s.decisions > 0)).toBe(true);
  }, 60_000);

  it("with usage, tells each policy every call's simulated bill, and edge-offload calibrates on it", async () => {
    // What a policy hears: with `usage`, every charged call's cost, in order; without it, nothing.
    const heard = (usage: boolean) => async () => {
      const costs: CallEvent["cost"][] = [];
      const listener: Policy = {
        name: "listener",
        description: "",
        start: () => ({
          send: async (r) => r,
          recover: async () => null,
          billed: async (c) => {
            costs.push(c);
          },
        }),
      };
      const events: CallEvent[] = [];
      await replay(sessions.slice(0, 2), {
        model: "claude-sonnet-4-6",
        client: "cached",
        policies: [listener],
        usage,
        onCall: (e) => events.push(e),
      });
      return { costs, events };
    };
    const on = await heard(true)();
    expect(on.costs.length).toBeGreaterThan(0);
    expect(on.costs).toEqual(on.events.map((e) => e.cost));
    expect((await heard(false)()).costs).toEqual([]);

    // edge-offload: told its usage, it learns how many tokens its estimates miss by (calibration), and a
    // later gate prices the prompt with it: the context a hop would re-read differs from the estimate's.
    const contexts = async (usage: boolean) => {
      const seen: number[] = [];
      const ours = edgeOffload("edge-offload", ON_ALL, "", {
        observe: (_session, _call, out) => {
          for (const d of out.decisions)
            if (d.gate !== undefined && d.gate !== null) seen.push(d.gate.inputs.context_tokens);
        },
      });
      await replay(sessions, {
        model: "claude-sonnet-4-6",
        client: "cached",
        policies: [ours],
        usage,
      });
      return seen;
    };
    const [estimated, calibrated] = [await contexts(false), await contexts(true)];
    expect(estimated.length).toBeGreaterThan(0);
    expect(calibrated).not.toEqual(estimated);
  }, 60_000);

  it("keeps a hop's exchange in the conversation: later prompts pay for it, a quote in it needs no new hop", async () => {
    const quote = "RECALLED_fragment_0042_of_the_body";
    const body = `${"filler line of a large tool output\n".repeat(200)}${quote}\n${"more output\n".repeat(100)}`;
    const session: ReplaySession = {
      id: "twice",
      messages: [
        { role: "user", content: "look at the file" },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "read", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: body }] },
        { role: "assistant", content: `it says ${quote}` },
        { role: "user", content: "and again?" },
        { role: "assistant", content: `still ${quote}` },
      ],
      calls: [1, 3, 5],
      // the same quote of the same result, referenced twice (the corpus's own refs)
      refs: [
        { turn: 3, quote, source_tool_use_id: "t1" },
        { turn: 5, quote, source_tool_use_id: "t1" },
      ],
    };
    // A policy that stubs t1 on every call and reads back the line holding the quote.
    const seen: Request[] = [];
    const stubbing: Policy = {
      name: "stub-t1",
      description: "",
      start: () => ({
        send: async (request) => {
          seen.push(request);
          return mapResults(request, (b) => (b.tool_use_id === "t1" ? "[stub of t1]" : undefined));
        },
        recover: async (id, q) => ({
          call: { type: "tool_use", id: `toolu_read_${id}`, name: "recall", input: { query: q } },
          result: {
            type: "tool_result",
            tool_use_id: `toolu_read_${id}`,
            content: `line 201: ${q}`,
          },
        }),
      }),
    };
    const events: CallEvent[] = [];
    const report = await replay([session], {
      model: "claude-sonnet-4-6",
      client: "cached",
      policies: [policyByName("none")!, stubbing],
      onCall: (e) => events.push(e),
    });
    const ours = report.policies[1]!;
    // one hop (the first reference); the second finds the quote in the recalled slice
    expect(ours.references).toBe(2);
    expect(ours.recall_hops).toBe(1);
    expect(ours.lost_references).toBe(0);
    // the last call's prompt carries the exchange where it happened: after the hop's prompt, before
    // the answer the model wrote with the slice in view
    // the hop's second call is the agent's own request: the exchange appended, its breakpoint on the answer
    const hop = seen[2]!;
    expect(hop.messages).toHaveLength(5);
    expect((hop.messages[4]!.content as Block[])[0]!.cache_control).toEqual({ type: "ephemeral" });
    const last = seen[3]!;
    expect(last.messages).toHaveLength(7);
    expect(last.messages[3]).toEqual({
      role: "assistant",
      content: [
        { type: "tool_use", id: "toolu_read_t1_1", name: "recall", input: { query: quote } },
      ],
    });
    expect(last.messages[4]!.content).toEqual([
      { type: "tool_result", tool_use_id: "toolu_read_t1_1", content: `line 201: ${quote}` },
    ]);
    expect(last.messages[5]).toEqual(session.messages[3]);
    // and its tokens are charged: the call costs what its prompt as sent holds, the answer included
    const sent = mapResults(last, (b) => (b.tool_use_id === "t1" ? "[stub of t1]" : undefined));
    const tokens = new BlockCache().blocksOf(sent).reduce((n, b) => n + b.tokens, 0);
    const call2 = events.filter((e) => e.policy === "stub-t1" && e.call === 2);
    expect(call2).toHaveLength(1);
    expect(call2[0]!.cost.prompt_tokens).toBe(tokens);
    const without = { ...sent, messages: sent.messages.filter((_, i) => i !== 3 && i !== 4) };
    expect(tokens).toBeGreaterThan(
      new BlockCache().blocksOf(without).reduce((n, b) => n + b.tokens, 0),
    );
    // the proxy's hops (out of the client's sight): the exchange is gone, the second reference hops again
    seen.length = 0;
    const dropped = await replay([session], {
      model: "claude-sonnet-4-6",
      client: "cached",
      policies: [stubbing],
      hops: "dropped",
    });
    expect(dropped.policies[0]!.recall_hops).toBe(2);
    expect(seen[2]!.messages).toHaveLength(5);
  });

  it("builds the cached client's advancing breakpoint on the last block", () => {
    const r = requestFor(sessions[0]!, sessions[0]!.calls[1]!, "claude-sonnet-4-6", "cached");
    const last = r.messages.at(-1)!.content as { cache_control?: unknown }[];
    expect(last.at(-1)!.cache_control).toEqual({ type: "ephemeral" });
    expect(
      JSON.stringify(
        requestFor(sessions[0]!, sessions[0]!.calls[1]!, "claude-sonnet-4-6", "uncached"),
      ),
    ).not.toContain("cache_control");
  });

  it("reads a plain request log: requests that extend each other are one session", () => {
    const m: Message[] = [
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
      { role: "user", content: "more" },
    ];
    const log = [
      { model: "x", messages: m.slice(0, 1) },
      { model: "x", messages: m },
      { model: "x", messages: [{ role: "user", content: "other" }] },
    ]
      .map((r) => JSON.stringify(r))
      .join("\n");
    const s = parseSessions(log, "log");
    expect(s.map((x) => x.calls)).toEqual([[1, 3], [1]]);
    expect(() => parseSessions("{bad", "x")).toThrow(/line 1 is not JSON/);
    expect(() => parseSessions('{"messages": 5}', "x")).toThrow(/line 1/);
  });
});

describe("realistic endings and the learned horizon", () => {
  const sessions = parseSessions(gunzipSync(readFileSync(SAMPLE)).toString("utf8"), "sample");

  it("cuts half the sessions holding a result over the floor, 1-3 calls after one arrives, the same way every time", () => {
    const cut = earlyEndings(sessions);
    expect(earlyEndings(sessions)).toEqual(cut);
    expect(cut.map((s) => s.id)).toEqual(sessions.map((s) => s.id));
    let shorter = 0;
    cut.forEach((c, i) => {
      const s = sessions[i]!;
      if (c === s) return;
      shorter++;
      expect(c.calls).toEqual(s.calls.slice(0, c.calls.length));
      expect(c.messages).toEqual(s.messages.slice(0, c.calls.at(-1)! + 1));
      expect(c.messages.at(-1)!.role).toBe("assistant");
      // a result over the floor arrived 1-3 calls before the last call
      const arrived = c.calls.slice(-4, -1).some((n) => {
        const m = c.messages[n - 1]!;
        return (
          typeof m.content !== "string" &&
          m.content.some(
            (b) => b.type === "tool_result" && JSON.stringify(b.content).length > ENDINGS_MIN_CHARS,
          )
        );
      });
      expect(arrived, c.id).toBe(true);
    });
    expect(shorter).toBeGreaterThan(0);
    expect(shorter).toBeLessThan(sessions.length);
  });

  it("draws other endings on demand, each the same every time, draw 0 the published one", () => {
    const ends = (n?: number) => earlyEndings(sessions, n).map((s) => s.calls.length);
    expect(ends(0)).toEqual(ends());
    const draws = [1, 2, 3, 4, 5].map((n) => ends(n));
    for (const [i, d] of draws.entries()) expect(ends(i + 1)).toEqual(d);
    // another draw cuts other sessions, or the same ones elsewhere
    expect(draws.some((d) => JSON.stringify(d) !== JSON.stringify(ends()))).toBe(true);
    expect(() => earlyEndings(sessions, -1)).toThrow(RangeError);
    expect(() => earlyEndings(sessions, 1.5)).toThrow(RangeError);
  });

  it("keeps a session whole when the cut would fall after its end, and drops the refs it cut off", () => {
    const s: ReplaySession = {
      id: "x",
      messages: [
        { role: "user", content: "a" },
        { role: "assistant", content: "b" },
        { role: "user", content: "c" },
        { role: "assistant", content: "d" },
      ],
      calls: [1, 3],
      refs: [
        { turn: 1, quote: "q", source_tool_use_id: "t" },
        { turn: 3, quote: "q", source_tool_use_id: "t" },
      ],
    };
    expect(cutAfter(s, 5)).toBe(s);
    const cut = cutAfter(s, 0);
    expect(cut.calls).toEqual([1]);
    expect(cut.messages).toHaveLength(2);
    expect(cut.refs).toEqual([s.refs![0]]);
  });

  it("learns the horizon from the sessions replayed before, in file order, never from later ones", async () => {
    // The same 40-call session twice (under two ids), a 24,000-char result arriving on call 4: the first
    // is priced at the prior (nothing ended yet), the second at what the first showed (36 calls left).
    const session = (id: string): ReplaySession => {
      const messages: Message[] = [
        { role: "user", content: `Do the task. ${"context ".repeat(800)}` },
      ];
      for (let i = 0; i < 40; i++) {
        messages.push({
          role: "assistant",
          content: [{ type: "tool_use", id: `t${i}`, name: "bash", input: { cmd: `step ${i}` } }],
        });
        const result = i === 3 ? textBody(24_000, "m") : `ok ${i} ${"x".repeat(3000)}`;
        messages.push({
          role: "user",
          content: [{ type: "tool_result", tool_use_id: `t${i}`, content: result }],
        });
      }
      messages.push({ role: "assistant", content: "done" });
      return {
        id,
        messages,
        calls: messages.flatMap((m, i) => (m.role === "assistant" ? [i] : [])),
      };
    };
    const twice = [session("first"), session("second")];
    const run = async (config: Record<string, unknown>) =>
      (
        await replay(twice, {
          model: "claude-sonnet-4-6",
          client: "cached",
          policies: [policyByName("none")!, edgeOffload("e", config, "e")],
        })
      ).policies[1]!.sessions.map((r) => r.usd);
    const learned = await run(ON_ALL);
    const fixed = await run({ ...ON_ALL, tool_result_offload_horizon_learned: false });
    // nothing had ended before the first: the prior either way, and the result kept (a stub would not pay)
    expect(learned[0]).toBeCloseTo(fixed[0]!, 9);
    expect(fixed[1]).toBeCloseTo(fixed[0]!, 9);
    // the second is priced over what the first showed: stubbed on arrival, and cheaper
    expect(learned[1]).toBeLessThan(learned[0]! * 0.95);
  }, 120_000);
});

describe("CLI", () => {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  const cli = (...args: string[]) =>
    spawnSync(
      process.execPath,
      [
        "--experimental-strip-types",
        "--disable-warning=ExperimentalWarning",
        `${root}/src/cli.ts`,
        ...args,
      ],
      { encoding: "utf8" },
    );

  it("prints help, and refuses bad arguments with exit code 2", () => {
    expect(cli("--help").stdout).toContain("edge-offload replay <sessions.jsonl[.gz]>");
    expect(cli("replay").status).toBe(2);
    expect(cli("replay", SAMPLE, "--model", "nope").stderr).toContain("unknown model");
    expect(cli("replay", SAMPLE, "--policies", "none,bogus").stderr).toContain("unknown policy");
    expect(cli("replay", SAMPLE, "--client", "sometimes").status).toBe(2);
    expect(cli("replay", SAMPLE, "--client", "automatic").stderr).toContain("OpenAI --model");
    expect(cli("replay", SAMPLE, "--hops", "sometimes").stderr).toContain(
      "--hops must be kept or dropped",
    );
    expect(cli("frobnicate").status).toBe(2);
    expect(cli("replay", "/no/such/file.jsonl").status).toBe(2);
    const gap = cli("replay", SAMPLE, "--gap", "soon");
    expect(gap.status).toBe(2);
    expect(gap.stderr).toContain("--gap must be BASE or BASE,LONG@P");
    expect(cli("replay", SAMPLE, "--usage=yes").status).toBe(2);
    // usage is told by default; --no-usage prices the raw estimates
    expect(cli("replay", SAMPLE, "--no-usage").status).toBe(0);
    expect(cli("replay", SAMPLE, "--endings", "never").stderr).toContain(
      "--endings must be early or recorded",
    );
    expect(cli("replay", SAMPLE, "--endings", "early", "--endings-draw=-1").stderr).toContain(
      "--endings-draw must be an integer",
    );
    expect(cli("replay", SAMPLE, "--endings", "early", "--endings-draw=0x10").stderr).toContain(
      "--endings-draw must be an integer",
    );
    expect(cli("replay", SAMPLE, "--endings-draw", "2").stderr).toContain(
      "--endings-draw needs --endings early",
    );
    // A dozen Node processes, one after the other: room for a machine shared with other test runs.
  }, 60_000);

  it("prints the documented JSON", () => {
    const dir = mkdtempSync(`${tmpdir()}/replay-`);
    const file = `${dir}/one.jsonl`;
    writeFileSync(
      file,
      `${JSON.stringify(JSON.parse(gunzipSync(readFileSync(SAMPLE)).toString("utf8").split("\n")[4]!))}\n`,
    );
    const out = cli(
      "replay",
      file,
      "--json",
      "--policies",
      "none,edge-offload,mask-last-10",
      "--client",
      "uncached",
    );
    expect(out.status, out.stderr).toBe(0);
    const json = JSON.parse(out.stdout);
    expect(Object.keys(json)).toEqual(["model", "client", "sessions", "policies"]);
    expect(json.policies.map((p: { policy: string }) => p.policy)).toEqual([
      "none",
      "edge-offload",
      "mask-last-10",
    ]);
    expect(Object.keys(json.policies[0])).toEqual([
      "policy",
      "total_usd",
      "ratio_to_none",
      "prompt_tokens",
      "cache_read_share",
      "recall_hops",
      "lost_references",
      "references",
      "references_by_kind",
      "lost_by_kind",
      "worst_session_ratio",
      "dearer_sessions",
    ]);
    expect(Object.keys(json.policies[0].lost_by_kind)).toEqual(["corpus", "quote", "token"]);
  }, 60_000);
});
