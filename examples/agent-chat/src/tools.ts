/**
 * The agent's tools: `inventory` returns a whole warehouse export (the kind of large, settled tool output
 * edge-offload keeps out of later prompts), `reorder` a small confirmation.
 */
import { tool } from "ai";
import { z } from "zod";

/** About 130K characters of JSON: 2,000 SKUs with stock levels. */
export function inventory(warehouse: string) {
  return {
    warehouse,
    items: Array.from({ length: 2000 }, (_, i) => ({
      sku: `SKU-${String(i).padStart(5, "0")}`,
      name: `part ${i}`,
      stock: (i * 37) % 500,
      reorder_at: 50,
    })),
  };
}

export const tools = {
  inventory: tool({
    description: "Export every SKU of a warehouse with its stock level",
    inputSchema: z.object({ warehouse: z.string() }),
    execute: async ({ warehouse }) => inventory(warehouse),
  }),
  reorder: tool({
    description: "Reorder a SKU",
    inputSchema: z.object({ sku: z.string(), quantity: z.number().int().positive() }),
    execute: async ({ sku, quantity }) => ({ ok: true, sku, quantity }),
  }),
};
