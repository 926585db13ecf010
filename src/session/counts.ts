/**
 * Tables of counts per tool name (`tool`, `offloaded`, `recalls`), as the tenant's statistics keep
 * them in a session (its copy, its pending deltas) and in a TenantDO (totals, a shard's copy and
 * pending deltas): the same few statements everywhere.
 */
import type { ToolStats } from "../core/ports.ts";

export type Counts = Record<string, ToolStats>;

/** Adds deltas (negative or fractional parts ignored); returns whether anything was added. */
export function addCounts(
  sql: SqlStorage,
  table: string,
  deltas: Record<string, Partial<ToolStats>>,
): boolean {
  let any = false;
  for (const [tool, d] of Object.entries(deltas)) {
    const offloaded = Math.max(0, Math.trunc(d.offloaded ?? 0));
    const recalls = Math.max(0, Math.trunc(d.recalls ?? 0));
    if (offloaded === 0 && recalls === 0) continue;
    any = true;
    sql.exec(
      `INSERT INTO ${table} (tool, offloaded, recalls) VALUES (?, ?, ?) ON CONFLICT (tool) DO UPDATE SET offloaded = offloaded + excluded.offloaded, recalls = recalls + excluded.recalls`,
      tool,
      offloaded,
      recalls,
    );
  }
  return any;
}

/** Replaces the counts of these tools. */
export function setCounts(sql: SqlStorage, table: string, counts: Counts): void {
  for (const [tool, c] of Object.entries(counts))
    sql.exec(
      `INSERT INTO ${table} (tool, offloaded, recalls) VALUES (?, ?, ?) ON CONFLICT (tool) DO UPDATE SET offloaded = excluded.offloaded, recalls = excluded.recalls`,
      tool,
      c.offloaded,
      c.recalls,
    );
}

/** The counts of `names` (all tools when omitted). */
export function readCounts(sql: SqlStorage, table: string, names?: readonly string[]): Counts {
  const rows =
    names === undefined
      ? sql
          .exec<{ tool: string; offloaded: number; recalls: number }>(
            `SELECT tool, offloaded, recalls FROM ${table}`,
          )
          .toArray()
      : sql
          .exec<{ tool: string; offloaded: number; recalls: number }>(
            `SELECT tool, offloaded, recalls FROM ${table} WHERE tool IN (SELECT value FROM json_each(?))`,
            JSON.stringify(names),
          )
          .toArray();
  return Object.fromEntries(
    rows.map((r) => [r.tool, { offloaded: r.offloaded, recalls: r.recalls }]),
  );
}

/**
 * Takes what was sent off the pending deltas (deltas added while it was out stay); returns whether
 * any remain.
 */
export function settleCounts(sql: SqlStorage, table: string, sent: Counts): boolean {
  for (const [tool, d] of Object.entries(sent))
    sql.exec(
      `UPDATE ${table} SET offloaded = offloaded - ?, recalls = recalls - ? WHERE tool = ?`,
      d.offloaded,
      d.recalls,
      tool,
    );
  sql.exec(`DELETE FROM ${table} WHERE offloaded <= 0 AND recalls <= 0`);
  return sql.exec(`SELECT 1 FROM ${table} LIMIT 1`).toArray().length > 0;
}

/** Counts of a name never offloaded nor recalled read as unknown. */
export function nonZero(counts: Counts): Counts {
  return Object.fromEntries(
    Object.entries(counts).filter(([, c]) => c.offloaded !== 0 || c.recalls !== 0),
  );
}
