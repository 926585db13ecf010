import { describe, expect, it } from "vitest";
import { OffloadError, PAGE_DEFAULTS, type Page, paginate } from "../../src/toolkit/entry.ts";

const rows = Array.from({ length: 45 }, (_, i) => ({ id: i }));

function thrown(fn: () => unknown): OffloadError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(OffloadError);
    return error as OffloadError;
  }
  throw new Error("expected a throw");
}

describe("paginate", () => {
  it("gives the first page of 20 with the total and a cursor by default", () => {
    const page = paginate(rows);
    expect(PAGE_DEFAULTS).toEqual({ offset: 0, limit: 20, max_limit: 100 });
    expect(page).toEqual({
      total: 45,
      offset: 0,
      returned: 20,
      rows: rows.slice(0, 20),
      next_offset: 20,
    });
  });

  it("walks the pages by next_offset and ends with null on the last page", () => {
    const seen: number[] = [];
    let offset: number | null = 0;
    let pages = 0;
    while (offset !== null) {
      const page: Page<{ id: number }> = paginate(rows, { offset, limit: 20 });
      seen.push(...page.rows.map((r) => r.id));
      offset = page.next_offset;
      pages++;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual(rows.map((r) => r.id));
    expect(paginate(rows, { offset: 40, limit: 20 })).toEqual({
      total: 45,
      offset: 40,
      returned: 5,
      rows: rows.slice(40),
      next_offset: null,
    });
  });

  it("a page that ends exactly at the end is the last page", () => {
    const page = paginate(rows, { offset: 25, limit: 20 });
    expect(page.returned).toBe(20);
    expect(page.next_offset).toBeNull();
  });

  it("an empty input is one empty last page", () => {
    expect(paginate([])).toEqual({ total: 0, offset: 0, returned: 0, rows: [], next_offset: null });
  });

  it("an offset past the end is an empty page with the right total, not an error", () => {
    expect(paginate(rows, { offset: 45 })).toEqual({
      total: 45,
      offset: 45,
      returned: 0,
      rows: [],
      next_offset: null,
    });
    expect(paginate(rows, { offset: Number.MAX_SAFE_INTEGER })).toEqual({
      total: 45,
      offset: Number.MAX_SAFE_INTEGER,
      returned: 0,
      rows: [],
      next_offset: null,
    });
  });

  it("caps a huge limit at max_limit (default 100), and max_limit is configurable", () => {
    const many = Array.from({ length: 1000 }, (_, i) => i);
    expect(paginate(many, { limit: 1_000_000 }).returned).toBe(100);
    expect(paginate(many, { limit: 1_000_000 }).next_offset).toBe(100);
    expect(paginate(many, { limit: 1_000_000, max_limit: 7 }).rows).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(paginate(many, { limit: 1000, max_limit: 5000 }).next_offset).toBeNull();
  });

  it("limit 0 gives the count only, with a cursor at the offset", () => {
    expect(paginate(rows, { limit: 0 })).toEqual({
      total: 45,
      offset: 0,
      returned: 0,
      rows: [],
      next_offset: 0,
    });
    expect(paginate(rows, { offset: 45, limit: 0 }).next_offset).toBeNull();
  });

  it("with total, rows is already the page of a larger query: not sliced by offset again, only cut to limit", () => {
    const dbPage = [{ id: 100 }, { id: 101 }, { id: 102 }];
    expect(paginate(dbPage, { offset: 100, limit: 3, total: 500 })).toEqual({
      total: 500,
      offset: 100,
      returned: 3,
      rows: dbPage,
      next_offset: 103,
    });
    // A LIMIT n+1 look-ahead is cut back to n.
    expect(paginate(dbPage, { offset: 100, limit: 2, total: 500 }).rows).toEqual([
      { id: 100 },
      { id: 101 },
    ]);
    expect(paginate(dbPage, { offset: 497, limit: 3, total: 500 }).next_offset).toBeNull();
    expect(paginate([], { offset: 900, limit: 3, total: 500 })).toEqual({
      total: 500,
      offset: 900,
      returned: 0,
      rows: [],
      next_offset: null,
    });
  });

  it("never reports a total below what the page proves exists (a count that lags an insert)", () => {
    const page = paginate([{ id: 1 }, { id: 2 }], { offset: 10, limit: 5, total: 3 });
    expect(page.total).toBe(12);
    expect(page.next_offset).toBeNull();
  });

  it("does not mutate its input", () => {
    const input = Object.freeze(rows.map((r) => Object.freeze({ ...r })));
    const copy = JSON.stringify(input);
    const page = paginate(input, { offset: 5, limit: 10 });
    expect(JSON.stringify(input)).toBe(copy);
    expect(page.rows).not.toBe(input);
    page.rows.push({ id: -1 });
    expect(input.length).toBe(45);
    const full = paginate(input, { limit: 100 });
    expect(full.rows).not.toBe(input);
  });

  const bad: [string, Record<string, unknown>, string][] = [
    ["negative offset", { offset: -1 }, "offset"],
    ["fractional offset", { offset: 1.5 }, "offset"],
    ["NaN offset", { offset: Number.NaN }, "offset"],
    ["infinite offset", { offset: Number.POSITIVE_INFINITY }, "offset"],
    ["unsafe offset", { offset: 2 ** 60 }, "offset"],
    ["string offset", { offset: "20" }, "offset"],
    ["null offset", { offset: null }, "offset"],
    ["null limit", { limit: null }, "limit"],
    ["negative limit", { limit: -5 }, "limit"],
    ["fractional limit", { limit: 0.5 }, "limit"],
    ["NaN limit", { limit: Number.NaN }, "limit"],
    ["string limit", { limit: "abc" }, "limit"],
    ["negative total", { total: -1 }, "total"],
    ["fractional total", { total: 2.5 }, "total"],
    ["string total", { total: "45" }, "total"],
    ["zero max_limit", { max_limit: 0 }, "max_limit"],
    ["fractional max_limit", { max_limit: 2.5 }, "max_limit"],
  ];
  for (const [what, options, path] of bad) {
    it(`rejects a ${what} with a typed invalid_argument error naming ${path}`, () => {
      const error = thrown(() => paginate(rows, options as never));
      expect(error.type).toBe("invalid_argument");
      expect(error.status).toBe(400);
      expect(error.path).toBe(path);
      expect(error.message).toContain(path);
      expect(error.toJSON()).toEqual({
        error: { type: "invalid_argument", message: error.message, path },
      });
    });
  }

  it("rejects rows that are not an array", () => {
    expect(thrown(() => paginate("abc" as never)).path).toBe("rows");
    expect(thrown(() => paginate({ length: 3 } as never)).path).toBe("rows");
  });

  it("names the bad value in the message", () => {
    expect(thrown(() => paginate(rows, { offset: -3 })).message).toBe(
      "offset must be an integer ≥ 0, got -3",
    );
    expect(thrown(() => paginate(rows, { limit: "ten" as never })).message).toBe(
      'limit must be an integer ≥ 0, got "ten"',
    );
  });
});
