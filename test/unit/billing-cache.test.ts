/**
 * The billing fake's cache models against hand-computed cases: every block below costs a round number of
 * tokens (given directly to the cache), so each expected figure is arithmetic on those numbers.
 */
import { describe, expect, it } from "vitest";
import { AnthropicCache, API_RULES } from "../support/billing/anthropic-cache.ts";
import { InvalidRequest, promptOf } from "../support/billing/anthropic-prompt.ts";
import { FakeClock } from "../support/billing/clock.ts";
import { chatSegments, OpenAICache, type Segment } from "../support/billing/openai-cache.ts";
import { commonPrefixTokens, countTokens } from "../support/billing/tokenizer.ts";

const SONNET = "claude-sonnet-4-6"; // minimum cacheable prefix: 1,024 tokens
const EPH = { type: "ephemeral" } as const;
const H1 = { type: "ephemeral", ttl: "1h" } as const;

type Block = Record<string, unknown>;
const text = (t: string, cc?: object): Block => ({
  type: "text",
  text: t,
  ...(cc ? { cache_control: cc } : {}),
});

/** A request with a system prompt and one user message of the given blocks. */
function request(blocks: Block[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model: SONNET,
    max_tokens: 10,
    system: "sys",
    messages: [{ role: "user", content: blocks }],
    ...extra,
  };
}

function setup(rules = API_RULES) {
  const clock = new FakeClock();
  const cache = new AnthropicCache(() => clock.now(), rules);
  /** Bills a request whose blocks cost `each` tokens apiece (or the listed amounts). */
  const bill = (req: Record<string, unknown>, each: number | number[] = 500) => {
    const prompt = promptOf(req);
    const tokens = prompt.blocks.map((_, i) => (Array.isArray(each) ? each[i]! : each));
    return cache.bill(prompt, tokens);
  };
  return { clock, cache, bill };
}

const blocks = (n: number, from = 0): Block[] =>
  Array.from({ length: n }, (_, i) => text(`block ${from + i}`));

function marked(list: Block[], cc: object = EPH): Block[] {
  const last = list[list.length - 1]!;
  return [...list.slice(0, -1), { ...last, cache_control: cc }];
}

describe("Anthropic prompt cache", () => {
  it("writes at the breakpoint, then reads that prefix and writes only the new part", () => {
    const { bill } = setup();
    // system (500) + 3 blocks (500 each) = 2,000 tokens, breakpoint on the last block.
    const first = bill(request(marked(blocks(3))));
    expect(first).toMatchObject({
      prompt_tokens: 2000,
      cache_read_input_tokens: 0,
      cache_write_5m_tokens: 2000,
      input_tokens: 0,
      hit: null,
    });
    // Two more blocks, the breakpoint advanced to the new last one: 2,000 read, 1,000 written.
    const second = bill(request(marked([...blocks(3), ...blocks(2, 3)])));
    expect(second).toMatchObject({
      prompt_tokens: 3000,
      cache_read_input_tokens: 2000,
      cache_write_5m_tokens: 1000,
      input_tokens: 0,
      hit: "messages[0].content[2]",
    });
    // Tokens after the last breakpoint are input.
    const third = bill(request([...marked(blocks(3)), ...blocks(2, 3)]));
    expect(third).toMatchObject({
      cache_read_input_tokens: 2000,
      cache_write_5m_tokens: 0,
      input_tokens: 1000,
    });
  });

  it("a request without breakpoints is all input, and caches nothing", () => {
    const { bill, cache } = setup();
    expect(bill(request(blocks(4)))).toMatchObject({
      input_tokens: 2500,
      cache_write_5m_tokens: 0,
    });
    expect(cache.size()).toBe(0);
  });

  it("an entry lives 5 minutes from the start of its last use: a hit refreshes it, a gap over 5 minutes misses", () => {
    const { bill, clock } = setup();
    const req = request(marked(blocks(3)));
    bill(req);
    clock.advance(299); // within 5 minutes of the write
    expect(bill(req).cache_read_input_tokens).toBe(2000);
    clock.advance(299); // 598 s after the write, 299 s after the refreshing read
    expect(bill(req).cache_read_input_tokens).toBe(2000);
    clock.advance(301);
    const missed = bill(req);
    expect(missed).toMatchObject({ cache_read_input_tokens: 0, cache_write_5m_tokens: 2000 });
  });

  it("a 1-hour entry survives a 30-minute gap that a 5-minute one does not", () => {
    const { bill, clock } = setup();
    bill(request(marked(blocks(3), H1)));
    clock.advance(1800);
    expect(bill(request(marked(blocks(3), H1)))).toMatchObject({
      cache_read_input_tokens: 2000,
      cache_write_1h_tokens: 0,
    });
    clock.advance(3601);
    expect(bill(request(marked(blocks(3), H1)))).toMatchObject({
      cache_read_input_tokens: 0,
      cache_write_1h_tokens: 2000,
    });
  });

  it("looks back 20 positions counting the breakpoint itself, and no further", () => {
    // Entry at block 9 of the message (position 10: the system prompt is position 0).
    const base = blocks(10);
    for (const [added, reads] of [
      [19, true], // breakpoint at position 29: checks 29…10, the entry is the 20th
      [20, false], // breakpoint at position 30: checks 30…11
    ] as const) {
      const { bill } = setup();
      bill(request(marked(base)));
      const next = bill(request(marked([...base, ...blocks(added, 10)])), 100);
      expect(next.cache_read_input_tokens).toBe(reads ? 1100 : 0); // system + 10 blocks at 100 each
      expect(next.cache_write_5m_tokens).toBe(reads ? added * 100 : (11 + added) * 100);
    }
  });

  it("a missed window resumes at the previous breakpoint", () => {
    const { bill } = setup();
    const base = blocks(10);
    bill(request(marked(base)));
    // 25 new blocks, a breakpoint 5 blocks after the old one and one at the end.
    const extra = blocks(25, 10);
    extra[4] = { ...extra[4]!, cache_control: EPH };
    const next = bill(request(marked([...base, ...extra])), 100);
    expect(next).toMatchObject({ cache_read_input_tokens: 1100, cache_write_5m_tokens: 2500 });
  });

  it("a run of tool_use blocks, or of tool_result blocks, is one lookback position", () => {
    const uses = Array.from({ length: 15 }, (_, i) => ({
      type: "tool_use",
      id: `t${i}`,
      name: "bash",
      input: { i },
    }));
    const results = uses.map((u) => ({ type: "tool_result", tool_use_id: u.id, content: "ok" }));
    const head = [{ role: "user", content: [text("go", EPH)] }];
    const req = (cc: boolean) => ({
      model: SONNET,
      max_tokens: 10,
      system: "sys",
      messages: [
        ...head,
        { role: "assistant", content: uses },
        { role: "user", content: cc ? marked(results) : results },
      ],
    });
    const prompt = promptOf(req(true));
    // system 0, "go" 1, the 15 tool_use blocks 2, the 15 tool_result blocks 3: 30 blocks in 4 positions.
    expect(prompt.blocks.map((b) => b.position)).toEqual([
      0,
      1,
      ...uses.map(() => 2),
      ...results.map(() => 3),
    ]);
    const { bill } = setup();
    const tokens = [1000, 100, ...uses.map(() => 10), ...results.map(() => 10)];
    bill(req(false), tokens); // writes the entry at "go" (1,100 tokens)
    const next = bill(req(true), tokens);
    // 3 positions from the last tool_result back to "go": well inside the window, despite 30 blocks.
    expect(next).toMatchObject({ cache_read_input_tokens: 1100, cache_write_5m_tokens: 300 });
  });

  it("a breakpoint below the model's minimum cacheable length neither reads nor writes", () => {
    const { bill, cache } = setup();
    // 1,023 tokens up to the breakpoint: nothing cached (Sonnet 4.6's minimum is 1,024).
    expect(bill(request(marked(blocks(1))), [523, 500])).toMatchObject({
      input_tokens: 1023,
      cache_write_5m_tokens: 0,
    });
    expect(cache.size()).toBe(0);
    expect(bill(request(marked(blocks(1))), [524, 500])).toMatchObject({
      input_tokens: 0,
      cache_write_5m_tokens: 1024,
    });
    // Opus 4.5 needs 4,096.
    expect(bill({ ...request(marked(blocks(3))), model: "claude-opus-4-5" }, 1000)).toMatchObject({
      input_tokens: 4000,
    });
  });

  it("allows at most 4 breakpoints, automatic caching included", () => {
    const four = [text("a", EPH), text("b", EPH), text("c", EPH), text("d", EPH)];
    expect(() => promptOf(request(four))).not.toThrow();
    expect(() => promptOf(request([...four, text("e", EPH)]))).toThrow(
      /maximum of 4 blocks with cache_control.*Found 5/,
    );
    expect(() => promptOf(request([...four, text("e")], { cache_control: EPH }))).toThrow(
      InvalidRequest,
    );
    // A tool's breakpoint counts too.
    const tools = [{ name: "t", input_schema: { type: "object" }, cache_control: EPH }];
    expect(() => promptOf(request([...four], { tools }))).toThrow(/Found 5/);
  });

  it("wants 1-hour breakpoints before 5-minute ones, and bills A, B − A, C − B", () => {
    expect(() => promptOf(request([text("a", EPH), text("b", H1)]))).toThrow(
      /"1h" cannot come after/,
    );
    const { bill, clock } = setup();
    // system 600 | a 600 (1h) | b 600 | c 600 (5m): B = 1,200 written at 1h, C − B = 1,200 at 5m.
    const req = request([text("a", H1), text("b"), text("c", EPH)]);
    expect(bill(req, 600)).toMatchObject({
      cache_write_1h_tokens: 1200,
      cache_write_5m_tokens: 1200,
    });
    // Ten minutes later the 5m entry is gone and the 1h one is read: A = 1,200, B = A, C − B at 5m.
    clock.advance(600);
    expect(bill(req, 600)).toMatchObject({
      cache_read_input_tokens: 1200,
      cache_write_1h_tokens: 0,
      cache_write_5m_tokens: 1200,
      hit: "messages[0].content[0]",
    });
    // A hit past a 1h breakpoint: A = C, nothing written.
    expect(bill(req, 600)).toMatchObject({
      cache_read_input_tokens: 2400,
      cache_write_5m_tokens: 0,
    });
  });

  it("automatic caching puts the breakpoint on the last cacheable block and moves it as the prompt grows", () => {
    const { bill } = setup();
    const auto = { cache_control: EPH };
    expect(bill(request(blocks(3), auto))).toMatchObject({ cache_write_5m_tokens: 2000 });
    expect(bill(request(blocks(5), auto))).toMatchObject({
      cache_read_input_tokens: 2000,
      cache_write_5m_tokens: 1000,
    });
    // The same TTL on the last block is no second breakpoint; another TTL there is a 400.
    expect(
      promptOf(request(marked(blocks(2)), auto)).blocks.filter((b) => b.breakpoint).length,
    ).toBe(1);
    expect(() => promptOf(request(marked(blocks(2), H1), auto))).toThrow(/conflicts/);
    // A thinking block cannot carry it: the breakpoint walks back to the block before.
    const withThinking = {
      model: SONNET,
      max_tokens: 10,
      cache_control: EPH,
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: [{ type: "thinking", thinking: "hmm", signature: "s" }] },
      ],
    };
    expect(promptOf(withThinking).blocks.map((b) => b.breakpoint)).toEqual(["5m", null]);
  });

  it("rejects cache_control on thinking blocks, bad TTLs and empty text blocks", () => {
    const thinking = { type: "thinking", thinking: "x", signature: "s", cache_control: EPH };
    expect(() =>
      promptOf({ model: SONNET, messages: [{ role: "assistant", content: [thinking] }] }),
    ).toThrow(/thinking/);
    expect(() => promptOf(request([text("a", { type: "ephemeral", ttl: "2h" })]))).toThrow(/ttl/);
    expect(() => promptOf(request([text("a", { type: "persistent" })]))).toThrow(/ephemeral/);
    expect(() => promptOf(request([text("")]))).toThrow(/non-empty/);
  });

  it("a change before the breakpoint invalidates it; tool_choice invalidates the messages only", () => {
    const { bill } = setup();
    const tools = [{ name: "t", input_schema: { type: "object" }, cache_control: EPH }];
    const req = (first: string, choice: string) =>
      request(marked([text(first), ...blocks(2)]), { tools, tool_choice: { type: choice } });
    bill(req("a", "auto"));
    // tools 500 | system 500 | 3 blocks: the tools entry (500, below the minimum) is not written…
    expect(bill(req("b", "auto"))).toMatchObject({ cache_read_input_tokens: 0 });
    const { bill: b2 } = setup();
    const big = [2000, 500, 500, 500, 500];
    b2(req("a", "auto"), big);
    // …a 2,000-token tools block is: a new first message block reads the tools, rewrites the rest.
    expect(b2(req("b", "auto"), big)).toMatchObject({
      cache_read_input_tokens: 2000,
      cache_write_5m_tokens: 2000,
    });
    expect(b2(req("b", "any"), big)).toMatchObject({
      cache_read_input_tokens: 2000,
      cache_write_5m_tokens: 2000,
    });
  });

  it("rule variants: every block boundary cached, unlimited lookback, no expiry", () => {
    const { bill, clock } = setup({ lookback: Infinity, expiry: false, entries: "every-block" });
    const base = blocks(10);
    bill(request(marked(base)));
    clock.advance(7200);
    // The prefix is read up to the first changed block, however far back, however late.
    const changed = [...base.slice(0, 6), text("new"), ...blocks(30, 10)];
    expect(bill(request(marked(changed)), 100).cache_read_input_tokens).toBe(700);
  });
});

describe("OpenAI automatic caching", () => {
  const seg = (tokens: number, tag: string): Segment => ({ text: `${tag}:${tokens}`, tokens });

  it("caches prompts of 1,024 tokens or more and reports hits in steps of 128", () => {
    const clock = new FakeClock();
    const cache = new OpenAICache(() => clock.now());
    const head = [seg(1000, "a"), seg(300, "b")];
    expect(cache.bill("gpt-4.1", head)).toEqual({
      prompt_tokens: 1300,
      cached_tokens: 0,
      cache_write_tokens: 0,
    });
    // 1,300 shared tokens → 1,280 reported (10 × 128).
    expect(cache.bill("gpt-4.1", [...head, seg(500, "c")])).toEqual({
      prompt_tokens: 1800,
      cached_tokens: 1280,
      cache_write_tokens: 0,
    });
    // The longest shared prefix wins: 1,800 → 1,792.
    expect(cache.bill("gpt-4.1", [...head, seg(500, "c"), seg(10, "d")]).cached_tokens).toBe(1792);
    // Another model, or 5 minutes of inactivity, finds nothing.
    expect(cache.bill("gpt-4o", [...head, seg(500, "c")]).cached_tokens).toBe(0);
    clock.advance(301);
    expect(cache.bill("gpt-4.1", [...head, seg(500, "c")]).cached_tokens).toBe(0);
  });

  it("shares nothing below 1,024 tokens", () => {
    const cache = new OpenAICache(() => 0);
    cache.bill("gpt-4.1", [seg(1000, "a"), seg(100, "x")]);
    expect(cache.bill("gpt-4.1", [seg(1000, "a"), seg(100, "y")]).cached_tokens).toBe(0);
    cache.bill("gpt-4.1", [seg(1023, "p"), seg(100, "x")]);
    expect(cache.bill("gpt-4.1", [seg(1023, "p"), seg(100, "y")]).cached_tokens).toBe(0);
  });

  it("keeps entries per prompt_cache_key", () => {
    const cache = new OpenAICache(() => 0);
    const head = [seg(2000, "a")];
    cache.bill("gpt-4.1", head, { key: "k1" });
    expect(cache.bill("gpt-4.1", [...head, seg(10, "b")], { key: "k2" }).cached_tokens).toBe(0);
    expect(cache.bill("gpt-4.1", [...head, seg(10, "b")], { key: "k1" }).cached_tokens).toBe(1920);
  });

  it("GPT-5.6 and later: writes at breakpoints, exact reads without rounding, 30 minutes", () => {
    const clock = new FakeClock();
    const cache = new OpenAICache(() => clock.now());
    const at = { breakpoints: true };
    const head = [seg(1000, "a"), seg(300, "b")];
    // The implicit breakpoint ends the prompt: everything is written.
    expect(cache.bill("gpt-5.6", head, at)).toEqual({
      prompt_tokens: 1300,
      cached_tokens: 0,
      cache_write_tokens: 1300,
    });
    // An append reads the whole earlier prompt (no 128-token steps) and writes the rest.
    expect(cache.bill("gpt-5.6", [...head, seg(500, "c")], at)).toEqual({
      prompt_tokens: 1800,
      cached_tokens: 1300,
      cache_write_tokens: 500,
    });
    // A changed message misses from there: no read at a position no breakpoint wrote.
    expect(cache.bill("gpt-5.6", [head[0]!, seg(300, "B")], at).cached_tokens).toBe(0);
    // Explicit mode with a marked segment: only that prefix is written; the rest is input.
    const marked = { ...seg(1100, "m"), breakpoint: true };
    expect(cache.bill("gpt-5.6", [marked, seg(200, "x")], { ...at, explicit: true })).toEqual({
      prompt_tokens: 1300,
      cached_tokens: 0,
      cache_write_tokens: 1100,
    });
    clock.advance(1799);
    expect(cache.bill("gpt-5.6", [marked, seg(200, "y")], at).cached_tokens).toBe(1100);
    clock.advance(1801);
    expect(cache.bill("gpt-5.6", [marked, seg(200, "z")], at).cached_tokens).toBe(0);
  });

  it("counts a shared token prefix inside the first differing message", () => {
    const words = (n: number) => Array.from({ length: n }, () => "abc").join(" ");
    const req = (tail: string) => ({
      model: "gpt-4.1",
      messages: [{ role: "user", content: `${words(1200)} ${tail}` }],
    });
    const cache = new OpenAICache(() => 0);
    cache.bill("gpt-4.1", chatSegments(req("first")));
    // "user\n" (2) + 1,200 words sharing the piece boundaries: 1,202 shared tokens → 1,152.
    expect(cache.bill("gpt-4.1", chatSegments(req("second"))).cached_tokens).toBe(1152);
  });
});

describe("the fake's tokenizer", () => {
  it("is deterministic and counts by piece kind", () => {
    expect(countTokens("abc abc abc")).toBe(3);
    expect(countTokens("internationalization")).toBe(4); // 20 letters / 6
    expect(countTokens("1234567")).toBe(3); // digits in threes
    expect(countTokens('{"a":"b"}')).toBe(5); // {" a ":" b "}
    expect(countTokens("\n            x")).toBe(2); // a newline and indentation, then x
    expect(countTokens("日本語")).toBe(3);
    expect(countTokens("")).toBe(0);
    const big = JSON.stringify({ rows: Array.from({ length: 500 }, (_, i) => ({ id: i })) });
    expect(countTokens(big)).toBe(countTokens(big));
  });

  it("shares a token prefix only over pieces cut the same way", () => {
    expect(commonPrefixTokens("abc abc xyz", "abc abc xyw")).toBe(2);
    expect(commonPrefixTokens("abc", "abcd")).toBe(0);
    expect(commonPrefixTokens("same", "same")).toBe(countTokens("same"));
  });
});
