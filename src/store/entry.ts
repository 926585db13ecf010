/**
 * `edge-offload/store`: the ports a store of one's own implements, and the shapes that cross them.
 * `compact` and `recall` do all their I/O through an `OffloadStore`; the attachment policy caches
 * extractions through an `ExtractionCache`. A session is named `{ tenant, session }` everywhere
 * (`sessionRef` checks one). `MemoryStore` (the root entry) is the in-memory twin every adapter is
 * checked against.
 *
 * @example
 * import type { OffloadStore } from "edge-offload/store";
 * class MyStore implements OffloadStore { … }
 */
export type { Edit } from "../core/formats/types.ts";
export type {
  CachedExtraction,
  CommitResult,
  ExtractionCache,
  LoadedState,
  OffloadStore,
  SessionSummary,
  ToolStats,
  TurnCommit,
} from "../core/ports.ts";
export type { SessionInput } from "../core/session.ts";
export { DEFAULT_TENANT, sessionRef } from "../core/session.ts";
export type * from "../core/types.ts";
