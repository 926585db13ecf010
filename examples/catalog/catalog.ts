/** The example's tools over a bundled catalog of 240 products. */
import { definePagedTool, defineTool, OffloadError, previewOf } from "edge-offload/toolkit";
import { z } from "zod";
import products from "./products.json" with { type: "json" };

export interface Product {
  id: number;
  sku: string;
  name: string;
  category: string;
  price: number;
  in_stock: boolean;
  rating: number;
}

export const PRODUCTS: readonly Product[] = products;
const CATEGORIES = ["kitchen", "outdoor", "office", "garden", "audio"] as const;

/** `search_products`: a page of matches plus the total, never the whole table. */
export const searchProducts = definePagedTool({
  name: "search_products",
  description:
    "Search the product catalog by words of the product name, optionally filtered by category, price and stock.",
  input: z.object({
    query: z
      .string()
      .max(200)
      .default("")
      .describe(
        "Words that must all appear in the product name (case-insensitive); empty matches every product.",
      ),
    category: z.enum(CATEGORIES).optional().describe("Only this category."),
    max_price: z
      .number()
      .positive()
      .optional()
      .describe("Only products at or below this price (USD)."),
    in_stock: z.boolean().optional().describe("true: only products in stock."),
  }),
  rows: ({ query, category, max_price, in_stock }) => {
    const words = query
      .toLowerCase()
      .split(/\s+/)
      .filter((w) => w !== "");
    return PRODUCTS.filter(
      (p) =>
        words.every((w) => p.name.toLowerCase().includes(w)) &&
        (category === undefined || p.category === category) &&
        (max_price === undefined || p.price <= max_price) &&
        (in_stock !== true || p.in_stock),
    );
  },
});

/** One product by id; an unknown id is an error the model can read, not an exception. */
export const getProduct = defineTool({
  name: "get_product",
  description: "Get one product by its id.",
  input: z.object({ id: z.int().positive().describe("The product id (from search_products).") }),
  run: ({ id }) => {
    const product = PRODUCTS.find((p) => p.id === id);
    if (product === undefined)
      throw new OffloadError(
        "not_found",
        `no product with id ${id}; search_products lists the ids`,
        { path: "id" },
      );
    return product;
  },
});

/** The shape of the whole catalog (what an offload stub would show for it), in a few hundred chars. */
export const describeCatalog = defineTool({
  name: "describe_catalog",
  description: "Describe the catalog: how many products, their fields, and the first few.",
  input: z.object({}),
  run: () => previewOf(PRODUCTS, { max_chars: 300, tool_name: "the catalog" }),
});
