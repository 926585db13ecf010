/**
 * `npm run bench`: every benchmark, each printing ratios measured in this same run (the machine is shared and
 * noisy, so absolute times are context, not results). `npm run bench -- transform` runs only the named ones.
 */
import { benchMemory } from "./memory.ts";
import { benchReplay } from "./replay.ts";
import { benchTransform } from "./transform.ts";

const benches: Record<string, () => Promise<unknown>> = {
  transform: () => benchTransform(),
  memory: () => benchMemory(),
  replay: () => benchReplay({ markdown: true }),
};

const wanted = process.argv.slice(2).filter((a) => !a.startsWith("-"));
for (const name of wanted.length > 0 ? wanted : Object.keys(benches)) {
  const run = benches[name];
  if (run === undefined) {
    console.error(`unknown bench ${JSON.stringify(name)}; known: ${Object.keys(benches).join(", ")}`);
    process.exit(2);
  }
  console.log(`\n== ${name} ==`);
  await run();
}
