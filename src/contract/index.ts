/**
 * `edge-offload/contract`: the contract suites every built-in store passes, for a store of one's own.
 * Each `run…Contract(name, make)` declares vitest cases (vitest must be installed; call it at a test file's
 * top level); `make` answers a fresh port or store per case. The builders make the records, bodies and log
 * lines the suites use, for tests of one's own. docs/stores.md shows a store checked with them.
 *
 * @example
 * import { runStoreContract } from "edge-offload/contract";
 * runStoreContract("MyStore", () => new MyStore());
 */
export type { StoredExtractionHooks } from "./extraction-cache.contract.ts";
export { runExtractionCacheContract } from "./extraction-cache.contract.ts";
export { runIndexContract } from "./index.contract.ts";
export { runLedgerContract } from "./ledger.contract.ts";
export {
  bodyMeta,
  clocked,
  clockHooks,
  commitTurn,
  freshRef,
  putBody,
  record,
  startOf,
  turnLog,
} from "./records.ts";
export type { SessionStateHooks } from "./session-state.contract.ts";
export { runSessionStateContract } from "./session-state.contract.ts";
export type { StoreContractOptions } from "./store.contract.ts";
export { runStoreContract } from "./store.contract.ts";
export { runTenantLearningContract } from "./tenant-learning.contract.ts";
