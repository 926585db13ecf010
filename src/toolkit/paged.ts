/**
 * A paged search tool (a `search_products` that returns a page of matches and the total, never the
 * whole table) as one call: the author writes the query, the kit adds `offset` and `limit` to the
 * schema, caps the limit, and returns `paginate`'s page with the total and `next_offset`.
 */
import { z } from "zod";
import { formatPath, OffloadError } from "../errors.ts";
import { PAGE_DEFAULTS, type Page, pageNumber, paginate } from "./paginate.ts";
import { defineTool, type Tool } from "./tool.ts";

export interface PageShapeOptions {
  /** Rows per page when the model gives no limit (default 20). */
  default_limit?: number;
  /** Cap on limit (default 100). */
  max_limit?: number;
}

/**
 * `offset` and `limit` as zod fields to spread into a tool's input. No `.max()` on limit: a model
 * asking for too many rows gets the capped page at once, not an error and a second round trip; the
 * description says so.
 */
export function pageShape(options: PageShapeOptions = {}) {
  const { default_limit, max_limit } = pageLimits(options);
  return {
    offset: z
      .int()
      .min(0)
      .default(PAGE_DEFAULTS.offset)
      .describe("Row offset for pagination: pass next_offset from the previous page."),
    limit: z
      .int()
      .min(0)
      .default(default_limit)
      .describe(
        `Max rows to return (default ${default_limit}, at most ${max_limit}: larger values are capped; 0 returns only the total).`,
      ),
  };
}

export type PageShape = ReturnType<typeof pageShape>;

function pageLimits(options: PageShapeOptions): { default_limit: number; max_limit: number } {
  const max_limit = pageNumber(options.max_limit ?? PAGE_DEFAULTS.max_limit, "max_limit", 1);
  const default_limit = pageNumber(
    options.default_limit ?? Math.min(PAGE_DEFAULTS.limit, max_limit),
    "default_limit",
  );
  if (default_limit > max_limit) {
    throw new OffloadError(
      "invalid_argument",
      `default_limit (${default_limit}) is above max_limit (${max_limit})`,
      { path: "default_limit" },
    );
  }
  return { default_limit, max_limit };
}

/**
 * All matching rows (the kit slices them), or this page of a larger query with its total (a
 * database cursor).
 */
export type RowsResult<Row> = readonly Row[] | { rows: readonly Row[]; total: number };

export interface PagedToolSpec<S extends z.ZodObject, Row> extends PageShapeOptions {
  name: string;
  /** The kit appends one sentence on how paging works. */
  description: string;
  /** The query's own arguments; `offset` and `limit` are added. */
  input: S;
  /**
   * The page asked for (limit already capped), for a database to LIMIT/OFFSET; ignore it to return
   * everything.
   */
  rows: (
    input: z.output<S>,
    page: { offset: number; limit: number },
  ) => RowsResult<Row> | Promise<RowsResult<Row>>;
}

export type PagedInput<S extends z.ZodObject> = z.ZodObject<
  z.core.util.Extend<S["shape"], PageShape>,
  S["_zod"]["config"]
>;

/**
 * A paged search tool in one call: the author writes the query (`rows`), the kit adds `offset` and
 * `limit` to the input schema, caps the limit, and answers with one page, its total and
 * `next_offset`.
 *
 * @example
 * const search = definePagedTool({
 *   name: "search_products",
 *   description: "Products matching a query, a page at a time.",
 *   input: z.object({ query: z.string() }),
 *   rows: ({ query }) => products.filter((p) => p.name.includes(query)),
 * });
 */
export function definePagedTool<S extends z.ZodObject, Row>(
  spec: PagedToolSpec<S, Row>,
): Tool<PagedInput<S>, Page<Row>> {
  const limits = pageLimits(spec);
  if (!(spec.input instanceof z.ZodObject))
    throw new OffloadError("invalid_argument", "input must be a zod object schema (z.object)", {
      path: "input",
    });
  for (const key of ["offset", "limit"]) {
    if (key in spec.input.shape)
      throw new OffloadError(
        "invalid_argument",
        `input already has a field ${key}; the kit adds offset and limit`,
        { path: formatPath([key], "input") },
      );
  }
  const input = spec.input.extend(pageShape(limits)) as unknown as PagedInput<S>;
  return defineTool({
    name: spec.name,
    description: `${spec.description} Returns one page as {total, offset, returned, rows, next_offset}; call again with offset=next_offset for more (next_offset is null on the last page).`,
    input,
    async run(args) {
      const {
        offset,
        limit: asked,
        ...query
      } = args as { offset: number; limit: number } & Record<string, unknown>;
      const limit = Math.min(asked, limits.max_limit);
      const result: unknown = await spec.rows(query as z.output<S>, { offset, limit });
      if (Array.isArray(result))
        return paginate(result as readonly Row[], { offset, limit, max_limit: limits.max_limit });
      const page = result as { rows?: unknown; total?: unknown } | null;
      if (
        page === null ||
        typeof page !== "object" ||
        !Array.isArray(page.rows) ||
        typeof page.total !== "number"
      ) {
        // The author's bug, not the caller's: "internal", so neither the model nor an HTTP client
        // is blamed.
        throw new OffloadError(
          "internal",
          `${spec.name}: rows() must return an array or {rows, total}`,
        );
      }
      return paginate(page.rows as readonly Row[], {
        offset,
        limit,
        max_limit: limits.max_limit,
        total: page.total,
      });
    },
  });
}
