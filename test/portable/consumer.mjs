/**
 * The packed package in a consumer's project, one process of two (test/unit/pack.test.ts): `write` offloads
 * the catalog turn into a session on Postgres and on Redis and prints the two stubs' mem_ids; `read` (another
 * process) recalls them. Arguments: mode, postgres URL, redis URL, session, and for `read` the two mem_ids.
 */
import { compact, recall } from "edge-offload";
import { PostgresStore } from "edge-offload/postgres";
import { RedisStore } from "edge-offload/redis";
import { catalogTurn } from "./catalog-turn.mjs";

const [mode, pgUrl, redisUrl, session, ...mems] = process.argv.slice(2);
const secret = "consumer-test-secret-0123456789abcdef";
const stores = [await PostgresStore.connect(pgUrl), await RedisStore.connect(redisUrl)];
const out = [];
for (const [i, store] of stores.entries()) {
  if (mode === "write") {
    const r = await compact({
      request: JSON.stringify(catalogTurn()),
      session,
      store,
      secret,
      config: { tool_result_compaction_enabled: true, tool_result_offload_enabled: true },
    });
    out.push(/trm_[0-9a-f]{24}/.exec(r.request)?.[0] ?? null);
  } else {
    const a = await recall({ store, session, mem_id: mems[i], json_path: "items[1499].name" });
    out.push({ is_error: a.is_error, content: a.content });
  }
  await store.close();
}
console.log(JSON.stringify(out));
