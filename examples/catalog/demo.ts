/**
 * The catalog tools in one command, without a server: the example Worker's Hono app asked in process, as an
 * agent's tool calls would ask it over HTTP (`npx wrangler dev -c examples/catalog/wrangler.toml` serves the
 * same routes).
 *
 *   node examples/catalog/demo.ts
 */
import { PRODUCTS } from "./catalog.ts";
import app from "./worker.ts";

async function get(path: string): Promise<unknown> {
  const res = await app.request(path);
  return res.json();
}

const { tools } = (await get("/tools?format=anthropic")) as { tools: { name: string }[] };
console.log(`tools for an agent's \`tools\`: ${tools.map((t) => t.name).join(", ")}`);
const page = (await get("/tools/search_products?query=pan&limit=3")) as {
  total: number;
  returned: number;
  next_offset: number | null;
  rows: { id: number; name: string; price: number }[];
};
console.log(
  `search_products "pan": ${page.returned} of ${page.total} matches, next_offset ${page.next_offset}`,
);
for (const r of page.rows) console.log(`  #${r.id} ${r.name} $${r.price}`);
const all = JSON.stringify(PRODUCTS).length;
const sent = JSON.stringify(page).length;
console.log(`a page is ${sent} characters; the whole catalog would be ${all}`);
console.log(
  `get_product 9999 (a model's mistake): ${JSON.stringify(await get("/tools/get_product?id=9999"))}`,
);
