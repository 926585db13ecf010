/**
 * The library's default store: the in-memory twins of every backend (session state, ledger, index,
 * tenant statistics, extraction cache) composed by the same class, under the same rules, as the
 * Worker's store. It is also what the contract suites are checked against first. Values are cloned
 * on the way in and out, as a serializing store would.
 */
import { MemoryCalibration } from "../session/memory-calibration.ts";
import { MemorySessionState } from "../session/memory-state.ts";
import { MemoryTenantStats } from "../session/memory-tenant-stats.ts";
import { ComposedStore } from "./composed.ts";
import { MemoryExtractionCache } from "./memory-extractions.ts";
import { MemoryIndex } from "./memory-index.ts";
import { MemoryLedger } from "./memory-ledger.ts";

export interface MemoryStoreOptions {
  /** The clock of the session state (turn gaps, activity) and of the index (ms). */
  now?: () => number;
  /**
   * Where backend failures are reported (default: console.error); the twins do not fail on their
   * own.
   */
  log?: (line: string) => void;
}

/**
 * Everything in memory, for one process: tests, scripts, a Node service that keeps sessions for its
 * own lifetime. Calls running at once share it through `forCall()`, each with its own notes.
 *
 * @example
 * const store = new MemoryStore();
 * const config = { tool_result_compaction_enabled: true, tool_result_offload_enabled: true };
 * const out = await compact({ request, session: "chat-42", store, config });
 */
export class MemoryStore extends ComposedStore {
  constructor(options: MemoryStoreOptions = {}) {
    const now = options.now ?? Date.now;
    super({
      sessions: new MemorySessionState({ now }),
      ledger: new MemoryLedger(),
      index: new MemoryIndex(),
      tenants: new MemoryTenantStats(),
      calibration: new MemoryCalibration(),
      extractions: new MemoryExtractionCache(),
      now,
      ...(options.log === undefined ? {} : { log: options.log }),
    });
  }
}
