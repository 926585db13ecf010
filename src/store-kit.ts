/**
 * `edge-offload/store`: what a store of one's own is built from (the ready-made ones are
 * `edge-offload/sqlite`, `edge-offload/postgres`, `edge-offload/redis`, and `MemoryStore`; docs/stores.md
 * says which to choose). A store is `ComposedStore` over four backend ports; a session is named
 * `{ tenant, session }` everywhere (`sessionRef` checks one); a SQL engine needs only the SQL port
 * (`SqlPort`: a transaction, statements with `?`,
 * `hasTable`) and its `Dialect`, and the SQL classes do the rest (the session state, bodies, the lookup
 * index, the tenant's learning). docs/architecture.md draws a turn through these parts; the contract suites
 * in `edge-offload/contract` check a store against the same rules as the built-in ones.
 *
 * @example
 * import { DatabaseSync } from "node:sqlite";
 * import { ComposedStore, SqlIndex, SqlLedger, SqlSessionState, SqlTenantLearning, syncSqliteSql } from "edge-offload/store";
 * const sql = syncSqliteSql(new DatabaseSync("edge-offload.db"));
 * const store = new ComposedStore({
 *   sessions: new SqlSessionState(sql),
 *   ledger: new SqlLedger(sql),
 *   index: new SqlIndex(sql),
 *   tenants: new SqlTenantLearning(sql),
 * });
 */

export type { Edit } from "./core/formats/types.ts";
export type { SessionLengths } from "./core/horizon.ts";
export type {
  CachedExtraction,
  CommitResult,
  ExtractionCache,
  OffloadStore,
  RecallStore,
  SessionSummary,
  ToolStats,
  Turn,
  TurnAsk,
  TurnCommit,
  TurnFinish,
  TurnStart,
} from "./core/ports.ts";
export type { SessionInput } from "./core/session.ts";
export { DEFAULT_TENANT, sessionRef } from "./core/session.ts";
export type * from "./core/types.ts";
export type { CallOptions, Defer, StoreTimeouts } from "./store/backend-calls.ts";
export { DEFAULT_TIMEOUTS } from "./store/backend-calls.ts";
export type { StoreParts } from "./store/composed.ts";
export { ComposedStore } from "./store/composed.ts";
export { DEFAULT_STORE_DEADLINE_MS, withDeadline } from "./store/deadline.ts";
export type { StoredExtractionOptions } from "./store/extractions.ts";
export {
  EXTRACTION_TENANT_DEFAULTS,
  EXTRACTION_VALUE_MAX_BYTES,
  TieredExtractionCache,
} from "./store/extractions.ts";
export type { Lifecycle, Refusal, TurnLease } from "./store/lifecycle.ts";
export type { MemoryStoreOptions } from "./store/memory.ts";
export { MEMORY_DEFAULTS, MemoryStore, MemoryTenantLearning } from "./store/memory.ts";
export { MemoryExtractionCache } from "./store/memory-extractions.ts";
export { MemoryIndex } from "./store/memory-index.ts";
export { MemoryLedger } from "./store/memory-ledger.ts";
export { MemorySessionState } from "./store/memory-state.ts";
export type { OpenedStore, OpenOptions } from "./store/open.ts";
export { openStore } from "./store/open.ts";
export type {
  BodyInfo,
  BodyLedgerPort,
  IndexedBody,
  IndexedSession,
  IndexPort,
  RecordsBatch,
  RecordsResult,
  ServiceStore,
  SessionCommit,
  SessionCommitResult,
  SessionDetail,
  SessionFinish,
  SessionStart,
  SessionState,
  TenantAggregate,
  TenantDelta,
  TenantLearning,
} from "./store/ports.ts";
export { badCursor } from "./store/ports.ts";
export type { LastTurn, LoggedTurn, SessionReportData, TurnTotals } from "./store/report.ts";
export type {
  OwnExtractions,
  RetainedStoreOptions,
  SweepResult,
  SweptState,
} from "./store/retained.ts";
export { DEFAULT_SWEEP_MS, RetainedStore } from "./store/retained.ts";
export type { LengthsAddition } from "./store/session-lengths.ts";
export {
  ENDED_PER_ADD,
  endedBuckets,
  FORGOTTEN_WEIGHT,
  LENGTHS_WINDOW,
  lengthBucket,
  lengthsAddition,
  lengthsOf,
  SESSION_END_MS,
} from "./store/session-lengths.ts";
export type {
  Dialect,
  DurableStorage,
  SqlPort,
  SqlTx,
  SqlValue,
  SyncSqlite,
} from "./store/sql.ts";
export { durableSql, POSTGRES, SQLITE, SqlTables, syncSqliteSql } from "./store/sql.ts";
export type { SqlExtractionOptions } from "./store/sql-extractions.ts";
export { extractionSchema, SqlExtractionCache } from "./store/sql-extractions.ts";
export { indexSchema, SqlIndex } from "./store/sql-index.ts";
export type { BodyBucket, SqlLedgerOptions } from "./store/sql-ledger.ts";
export { ledgerSchema, SqlLedger } from "./store/sql-ledger.ts";
export type { AlarmState, SqlSessionOptions } from "./store/sql-session.ts";
export { alarmDue, SqlSessionState, sessionSchema } from "./store/sql-session.ts";
export type { SqlStoreOptions } from "./store/sql-store.ts";
export { SqlStore } from "./store/sql-store.ts";
export { SqlTenantLearning, tenantSchema } from "./store/sql-tenant.ts";
export { TENANT_CACHE_TTL_MS, TenantCache, tenantCacheOf } from "./store/tenant-cache.ts";
export type { TurnKey, UsageOutcome } from "./store/usage.ts";
