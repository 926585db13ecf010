/** Prints the README's config table from the one schema (src/config.ts): `node scripts/config-table.ts`. */
import { DEFAULT_CONFIG, OffloadConfigSchema } from "../src/config.ts";

const shape = OffloadConfigSchema.shape as Record<string, { description?: string }>;
console.log("| field | default | meaning |\n|---|---|---|");
for (const [key, value] of Object.entries(DEFAULT_CONFIG)) {
  const description = (shape[key]?.description ?? "").replace(/\|/g, "\\|");
  console.log(`| \`${key}\` | \`${JSON.stringify(value)}\` | ${description} |`);
}
