/**
 * Recall on hostile bodies and arguments: it never throws (every failure is an `is_error` answer), its work
 * stops when the answer is full or a match cap is reached, and a query always shows something; a call of
 * several questions does no more than a bounded multiple of one question's work.
 */
import { describe, expect, it, vi } from "vitest";
import { MAX_MATCHES, recall } from "../../src/core/recall.ts";
import { recallMany } from "../../src/core/recall-many.ts";
import { CALL_PATH_STEPS_FACTOR, MAX_QUERY_COUNT, RecallWork } from "../../src/core/recall-work.ts";
import { MEM, SESSION, withBody } from "../support/recall.ts";

const DEEP = `${"[".repeat(40_000)}${"]".repeat(40_000)}`;

/** Records like the audit's 10 MB body (150,000 of them), fewer here. */
function bigBody(records: number): string {
  return JSON.stringify({
    items: Array.from({ length: records }, (_, i) => ({
      id: i,
      name: `item-${i}`,
      tags: ["a", "b"],
      price: i * 1.5,
    })),
  });
}

describe("recall never throws", () => {
  it("answers every json_path on 40,000 levels of nesting, within the cap", async () => {
    const store = await withBody(DEEP);
    for (const json_path of ["$", "$[0]", "[0][0][0]", "$..*", "$..[0]", "$..[?(@)]", "$[*][*]"]) {
      const a = await recall({ store, session: SESSION, mem_id: MEM, json_path });
      expect(a.content.length, json_path).toBeLessThanOrEqual(50_000);
      expect(a.is_error || a.truncated, json_path).toBe(true);
    }
  });

  it("answers arguments that are themselves deeply nested as a model mistake", async () => {
    const store = await withBody("abc");
    const deep = JSON.parse(DEEP);
    for (const args of [{ offset: deep }, { window: deep, query: "a" }, { max_chars: deep }]) {
      const a = await recall({ store, session: SESSION, mem_id: MEM, ...args });
      expect(a).toMatchObject({ is_error: true, mode: "error" });
      expect(a.content.length).toBeLessThan(300);
    }
  });

  it("does not echo a huge argument back", async () => {
    const store = await withBody('{"a":1}');
    const huge = "x".repeat(1_000_000);
    for (const args of [{ mem_id: `trm_${huge}` }, { mem_id: MEM, query: huge }]) {
      const a = await recall({ store, session: SESSION, ...args });
      expect(a.content.length).toBeLessThan(1000);
    }
    const path = await recall({ store, session: SESSION, mem_id: MEM, json_path: `$.${huge}` });
    expect(path).toMatchObject({ is_error: true });
    expect(path.content.length).toBeLessThan(1000);
  });
});

describe("recall work is bounded, not only its answer", () => {
  it("refuses a json_path with more values than any answer can show, and says how to narrow it", async () => {
    const store = await withBody(bigBody(30_000));
    for (const json_path of ["$..*", "$.items[*]", "$.items[*].name", "$..name"]) {
      const a = await recall({ store, session: SESSION, mem_id: MEM, json_path });
      expect(a, json_path).toMatchObject({ is_error: true });
      expect(a.content).toContain(`more than ${MAX_MATCHES.toLocaleString("en-US")} values`);
      expect(a.content).toContain("narrow the path");
    }
    const narrow = await recall({
      store,
      session: SESSION,
      mem_id: MEM,
      json_path: "$.items[0:50].name",
    });
    expect(narrow).toMatchObject({ is_error: false, matches: 50, truncated: false });
  });

  it("stops a path that multiplies its walk", async () => {
    // Every level searches all the levels below it: quadratic in the depth, stopped by the step budget.
    const store = await withBody(DEEP);
    const a = await recall({ store, session: SESSION, mem_id: MEM, json_path: "$..*..zz" });
    expect(a).toMatchObject({ is_error: true });
    expect(a.content).toContain("walks too much");
  });

  it("counts dense query matches only up to a cap", async () => {
    const store = await withBody("a".repeat(2_000_000));
    const a = await recall({ store, session: SESSION, mem_id: MEM, query: "a", window: 0 });
    expect(a.truncated).toBe(true);
    expect(a.content).toMatch(/^more than 100,000 matches/);
    expect(a.content.length).toBeLessThanOrEqual(50_000);
  });
});

describe("a query always shows at least one excerpt", () => {
  it("cuts one merged run of dense matches to fit (the README's demo body)", async () => {
    const body = JSON.stringify({
      items: Array.from({ length: 1500 }, (_, i) => ({ id: i, name: `item-${i}`, price: i * 1.5 })),
    });
    const store = await withBody(body);
    const a = await recall({ store, session: SESSION, mem_id: MEM, query: "item-" });
    expect(a).toMatchObject({ is_error: false, matches: 1500, truncated: true });
    expect(a.content.length).toBeLessThanOrEqual(50_000);
    const shown = /showing matches 1–([\d,]+) of 1,500/.exec(a.content);
    expect(Number(shown?.[1]?.replace(/,/g, ""))).toBeGreaterThan(100);
    expect(a.content).toContain('"name":"item-0"');
    expect(a.next_offset).toBeGreaterThan(0);
  });

  it("moves a cut excerpt forward so its first match is in it, whatever the window", async () => {
    const body = `${"x".repeat(20_000)}needle${"y".repeat(20_000)}`;
    const store = await withBody(body);
    const a = await recall({
      store,
      session: SESSION,
      mem_id: MEM,
      query: "needle",
      window: 5000,
      max_answer_chars: 500,
    });
    expect(a.content.length).toBeLessThanOrEqual(500);
    expect(a.content).toContain("needle");
    expect(a.content).toContain("match 1");
  });
});

describe("a call of several questions shares one work budget (queries, json_paths)", () => {
  it("counts eight dense queries to one count in all, and never throws", async () => {
    const store = await withBody("a".repeat(2_000_000));
    const queries = ["a", "aa", "aaa", "aaaa", "aaaaa", "aaaaaa", "aaaaaaa", "aaaaaaaa"];
    const a = await recallMany({ store, session: SESSION, mem_id: MEM, queries, window: 0 });
    expect(a).toMatchObject({ is_error: false, mode: "query", truncated: true });
    // Each query counts up to its share (100,000 / 8), so the call counts 100,000 at most.
    expect(a.matches).toBe(MAX_QUERY_COUNT);
    expect(a.content.match(/more than 12,500 matches/g)).toHaveLength(8);
    expect(a.content.length).toBeLessThanOrEqual(50_000);
  });

  it("parses the body once for all its paths", async () => {
    const store = await withBody(bigBody(2000));
    const parse = vi.spyOn(JSON, "parse");
    try {
      const json_paths = Array.from({ length: 8 }, (_, i) => `$.items[${i}].name`);
      const a = await recallMany({ store, session: SESSION, mem_id: MEM, json_paths });
      expect(a).toMatchObject({ is_error: false, matches: 8 });
      expect(parse.mock.calls.filter(([text]) => text === bigBody(2000))).toHaveLength(1);
    } finally {
      parse.mockRestore();
    }
  });

  it("walks eight heavy paths no further than twice what one may walk", async () => {
    // `$..*..zz` on deep nesting spends a path's whole budget: the first two run out their own, the
    // rest find the call's pool spent and say so, without walking.
    const store = await withBody(DEEP);
    const walked: number[] = [];
    const json_paths = Array.from({ length: 8 }, (_, i) => `$..*..z${i}`);
    const work = new RecallWork(json_paths.length);
    const spend = work.spend.bind(work);
    work.spend = (n) => {
      walked.push(n);
      spend(n);
    };
    const one = work.steps(DEEP.length).budget;
    for (const json_path of json_paths) {
      const a = await recall({ store, session: SESSION, mem_id: MEM, json_path, work });
      expect(a).toMatchObject({ is_error: true });
    }
    expect(walked.reduce((x, y) => x + y, 0)).toBeLessThanOrEqual(CALL_PATH_STEPS_FACTOR * one);
    expect(walked.slice(CALL_PATH_STEPS_FACTOR).every((n) => n <= 1)).toBe(true);
    const answer = await recallMany({ store, session: SESSION, mem_id: MEM, json_paths });
    expect(answer.is_error).toBe(true);
    expect(answer.content).toContain("walks too much");
    expect(answer.content).toContain("used up the work one call may do");
  });

  it("does not echo huge questions back", async () => {
    const store = await withBody("abc");
    const huge = (c: string) => c.repeat(1_000_000);
    for (const args of [
      { queries: [huge("x"), huge("y")] },
      { json_paths: [huge("a"), huge("b")] },
    ]) {
      const a = await recallMany({ store, session: SESSION, mem_id: MEM, ...args });
      expect(a.content.length).toBeLessThan(2000);
    }
  });
});
