/**
 * Example Worker serving the catalog tools (`npx wrangler dev -c examples/catalog/wrangler.toml`):
 *   GET /tools?format=anthropic                         the declarations, for your agent's `tools`
 *   GET /tools/search_products?query=pan&limit=5        a page: {total, offset, returned, rows, next_offset}
 *   GET /tools/get_product?id=3
 */
import { toolRoutes } from "edge-offload/hono";
import { Hono } from "hono";
import { describeCatalog, getProduct, searchProducts } from "./catalog.ts";

const app = new Hono();
app.get("/", (c) => c.text("catalog tools: GET /tools, GET /tools/:name?…"));
app.route("/", toolRoutes([searchProducts, getProduct, describeCatalog]));

export default app;
