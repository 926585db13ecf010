/**
 * The in-memory twin of the storage port: the library's default store, and the reference the contract suite
 * is written against. Values are cloned on the way in and out, as a serializing store would.
 */
import type { BodyMeta, ResultRecord, SessionRef, StoredBody, TurnLog } from "../core/types.ts";
import type { CommitResult, LoadedState, OffloadStore, SessionSummary, TurnCommit } from "./port.ts";

interface SessionData {
  records: Map<string, ResultRecord>;
  bodies: Map<string, StoredBody>;
  recall_declared: boolean;
  calls: number;
  recalls: number;
  turns: TurnLog[];
}

/** How many per-turn log lines a session keeps (older ones are dropped; totals live in the records). */
export const TURN_LOG_LIMIT = 1000;

export class MemoryStore implements OffloadStore {
  readonly #sessions = new Map<string, SessionData>();

  #key(ref: SessionRef): string {
    return JSON.stringify([ref.tenant, ref.session]);
  }

  #data(ref: SessionRef, create: true): SessionData;
  #data(ref: SessionRef, create: false): SessionData | undefined;
  #data(ref: SessionRef, create: boolean): SessionData | undefined {
    const key = this.#key(ref);
    let data = this.#sessions.get(key);
    if (data === undefined && create) {
      data = { records: new Map(), bodies: new Map(), recall_declared: false, calls: 0, recalls: 0, turns: [] };
      this.#sessions.set(key, data);
    }
    return data;
  }

  async load(ref: SessionRef, toolUseIds: readonly string[]): Promise<LoadedState> {
    const data = this.#data(ref, false);
    const records = new Map<string, ResultRecord>();
    if (data !== undefined) {
      for (const id of toolUseIds) {
        const r = data.records.get(id);
        if (r !== undefined) records.set(id, structuredClone(r));
      }
    }
    return { records, recall_declared: data?.recall_declared ?? false };
  }

  async commit(ref: SessionRef, commit: TurnCommit): Promise<CommitResult> {
    const data = this.#data(ref, true);
    const standing = new Map<string, ResultRecord>();
    for (const record of commit.records) {
      const existing = data.records.get(record.tool_use_id);
      if (existing === undefined) data.records.set(record.tool_use_id, structuredClone(record));
      standing.set(record.tool_use_id, structuredClone(existing ?? record));
    }
    data.recall_declared ||= commit.recall_declared;
    data.calls++;
    data.turns.push(structuredClone(commit.log));
    if (data.turns.length > TURN_LOG_LIMIT) data.turns.splice(0, data.turns.length - TURN_LOG_LIMIT);
    return { records: standing };
  }

  async putBody(ref: SessionRef, body: string, meta: BodyMeta): Promise<void> {
    this.#data(ref, true).bodies.set(meta.mem_id, { body, meta: structuredClone(meta) });
  }

  async getBody(ref: SessionRef, memId: string): Promise<StoredBody | null> {
    const stored = this.#data(ref, false)?.bodies.get(memId);
    return stored === undefined ? null : { body: stored.body, meta: structuredClone(stored.meta) };
  }

  async noteRecall(ref: SessionRef, _memId: string): Promise<void> {
    this.#data(ref, true).recalls++;
  }

  async describeSession(ref: SessionRef): Promise<SessionSummary | null> {
    const data = this.#data(ref, false);
    if (data === undefined) return null;
    return {
      tenant: ref.tenant,
      session: ref.session,
      calls: data.calls,
      recall_declared: data.recall_declared,
      recalls: data.recalls,
      records: [...data.records.values()].map((r) => structuredClone(r)),
      turns: data.turns.map((t) => structuredClone(t)),
    };
  }

  async deleteSession(ref: SessionRef): Promise<void> {
    this.#sessions.delete(this.#key(ref));
  }
}
