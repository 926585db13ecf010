/**
 * What the Redis store classes share: the client surface they use (ioredis's, typed by use), where a
 * session's keys live, and the one write primitive. A session's keys carry its hash tag
 * (`{tenant/session}`), so they live in one slot.
 *
 * A write is optimistic, as SQL's row lock is pessimistic: a writer reads what it needs in one MULTI
 * (a consistent snapshot, including the session row's version `v`), computes with the same rules as the
 * SQL classes, then sends its writes to a Lua script that applies them only if `v` is unchanged, bumps
 * it, and refreshes the session's time to live; else nothing is written and the writer reads again.
 * Every write of a session goes through it, so concurrent turns of one session, from any process,
 * commit one after the other, and the second sees the first's records (first writer wins).
 */
import type { SessionRef } from "../core/types.ts";
import { OffloadError } from "../errors.ts";

/** What the classes use of a Redis client (ioredis's `Redis`). */
export interface RedisClient {
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
  multi(commands: (string | number)[][]): {
    exec(): Promise<[Error | null, unknown][] | null>;
  };
}

/** Every key starts with it unless the store is given another prefix. */
export const DEFAULT_KEY_PREFIX = "eo:";

/**
 * Where a tenant's own keys begin (its learning, its sessions' index, its cached extractions): the
 * tenant's hash tag, so they live in one slot.
 */
export function tenantKeyBase(prefix: string, tenant: string): string {
  return `${prefix}tenant:{${tenant}}:`;
}

/** A session's keys, by what they hold. */
export function sessionKeys(prefix: string, ref: SessionRef) {
  const base = `${prefix}{${ref.tenant}/${ref.session}}:`;
  return {
    /** The session (not a key): the sweep's list names it. */
    ref: [ref.tenant, ref.session] as const,
    /** The lifecycle and the live session's fields (hash), with the version `v`. */
    row: `${base}row`,
    /** tool_use_id → {n, r} (the record and the order it was first decided in). */
    records: `${base}records`,
    /** mem_id → the tool name of its offloaded record, "" when none is offloaded. */
    mems: `${base}mems`,
    /** seq → {log, at}. */
    turns: `${base}turns`,
    /** seq → recalls counted after that turn. */
    turnRecalls: `${base}turn_recalls`,
    /** mem_id → recalls. */
    recalls: `${base}recalls`,
    /** tool → offloads / recalls. */
    offloaded: `${base}tool_offloads`,
    toolRecalls: `${base}tool_recalls`,
    /** seq → memo; anchor → [seq…]. */
    memos: `${base}memos`,
    anchors: `${base}anchors`,
    /** mem_id → deleted_at ("" while pending). */
    orphans: `${base}orphans`,
    /** The ledger's: mem_id → body (JSON string), mem_id → meta. */
    bodies: `${base}bodies`,
    metas: `${base}metas`,
    /** The index's: mem_id → entry. */
    index: `${base}index`,
  };
}

export type SessionKeys = ReturnType<typeof sessionKeys>;
export type KeyName = Exclude<keyof SessionKeys, "ref">;

/** The order of a session's keys in the script's KEYS (the row first: it holds the version). */
export const KEY_ORDER = Object.keys(sessionKeys("", { tenant: "t", session: "s" })).filter(
  (k) => k !== "ref",
) as KeyName[];

/** One write: a command, the session key it writes, its arguments. */
export type Op = [
  command: "HSET" | "HDEL" | "DEL" | "HINCRBY",
  key: KeyName,
  ...args: (string | number)[],
];

/**
 * KEYS: the session's keys in KEY_ORDER, then the list of sessions by activity. ARGV: the expected
 * version ("0": no row yet), the time to live in seconds (0: none), the session's new activity ("":
 * unchanged) and its member in that list, then each op as its length, command, key number, arguments.
 */
const CAS = `
local v = redis.call('HGET', KEYS[1], 'v') or '0'
if v ~= ARGV[1] then return 0 end
local i = 5
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  local args = {}
  for j = i + 3, i + n do args[#args + 1] = ARGV[j] end
  redis.call(ARGV[i + 1], KEYS[tonumber(ARGV[i + 2])], unpack(args))
  i = i + n + 1
end
redis.call('HINCRBY', KEYS[1], 'v', 1)
local ttl = tonumber(ARGV[2])
if ttl > 0 then
  for k = 1, #KEYS - 1 do redis.call('EXPIRE', KEYS[k], ttl) end
end
if ARGV[3] ~= '' then redis.call('ZADD', KEYS[#KEYS], ARGV[3], ARGV[4]) end
return 1
`;

/** Arguments per op at most (Lua's stack takes a few thousand); longer ops are cut by the caller. */
export const OP_ARGS = 1000;

/**
 * Sends `ops` if the session's version is still `version`; false when another writer came first. A
 * write that moves the session's activity (`last_active` on its row) also files it, in the same
 * script, in `activeKey`: the list by activity the sweep reads for sessions that ended.
 */
export async function casWrite(
  redis: RedisClient,
  keys: SessionKeys,
  version: string,
  ttlSeconds: number,
  ops: readonly Op[],
  activeKey: string,
): Promise<boolean> {
  let active = "";
  for (const [command, key, ...args] of ops) {
    const at = command === "HSET" && key === "row" ? args.indexOf("last_active") : -1;
    if (at >= 0 && at % 2 === 0) active = String(args[at + 1]);
  }
  const argv: (string | number)[] = [version, ttlSeconds, active, JSON.stringify(keys.ref)];
  for (const [command, key, ...args] of ops) {
    argv.push(args.length + 2, command, KEY_ORDER.indexOf(key) + 1, ...args);
  }
  const out = await redis.call(
    "EVAL",
    CAS,
    KEY_ORDER.length + 1,
    ...KEY_ORDER.map((k) => keys[k]),
    activeKey,
    ...argv,
  );
  return Number(out) === 1;
}

/** Attempts of one write against concurrent writers of the same session. */
const ATTEMPTS = 50;

/**
 * Runs `attempt` until its write lands (it returns a value) or it needs none; `attempt` answers
 * undefined when another writer came first. Waits a little, more each time, between attempts.
 */
export async function optimistic<T>(attempt: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < ATTEMPTS; i++) {
    const out = await attempt();
    if (out !== undefined) return out;
    await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 + i * 4)));
  }
  throw new OffloadError("storage_error", "the session is written by too many turns at once");
}

/** A MULTI's replies, or the error one of them carries. */
export async function snapshot(
  redis: RedisClient,
  commands: (string | number)[][],
): Promise<unknown[]> {
  // ioredis looks a command up by its lower-case method name.
  const out = await redis
    .multi(commands.map(([name, ...args]) => [String(name).toLowerCase(), ...args]))
    .exec();
  if (out === null) throw new OffloadError("storage_error", "the Redis transaction was aborted");
  return out.map(([error, value]) => {
    if (error !== null) throw error;
    return value;
  });
}

/** An HGETALL's reply as an object (ioredis answers one; RESP2 clients a flat list). */
export function hash(reply: unknown): Record<string, string> {
  if (Array.isArray(reply)) {
    const out: Record<string, string> = {};
    for (let i = 0; i + 1 < reply.length; i += 2) out[String(reply[i])] = String(reply[i + 1]);
    return out;
  }
  return (reply ?? {}) as Record<string, string>;
}

/** An HMGET's reply: a value per field, null where none. */
export function values(reply: unknown): (string | null)[] {
  return Array.isArray(reply) ? (reply as (string | null)[]) : [];
}

/** HMGET with no field is an error in Redis: a command that asks nothing reads nothing. */
export function hmget(key: string, fields: readonly string[]): (string | number)[] {
  return fields.length === 0 ? ["EXISTS", key] : ["HMGET", key, ...fields];
}
