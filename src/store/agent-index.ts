/**
 * The lookup index and the adaptive gate's statistics in an agent's own Durable Object. Both live in
 * the same SQLite as the session state, so the index never lags there; it is kept anyway so the
 * composed store's rules (and reports that list a tenant's sessions) work as with KV. The statistics
 * are those of the tenant's sessions in this object (an agent is one conversation, so the gate
 * mostly learns from the session itself, as it does without a TenantDO).
 */
import type { ToolStats } from "../core/ports.ts";
import { isSessionId } from "../core/session.ts";
import type { SessionRef } from "../core/types.ts";
import { type AgentStorage, idList, sqlOf } from "./agent-sql.ts";
import {
  badCursor,
  type IndexedBody,
  type IndexedSession,
  type IndexPort,
  type TenantStatsPort,
} from "./ports.ts";

const KEY = "tenant = ? AND session = ?";

export class AgentIndex implements IndexPort {
  readonly #storage: AgentStorage;

  constructor(storage: AgentStorage) {
    this.#storage = storage;
  }

  async putBody(ref: SessionRef, entry: IndexedBody): Promise<void> {
    sqlOf(this.#storage).exec(
      "INSERT INTO eo_index_bodies (tenant, session, mem_id, entry) VALUES (?, ?, ?, ?) ON CONFLICT (tenant, session, mem_id) DO UPDATE SET entry = excluded.entry",
      ref.tenant,
      ref.session,
      entry.meta.mem_id,
      JSON.stringify(entry),
    );
  }

  async getBody(ref: SessionRef, memId: string): Promise<IndexedBody | null> {
    const row = sqlOf(this.#storage)
      .exec<{ entry: string }>(
        `SELECT entry FROM eo_index_bodies WHERE ${KEY} AND mem_id = ?`,
        ref.tenant,
        ref.session,
        memId,
      )
      .toArray()[0];
    return row === undefined ? null : (JSON.parse(row.entry) as IndexedBody);
  }

  async putSession(ref: SessionRef, entry: IndexedSession): Promise<void> {
    sqlOf(this.#storage).exec(
      "INSERT INTO eo_index_sessions (tenant, session, created_at) VALUES (?, ?, ?) ON CONFLICT (tenant, session) DO UPDATE SET created_at = excluded.created_at",
      ref.tenant,
      entry.session,
      entry.created_at,
    );
  }

  async listSessions(
    tenant: string,
    options: { cursor?: string; limit?: number } = {},
  ): Promise<{ sessions: IndexedSession[]; cursor: string | null }> {
    const limit = options.limit ?? 1000;
    // The cursor is the last session listed: the next page starts after it. Anything that is not a
    // session id was never returned by a listing.
    if (options.cursor !== undefined && !isSessionId(options.cursor)) throw badCursor();
    const rows = sqlOf(this.#storage)
      .exec<{ session: string; created_at: number }>(
        "SELECT session, created_at FROM eo_index_sessions WHERE tenant = ? AND session > ? ORDER BY session LIMIT ?",
        tenant,
        options.cursor ?? "",
        limit + 1,
      )
      .toArray();
    const page = rows.slice(0, limit);
    return {
      sessions: page.map((r) => ({ session: r.session, created_at: r.created_at })),
      cursor: rows.length > limit ? page[page.length - 1]!.session : null,
    };
  }

  async deleteBodies(ref: SessionRef, memIds: readonly string[]): Promise<void> {
    sqlOf(this.#storage).exec(
      `DELETE FROM eo_index_bodies WHERE ${KEY} AND mem_id IN (SELECT value FROM json_each(?))`,
      ref.tenant,
      ref.session,
      idList(memIds),
    );
  }

  async deleteSession(ref: SessionRef): Promise<void> {
    const sql = sqlOf(this.#storage);
    sql.exec(`DELETE FROM eo_index_sessions WHERE ${KEY}`, ref.tenant, ref.session);
    sql.exec(`DELETE FROM eo_index_bodies WHERE ${KEY}`, ref.tenant, ref.session);
  }
}

export class AgentTenantStats implements TenantStatsPort {
  readonly #storage: AgentStorage;

  constructor(storage: AgentStorage) {
    this.#storage = storage;
  }

  async load(tenant: string, toolNames: readonly string[]): Promise<Record<string, ToolStats>> {
    const rows = sqlOf(this.#storage)
      .exec<{ tool: string; offloaded: number; recalls: number }>(
        "SELECT tool, offloaded, recalls FROM eo_tool_stats WHERE tenant = ? AND tool IN (SELECT value FROM json_each(?))",
        tenant,
        idList(toolNames),
      )
      .toArray();
    return Object.fromEntries(
      rows.map((r) => [r.tool, { offloaded: r.offloaded, recalls: r.recalls }]),
    );
  }

  async add(tenant: string, deltas: Record<string, Partial<ToolStats>>): Promise<void> {
    const sql = sqlOf(this.#storage);
    this.#storage.transactionSync(() => {
      for (const [tool, d] of Object.entries(deltas))
        sql.exec(
          "INSERT INTO eo_tool_stats (tenant, tool, offloaded, recalls) VALUES (?, ?, ?, ?) ON CONFLICT (tenant, tool) DO UPDATE SET offloaded = offloaded + excluded.offloaded, recalls = recalls + excluded.recalls",
          tenant,
          tool,
          Math.max(0, Math.trunc(d.offloaded ?? 0)),
          Math.max(0, Math.trunc(d.recalls ?? 0)),
        );
    });
  }
}
