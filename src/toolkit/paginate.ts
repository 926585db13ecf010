/**
 * One page of a result plus the shape of the whole, so a tool never floods the context on first
 * delivery: the model sees `total` against `returned`, knows it holds a slice, and asks for
 * `next_offset` when it needs more. Pure: the input array is never touched (the page is a new
 * array; its rows are the caller's own objects, not copies).
 */
import { OffloadError } from "../errors.ts";

export interface Page<T> {
  /** Rows in the whole result, not in this page. */
  total: number;
  offset: number;
  returned: number;
  rows: T[];
  /** Where the next page starts; null on the last page (and past the end). */
  next_offset: number | null;
}

export interface PaginateOptions {
  /** First row of the page (default 0). */
  offset?: number;
  /**
   * Rows per page (default 20). Values above `max_limit` are capped, not refused. 0 asks for the
   * count only.
   */
  limit?: number;
  /**
   * Rows in the whole result, when `rows` is already this page of a larger query (a database
   * LIMIT/OFFSET or cursor): then `rows` starts at `offset` and is not sliced again, only cut to
   * `limit`.
   */
  total?: number;
  /** Cap on `limit` (default 100). */
  max_limit?: number;
}

/**
 * Pages of 20 rows from offset 0 by default, and a cap of 100 that keeps one page well under the
 * size floor above which results are compacted.
 */
export const PAGE_DEFAULTS = Object.freeze({ offset: 0, limit: 20, max_limit: 100 });

/**
 * A non-negative safe integer, or a typed error naming the argument (NaN, ±Infinity, 1.5, "3" all
 * fail).
 */
export function pageNumber(value: unknown, name: string, min = 0): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
    const shown =
      typeof value === "number"
        ? String(value)
        : typeof value === "string"
          ? JSON.stringify(value)
          : typeof value;
    throw new OffloadError(
      "invalid_argument",
      `${name} must be an integer ≥ ${min}, got ${shown}`,
      { path: name },
    );
  }
  return value;
}

/**
 * One page of `rows` and the shape of the whole: `total`, `returned`, and `next_offset` while more
 * remain. Offsets and limits are validated (an `invalid_argument` OffloadError), the limit capped.
 *
 * @example
 * const page = paginate(products, { offset: 20, limit: 20 });
 * // { total: 341, offset: 20, returned: 20, rows: [...20 rows], next_offset: 40 }
 */
export function paginate<T>(rows: readonly T[], options: PaginateOptions = {}): Page<T> {
  if (!Array.isArray(rows))
    throw new OffloadError("invalid_argument", "rows must be an array", { path: "rows" });
  // `=== undefined`, not `??`: a null offset is most likely a last page's next_offset fed back, and
  // reading it as 0 would silently start over.
  const offset = pageNumber(
    options.offset === undefined ? PAGE_DEFAULTS.offset : options.offset,
    "offset",
  );
  const maxLimit = pageNumber(
    options.max_limit === undefined ? PAGE_DEFAULTS.max_limit : options.max_limit,
    "max_limit",
    1,
  );
  const limit = Math.min(
    pageNumber(options.limit === undefined ? PAGE_DEFAULTS.limit : options.limit, "limit"),
    maxLimit,
  );

  let page: T[];
  let total: number;
  if (options.total === undefined) {
    page = rows.slice(offset, offset + limit);
    total = rows.length;
  } else {
    page = rows.slice(0, limit);
    // A count taken a moment before the page can lag an insert; never report fewer rows than the
    // page proves.
    total = Math.max(
      pageNumber(options.total, "total"),
      page.length === 0 ? 0 : offset + page.length,
    );
  }
  const end = offset + page.length;
  return {
    total,
    offset,
    returned: page.length,
    rows: page,
    next_offset: end < total ? end : null,
  };
}
