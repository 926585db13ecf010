/**
 * `RedisStore` (`edge-offload/redis`): the session state (redis-state.ts), the bodies, the lookup index,
 * the tenant's learning and the extraction cache (redis-extractions.ts) in Redis, for any number of
 * processes. A session's keys share its hash tag and its time to live: every write sets them to expire
 * `retentionSeconds` after it (bodies included), so Redis itself purges an idle session whole. Writes are
 * version-checked (redis-port.ts): concurrent turns of one session commit one after the other and render
 * the same bytes. A standalone Redis (or a primary with replicas); the sweep's two sets are keys of their
 * own, so not Redis Cluster.
 */
import { type Calibration, calibrate } from "../core/calibration.ts";
import type { ToolStats } from "../core/ports.ts";
import { isSessionId } from "../core/session.ts";
import type { BodyMeta, SessionRef, StoredBody } from "../core/types.ts";
import { OffloadError } from "../errors.ts";
import {
  type BodyLedgerPort,
  badCursor,
  type IndexedBody,
  type IndexedSession,
  type IndexPort,
  type TenantAggregate,
  type TenantDelta,
  type TenantLearning,
} from "./ports.ts";
import { RedisExtractionCache } from "./redis-extractions.ts";
import {
  DEFAULT_KEY_PREFIX,
  hash,
  type RedisClient,
  sessionKeys,
  snapshot,
  tenantKeyBase,
  values,
} from "./redis-port.ts";
import { RedisSessionState } from "./redis-state.ts";
import { RetainedStore, type RetainedStoreOptions } from "./retained.ts";
import { endedBuckets, FORGOTTEN_WEIGHT, lengthsAddition, lengthsOf } from "./session-lengths.ts";
import { TENANT_MODELS_LIMIT, TENANT_TOOLS_LIMIT } from "./sql-tenant.ts";
import { DEFAULT_RETENTION_SECONDS, indexTtlSeconds } from "./state.ts";
import { TenantCache } from "./tenant-cache.ts";

interface KeyOptions {
  prefix?: string;
  /** The session's keys expire this long after a write (0: never). */
  retentionSeconds?: number;
}

/** Bodies in the session's hashes: mem_id → the body as a JSON string (exact, lone surrogates too). */
export class RedisLedger implements BodyLedgerPort {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #ttl: number;

  constructor(redis: RedisClient, options: KeyOptions = {}) {
    this.#redis = redis;
    this.#prefix = options.prefix ?? DEFAULT_KEY_PREFIX;
    this.#ttl = options.retentionSeconds ?? DEFAULT_RETENTION_SECONDS;
  }

  async put(ref: SessionRef, body: string, meta: BodyMeta): Promise<void> {
    const k = sessionKeys(this.#prefix, ref);
    const commands: (string | number)[][] = [
      ["HSET", k.bodies, meta.mem_id, JSON.stringify(body)],
      ["HSET", k.metas, meta.mem_id, JSON.stringify(meta)],
    ];
    if (this.#ttl > 0)
      commands.push(["EXPIRE", k.bodies, this.#ttl], ["EXPIRE", k.metas, this.#ttl]);
    await snapshot(this.#redis, commands);
  }

  async get(ref: SessionRef, memId: string): Promise<StoredBody | null> {
    const k = sessionKeys(this.#prefix, ref);
    const [meta, body] = await snapshot(this.#redis, [
      ["HGET", k.metas, memId],
      ["HGET", k.bodies, memId],
    ]);
    if (typeof meta !== "string" || typeof body !== "string") return null;
    return { body: JSON.parse(body) as string, meta: JSON.parse(meta) as BodyMeta };
  }

  async head(ref: SessionRef, memId: string): Promise<BodyMeta | null> {
    const meta = await this.#redis.call("HGET", sessionKeys(this.#prefix, ref).metas, memId);
    return typeof meta === "string" ? (JSON.parse(meta) as BodyMeta) : null;
  }

  async list(ref: SessionRef, limit = Number.POSITIVE_INFINITY): Promise<string[]> {
    const ids = (await this.#redis.call("HKEYS", sessionKeys(this.#prefix, ref).metas)) as string[];
    return ids.sort().slice(0, limit);
  }

  async delete(ref: SessionRef, memIds: readonly string[]): Promise<void> {
    if (memIds.length === 0) return;
    const k = sessionKeys(this.#prefix, ref);
    for (let i = 0; i < memIds.length; i += 500) {
      const chunk = memIds.slice(i, i + 500);
      // The metadata first: it is what lists a body.
      await snapshot(this.#redis, [
        ["HDEL", k.metas, ...chunk],
        ["HDEL", k.bodies, ...chunk],
      ]);
    }
  }
}

/** The lookup index: mem_id entries in the session's hash, a tenant's sessions in a sorted set. */
export class RedisIndex implements IndexPort {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #ttl: number;
  readonly #now: () => number;

  constructor(redis: RedisClient, options: KeyOptions & { now?: () => number } = {}) {
    this.#redis = redis;
    this.#prefix = options.prefix ?? DEFAULT_KEY_PREFIX;
    this.#ttl = options.retentionSeconds ?? DEFAULT_RETENTION_SECONDS;
    this.#now = options.now ?? Date.now;
  }

  #tenant(tenant: string) {
    const base = tenantKeyBase(this.#prefix, tenant);
    return { sessions: `${base}sessions`, created: `${base}created` };
  }

  async putBody(ref: SessionRef, entry: IndexedBody): Promise<void> {
    const k = sessionKeys(this.#prefix, ref);
    const commands: (string | number)[][] = [
      ["HSET", k.index, entry.meta.mem_id, JSON.stringify(entry)],
    ];
    if (this.#ttl > 0) commands.push(["EXPIRE", k.index, this.#ttl]);
    await snapshot(this.#redis, commands);
  }

  async getBody(ref: SessionRef, memId: string): Promise<IndexedBody | null> {
    const v = await this.#redis.call("HGET", sessionKeys(this.#prefix, ref).index, memId);
    return typeof v === "string" ? (JSON.parse(v) as IndexedBody) : null;
  }

  /**
   * A tenant's session, listed until a day past the retention (as KV's entries): a live session's
   * entry is written again about daily (`index_due`), an idle one's ages out of the listing.
   */
  async putSession(ref: SessionRef, entry: IndexedSession): Promise<void> {
    const t = this.#tenant(ref.tenant);
    const ttl = indexTtlSeconds(this.#ttl);
    const until = ttl === undefined ? 0 : this.#now() + ttl * 1000;
    await snapshot(this.#redis, [
      ["ZADD", t.sessions, 0, entry.session],
      ["HSET", t.created, entry.session, `${entry.created_at}/${until}`],
    ]);
  }

  /**
   * A page of the tenant's sessions by id, after the cursor (the last session listed). Entries past
   * their time are left out, and dropped.
   */
  async listSessions(
    tenant: string,
    options: { cursor?: string; limit?: number } = {},
  ): Promise<{ sessions: IndexedSession[]; cursor: string | null }> {
    const limit = options.limit ?? 1000;
    if (options.cursor !== undefined && !isSessionId(options.cursor)) throw badCursor();
    const t = this.#tenant(tenant);
    const from = options.cursor === undefined ? "-" : `(${options.cursor}`;
    const page = (await this.#redis.call(
      "ZRANGE",
      t.sessions,
      from,
      "+",
      "BYLEX",
      "LIMIT",
      0,
      limit + 1,
    )) as string[];
    const shown = page.slice(0, limit);
    if (shown.length === 0) return { sessions: [], cursor: null };
    const now = this.#now();
    const entries = values(await this.#redis.call("HMGET", t.created, ...shown)).map((v) => {
      const [created, until] = (v ?? "0/1").split("/").map(Number) as [number, number];
      return { created, gone: v === null || (until !== 0 && until <= now) };
    });
    const gone = shown.filter((_, i) => entries[i]!.gone);
    if (gone.length > 0)
      await snapshot(this.#redis, [
        ["ZREM", t.sessions, ...gone],
        ["HDEL", t.created, ...gone],
      ]);
    return {
      sessions: shown.flatMap((session, i) =>
        entries[i]!.gone ? [] : [{ session, created_at: entries[i]!.created }],
      ),
      cursor: page.length > limit ? shown[shown.length - 1]! : null,
    };
  }

  async deleteBodies(ref: SessionRef, memIds: readonly string[]): Promise<void> {
    const k = sessionKeys(this.#prefix, ref);
    for (let i = 0; i < memIds.length; i += 500)
      await this.#redis.call("HDEL", k.index, ...memIds.slice(i, i + 500));
  }

  async deleteSession(ref: SessionRef): Promise<void> {
    const t = this.#tenant(ref.tenant);
    await snapshot(this.#redis, [
      ["ZREM", t.sessions, ref.session],
      ["HDEL", t.created, ref.session],
      ["DEL", sessionKeys(this.#prefix, ref).index],
    ]);
  }
}

/**
 * A hash written under its own version (`v`): ARGV is the expected version, the number of fields to
 * delete, those fields, then field/value pairs to set. 0 when another writer came first.
 */
const HASH_CAS = `
if (redis.call('HGET', KEYS[1], 'v') or '0') ~= ARGV[1] then return 0 end
redis.call('HINCRBY', KEYS[1], 'v', 1)
local n = tonumber(ARGV[2])
if n > 0 then redis.call('HDEL', KEYS[1], unpack(ARGV, 3, 2 + n)) end
if #ARGV > 2 + n then redis.call('HSET', KEYS[1], unpack(ARGV, 3 + n)) end
return 1
`;

/**
 * The tenant's learning: counters per tool, and, each learned under its hash's version, a
 * calibration per model and the ended sessions' lengths (session-lengths.ts: a weight per length
 * bucket, and the count of ended sessions that scales them).
 */
export class RedisTenantLearning implements TenantLearning {
  readonly #redis: RedisClient;
  readonly #prefix: string;

  constructor(redis: RedisClient, options: { prefix?: string } = {}) {
    this.#redis = redis;
    this.#prefix = options.prefix ?? DEFAULT_KEY_PREFIX;
  }

  #keys(tenant: string) {
    const base = tenantKeyBase(this.#prefix, tenant);
    return {
      offloaded: `${base}offloaded`,
      recalls: `${base}recalls`,
      models: `${base}models`,
      lengths: `${base}lengths`,
    };
  }

  async read(tenant: string): Promise<TenantAggregate> {
    const k = this.#keys(tenant);
    const [off, rec, models, lengths] = await snapshot(this.#redis, [
      ["HGETALL", k.offloaded],
      ["HGETALL", k.recalls],
      ["HGETALL", k.models],
      ["HGETALL", k.lengths],
    ]);
    const recalls = hash(rec);
    const tools = Object.entries(hash(off))
      .map(([tool, n]): [string, ToolStats] => [
        tool,
        { offloaded: Number(n), recalls: Number(recalls[tool] ?? 0) },
      ])
      .filter(([, s]) => s.offloaded > 0)
      .sort((a, b) => b[1].offloaded - a[1].offloaded || (a[0] < b[0] ? -1 : 1))
      .slice(0, TENANT_TOOLS_LIMIT);
    const calibrations = Object.entries(hash(models))
      .filter(([m]) => m !== "v")
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .slice(0, TENANT_MODELS_LIMIT)
      .map(([m, s]): [string, Calibration] => [m, JSON.parse(s) as Calibration]);
    const l = hash(lengths);
    const sessionLengths = lengthsOf(
      Object.entries(l)
        .filter(([f]) => f !== "v" && f !== "ended")
        .map(([calls, w]): [number, number] => [Number(calls), Number(w)]),
      Number(l.ended ?? 0),
    );
    return {
      ...(sessionLengths === undefined ? {} : { session_lengths: sessionLengths }),
      tools: Object.fromEntries(tools),
      calibrations: Object.fromEntries(calibrations),
    };
  }

  async add(tenant: string, delta: TenantDelta): Promise<void> {
    const k = this.#keys(tenant);
    const whole = (n: number | undefined) => Math.max(0, Math.trunc(n ?? 0));
    const counts: (string | number)[][] = [];
    for (const [tool, d] of Object.entries(delta.tools ?? {})) {
      if (whole(d.offloaded) > 0) counts.push(["HINCRBY", k.offloaded, tool, whole(d.offloaded)]);
      if (whole(d.recalls) > 0) counts.push(["HINCRBY", k.recalls, tool, whole(d.recalls)]);
    }
    if (counts.length > 0) await snapshot(this.#redis, counts);
    const samples = (delta.samples ?? []).slice(-256);
    // Samples are learned in order, each from the state the last one left.
    if (samples.length > 0)
      await this.#learn(k.models, (models) => {
        const next = new Map<string, Calibration>();
        for (const s of samples) {
          const stored = models[s.model];
          const before =
            next.get(s.model) ??
            (stored === undefined ? null : (JSON.parse(stored) as Calibration));
          next.set(s.model, calibrate(before, s.estimate, s.measured));
        }
        return { drop: [], set: [...next].flatMap(([m, c]) => [m, JSON.stringify(c)]) };
      });
    const ended = endedBuckets(delta.ended);
    if (ended.length > 0)
      await this.#learn(k.lengths, (stored) => {
        const add = lengthsAddition(Number(stored.ended ?? 0), ended);
        const weights = new Map<string, number>();
        const drop: string[] = [];
        for (const [calls, w] of Object.entries(stored)) {
          if (calls === "v" || calls === "ended" || add.rescale === null) continue;
          // Back to scale (weights in sessions), the forgotten buckets dropped: once per 25,000.
          const scaled = Number(w) * add.rescale;
          if (scaled < FORGOTTEN_WEIGHT) drop.push(calls);
          else weights.set(calls, scaled);
        }
        for (const [calls, w] of add.weights) {
          const key = String(calls);
          const base = weights.get(key) ?? (drop.includes(key) ? 0 : Number(stored[key] ?? 0));
          weights.set(key, base + w);
        }
        return {
          drop: drop.filter((c) => !weights.has(c)),
          set: ["ended", add.ended, ...[...weights].flat()],
        };
      });
  }

  /** A hash changed from what it holds, under its version; read again when another came first. */
  async #learn(
    key: string,
    change: (stored: Record<string, string>) => { drop: string[]; set: (string | number)[] },
  ): Promise<void> {
    for (let attempt = 0; attempt < 50; attempt++) {
      const stored = hash(await this.#redis.call("HGETALL", key));
      const { drop, set } = change(stored);
      const ok = await this.#redis.call(
        "EVAL",
        HASH_CAS,
        1,
        key,
        stored.v ?? "0",
        drop.length,
        ...drop,
        ...set,
      );
      if (Number(ok) === 1) return;
      await new Promise((r) => setTimeout(r, Math.random() * 20));
    }
    throw new OffloadError("storage_error", "the tenant's learning is written by too many at once");
  }
}

export interface RedisStoreOptions extends RetainedStoreOptions {
  /** Every key starts with it (default `eo:`). */
  prefix?: string | undefined;
}

/** What the store needs of a client it made, to close it. */
type OwnedClient = RedisClient & {
  quit(): Promise<unknown>;
  on(e: string, f: (e: Error) => void): unknown;
};

/**
 * The store in Redis (see above).
 *
 * @example
 * import { RedisStore } from "edge-offload/redis";
 * const store = await RedisStore.connect(process.env.REDIS_URL!);
 * const fetch = offloadFetch({ store, session: "chat-42", secret: process.env.OFFLOAD_SECRET! });
 */
export class RedisStore extends RetainedStore {
  readonly #client: RedisClient;
  readonly #owned: boolean;

  /** Over a client of the app's (an ioredis `Redis`). */
  constructor(redis: RedisClient, options: RedisStoreOptions = {}, owned = false) {
    const prefix = options.prefix ?? DEFAULT_KEY_PREFIX;
    const retentionSeconds = options.retentionSeconds ?? DEFAULT_RETENTION_SECONDS;
    const keys = { prefix, retentionSeconds };
    const state = new RedisSessionState(redis, {
      ...keys,
      ...(options.now ? { now: options.now } : {}),
    });
    super(
      {
        ...options,
        sessions: state,
        ledger: new RedisLedger(redis, keys),
        index: new RedisIndex(redis, { ...keys, ...(options.now ? { now: options.now } : {}) }),
        // Over the network: read through the process's cache, never on a turn's path.
        tenants: new TenantCache(
          new RedisTenantLearning(redis, { prefix }),
          options.now ? { now: options.now } : {},
        ),
      },
      state,
      new RedisExtractionCache(redis, keys),
    );
    this.#client = redis;
    this.#owned = owned;
  }

  /** Connects to a `redis://` (or `rediss://`) URL, with `ioredis` installed. */
  static async connect(url: string, options: RedisStoreOptions = {}): Promise<RedisStore> {
    let Redis: new (url: string, options: Record<string, unknown>) => OwnedClient;
    try {
      const name = "ioredis";
      const mod = (await import(/* @vite-ignore */ name)) as {
        default?: typeof Redis;
        Redis?: typeof Redis;
      };
      Redis = (mod.Redis ?? mod.default)!;
    } catch {
      throw new OffloadError(
        "internal",
        'RedisStore needs the "ioredis" package: npm install ioredis',
      );
    }
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2 });
    // A dropped connection is retried by the client; each call is bounded by the store's deadline.
    client.on("error", () => {});
    await (client as unknown as { connect(): Promise<void> }).connect();
    return new RedisStore(client, options, true);
  }

  /** Stops the sweep; closes the connection when the store made it. */
  override async close(): Promise<void> {
    await super.close();
    if (this.#owned) await (this.#client as OwnedClient).quit();
  }
}

export type { RedisExtractionOptions } from "./redis-extractions.ts";
export { RedisExtractionCache } from "./redis-extractions.ts";
export type { RedisClient } from "./redis-port.ts";
export type { RedisSessionOptions } from "./redis-state.ts";
export { RedisSessionState } from "./redis-state.ts";
