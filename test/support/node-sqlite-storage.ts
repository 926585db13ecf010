/**
 * A Durable Object's `ctx.storage` SQL surface over Node's own SQLite (node:sqlite), so the agent store's
 * adapters run their contracts in plain Node too (the same suites run in workerd over a real
 * SQLite-backed Durable Object: test/agents/). Bindings and results as workerd's: rows of plain values.
 */
import { DatabaseSync } from "node:sqlite";
import type { AgentStorage, SqlRows, SqlValue } from "../../src/store/agent-sql.ts";

export function nodeSqliteStorage(): AgentStorage & { close(): void } {
  const db = new DatabaseSync(":memory:");
  let depth = 0;
  return {
    sql: {
      exec<T extends Record<string, SqlValue>>(query: string, ...bindings: unknown[]): SqlRows<T> {
        const rows = db.prepare(query).all(...(bindings as (string | number | null)[])) as T[];
        return {
          toArray: () => rows,
          one: () => {
            if (rows.length !== 1) throw new Error(`expected one row, got ${rows.length}`);
            return rows[0]!;
          },
        };
      },
    },
    transactionSync<T>(run: () => T): T {
      const name = `sp${depth++}`;
      db.exec(`SAVEPOINT ${name}`);
      try {
        const out = run();
        db.exec(`RELEASE ${name}`);
        return out;
      } catch (e) {
        db.exec(`ROLLBACK TO ${name}`);
        db.exec(`RELEASE ${name}`);
        throw e;
      } finally {
        depth--;
      }
    },
    close: () => db.close(),
  };
}
