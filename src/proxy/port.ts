/**
 * What the proxy loop needs of a store. The proxy depends on this interface only (never on a
 * concrete store), so it runs wherever a store implements the core's port: in the Worker over the
 * Durable Objects, or in one process over a `MemoryStore`. What it remembers about a session (its
 * memos) comes with the turn's start and goes back with the turn's finish.
 */
import type { OffloadStore } from "../core/ports.ts";

export type { ProxyMemo, RecallParams, RememberedCall } from "../core/types.ts";

/** A turn begun (its start carries the config layer and the memos), recalls read and counted. */
export type ProxyStore = Pick<OffloadStore, "beginTurn" | "getBody" | "noteRecall" | "whyMissing">;
