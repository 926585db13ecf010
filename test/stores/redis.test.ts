/**
 * RedisStore against a real redis-server (servers.setup.ts): every contract suite over the Redis classes
 * and the composed store, and what only Redis shows: a session's keys expire together after the retention,
 * and the version check makes concurrent writers of one session go one after the other.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runExtractionCacheContract } from "../../src/contract/extraction-cache.contract.ts";
import { runIndexContract } from "../../src/contract/index.contract.ts";
import { runLedgerContract } from "../../src/contract/ledger.contract.ts";
import { runSessionStateContract } from "../../src/contract/session-state.contract.ts";
import { runStoreContract } from "../../src/contract/store.contract.ts";
import { runTenantLearningContract } from "../../src/contract/tenant-learning.contract.ts";
import { EXTRACTION_VALUE_MAX_BYTES } from "../../src/store/extractions.ts";
import {
  RedisExtractionCache,
  RedisIndex,
  RedisLedger,
  RedisStore,
  RedisTenantLearning,
} from "../../src/store/redis.ts";
import { sessionKeys } from "../../src/store/redis-port.ts";
import { RedisSessionState } from "../../src/store/redis-state.ts";
import {
  bodyMeta,
  clocked,
  clockHooks,
  commitTurn,
  freshRef,
  putBody,
  record,
  turnLog,
} from "../support/records.ts";
import { uniquePrefix } from "../support/servers.ts";
import { need, settle } from "./need.ts";

const server = need("redis");
let redis: Redis;

beforeAll(() => {
  if (server.url !== undefined) redis = new Redis(server.url);
});
afterAll(async () => {
  await redis?.quit();
});

const prefix = () => uniquePrefix("r").replaceAll("_", ":");

describe.skipIf(server.url === undefined)("Redis", () => {
  runSessionStateContract(
    "RedisSessionState",
    () => clocked((now) => new RedisSessionState(redis, { prefix: prefix(), now })),
    clockHooks,
  );
  runTenantLearningContract(
    "RedisTenantLearning",
    () => new RedisTenantLearning(redis, { prefix: prefix() }),
  );
  runLedgerContract("RedisLedger", () => new RedisLedger(redis, { prefix: prefix() }));
  runIndexContract("RedisIndex", () => new RedisIndex(redis, { prefix: prefix() }));
  let last: RedisStore | undefined;
  runStoreContract(
    "RedisStore",
    () => (last = new RedisStore(redis, { prefix: prefix(), log: () => {}, sweepEveryMs: 0 })),
    { settle: (refs) => settle(last!, refs) },
  );

  let xprefix = "";
  const xhooks = {
    capBytes: EXTRACTION_VALUE_MAX_BYTES,
    corrupt: async (tenant: string, key: string) => {
      const k = new RedisExtractionCache(redis, { prefix: xprefix }).key(tenant, key);
      expect(await redis.set(k, "not json", "KEEPTTL")).toBe("OK");
    },
  };
  runExtractionCacheContract(
    "RedisExtractionCache",
    () => new RedisExtractionCache(redis, { prefix: (xprefix = prefix()) }),
    xhooks,
  );
  runExtractionCacheContract(
    "RedisStore (its own cache)",
    () => new RedisStore(redis, { prefix: (xprefix = prefix()), log: () => {}, sweepEveryMs: 0 }),
    xhooks,
  );

  it("shares cached extractions between two stores, each entry expiring after the retention", async () => {
    const p = prefix();
    const options = { prefix: p, retentionSeconds: 60, sweepEveryMs: 0, log: () => {} };
    const [a, b] = [new RedisStore(redis, options), new RedisStore(redis, options)];
    const value = {
      ok: true as const,
      result: { text: "shared", format: "pdf" as const, truncated: false },
    };
    await a.putExtraction("t", "k", value);
    expect(await b.getExtraction("t", "k")).toEqual(value);
    const ttl = await redis.ttl(new RedisExtractionCache(redis, { prefix: p }).key("t", "k"));
    expect(ttl).toBeGreaterThan(50);
    expect(ttl).toBeLessThanOrEqual(60);
    // Retention 0 (sessions kept until deleted): the cache still ages out, after 7 days.
    const kept = new RedisExtractionCache(redis, { prefix: p, retentionSeconds: 0 });
    await kept.putExtraction("t", "k0", value);
    expect(await redis.ttl(kept.key("t", "k0"))).toBeGreaterThan(7 * 86_400 - 10);
  });

  it("lets a session's keys, bodies included, expire together once it is idle for the retention", async () => {
    const p = prefix();
    const store = new RedisStore(redis, {
      prefix: p,
      retentionSeconds: 60,
      sweepEveryMs: 0,
      log: () => {},
    });
    const ref = freshRef("ttl");
    const mem = `trm_${"a".repeat(24)}`;
    await putBody(store, ref, "x".repeat(1000), bodyMeta(mem));
    await commitTurn(store, ref, {
      records: [record("a", { mem_id: mem })],
      recall_declared: false,
      log: turnLog(1),
    });
    const k = sessionKeys(p, ref);
    for (const key of [k.row, k.records, k.turns, k.bodies, k.metas]) {
      const ttl = await redis.ttl(key);
      expect(ttl, key).toBeGreaterThan(50);
      expect(ttl, key).toBeLessThanOrEqual(60);
    }
    await store.close();
  });
});
