import { describe, expect, it } from "vitest";
import example from "../../examples/catalog/worker.ts";
import { paginate, previewOf } from "../../src/toolkit/entry.ts";

// The kit claims any runtime: the same example Worker, run inside workerd.
describe("tool-author kit in workerd", () => {
  it("serves the example's paged search", async () => {
    const res = await example.request("/tools/search_products?query=lamp&limit=2");
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      total: number;
      returned: number;
      next_offset: number | null;
    };
    expect(body.returned).toBe(2);
    expect(body.total).toBeGreaterThan(2);
    expect(body.next_offset).toBe(2);
  });

  it("answers a bad argument with the error shape", async () => {
    const res = await example.request("/tools/search_products?limit=-4");
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { path: string } }).error.path).toBe("limit");
  });

  it("paginates and previews", () => {
    expect(paginate([1, 2, 3], { offset: 2 })).toEqual({
      total: 3,
      offset: 2,
      returned: 1,
      rows: [3],
      next_offset: null,
    });
    expect(previewOf([{ a: 1 }])).toContain("JSON array(1) of objects {a: number}");
  });
});
