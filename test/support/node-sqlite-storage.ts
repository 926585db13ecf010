/**
 * A Durable Object's `ctx.storage` SQL surface over Node's own SQLite (node:sqlite), so the hosts of the SQL
 * classes (`durableSql`: the SessionDO, the TenantDO, a Cloudflare Agent) run their contracts in plain Node
 * too (the same suites run in workerd over real SQLite-backed objects). Bindings and results as workerd's:
 * rows of plain values; `transaction(closure)` as a SQLite-backed object runs it: what the closure does is
 * one transaction, across its awaits, and one closure runs at a time.
 */
import { DatabaseSync } from "node:sqlite";
import type { DurableStorage, SqlValue } from "../../src/store/sql.ts";

export function nodeSqliteStorage(): DurableStorage & {
  sql: { exec<T>(query: string, ...bindings: unknown[]): { toArray(): T[]; one(): T } };
  close(): void;
} {
  const db = new DatabaseSync(":memory:");
  let queue: Promise<unknown> = Promise.resolve();
  return {
    sql: {
      exec<T>(query: string, ...bindings: unknown[]) {
        const rows = db.prepare(query).all(...(bindings as SqlValue[])) as T[];
        return {
          toArray: () => rows,
          one: () => {
            if (rows.length !== 1) throw new Error(`expected one row, got ${rows.length}`);
            return rows[0]!;
          },
        };
      },
    },
    transaction<T>(closure: () => Promise<T>): Promise<T> {
      const run = async () => {
        db.exec("BEGIN");
        try {
          const out = await closure();
          db.exec("COMMIT");
          return out;
        } catch (e) {
          db.exec("ROLLBACK");
          throw e;
        }
      };
      const next = queue.then(run, run);
      queue = next.catch(() => {});
      return next;
    },
    close: () => db.close(),
  };
}
