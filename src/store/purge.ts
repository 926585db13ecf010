/**
 * A session's bodies and index entries removed in batches: what a delete, a retention purge and the
 * tombstone's sweep all run.
 */
import type { SessionRef } from "../core/types.ts";
import { OffloadError } from "../errors.ts";
import type { BodyLedgerPort, IndexPort } from "./ports.ts";

/** Bodies purged per step: their index entries go first, then the bodies themselves. */
const PURGE_BATCH = 100;

/**
 * Remove a session's bodies and index entries, a batch at a time: each batch's index entries, then
 * its bodies. A body's listing is what names its index entry, so it goes last; and a purge that
 * stops half way (a backend error, the per-invocation operation limit on a huge session) has made
 * progress that a repeat continues.
 */
export async function purgeBodies(
  ref: SessionRef,
  named: readonly string[],
  ledger: BodyLedgerPort,
  index: IndexPort,
): Promise<void> {
  const done = new Set<string>();
  for (;;) {
    const batch = await ledger.list(ref, PURGE_BATCH);
    if (batch.length === 0) break;
    if (batch.every((id) => done.has(id)))
      throw new OffloadError("internal", "the ledger did not delete a batch of bodies");
    await index.deleteBodies(ref, batch);
    await ledger.delete(ref, batch);
    for (const id of batch) done.add(id);
  }
  const rest = named.filter((id) => !done.has(id));
  if (rest.length > 0) await index.deleteBodies(ref, rest);
  await index.deleteSession(ref);
}
