// What a Durable Object's calls write to its SQLite storage: the rows (what Durable Objects bill; a cursor
// counts the rows its statement wrote) and the transactions, counted while some work runs.

export interface Writes<T> {
  rows: number;
  transactions: number;
  value: T;
}

/** Runs `work` with the object's SQL and transactions watched; the storage is as it was afterwards. */
export async function writesOf<T>(
  storage: DurableObjectStorage,
  work: () => T | Promise<T>,
): Promise<Writes<T>> {
  const sql = storage.sql;
  const exec = sql.exec;
  const transactionSync = storage.transactionSync;
  const cursors: { rowsWritten: number }[] = [];
  let transactions = 0;
  sql.exec = ((query: string, ...bindings: unknown[]) => {
    const cursor = exec.call(sql, query, ...bindings);
    cursors.push(cursor);
    return cursor;
  }) as typeof sql.exec;
  storage.transactionSync = ((closure: () => unknown) => {
    transactions++;
    return transactionSync.call(storage, closure);
  }) as typeof storage.transactionSync;
  try {
    const value = await work();
    // A cursor counts its rows as it is read; the callers read theirs before returning.
    return { rows: cursors.reduce((n, c) => n + c.rowsWritten, 0), transactions, value };
  } finally {
    sql.exec = exec;
    storage.transactionSync = transactionSync;
  }
}
