// The adapters against the real local bindings (R2, KV, the SQLite-backed SessionDO) inside workerd.
import { env } from "cloudflare:test";
import { defaultStore } from "../../src/app.ts";
import { settingsOf } from "../../src/http/context.ts";
import { DurableCalibration } from "../../src/session/durable-calibration.ts";
import { DurableSessionState } from "../../src/session/durable-state.ts";
import { DurableTenantStats } from "../../src/session/durable-tenant-stats.ts";
import { KvIndex } from "../../src/store/kv.ts";
import { R2Ledger } from "../../src/store/r2.ts";
import { R2ExtractionCache } from "../../src/store/r2-extractions.ts";
import { runCalibrationContract } from "../contract/calibration.contract.ts";
import { runExtractionCacheContract } from "../contract/extraction-cache.contract.ts";
import { runIndexContract } from "../contract/index.contract.ts";
import { runLedgerContract } from "../contract/ledger.contract.ts";
import { runSessionStateContract } from "../contract/session-state.contract.ts";
import { runStoreContract } from "../contract/store.contract.ts";
import { runTenantStatsContract } from "../contract/tenant-stats.contract.ts";
import { settleTenantStats } from "./settle.ts";

runSessionStateContract("SessionDO (SQLite)", () => new DurableSessionState(env.SESSIONS));
runTenantStatsContract("TenantDO (SQLite)", () => new DurableTenantStats(env.TENANTS));
runCalibrationContract("TenantDO calibration (SQLite)", () => new DurableCalibration(env.TENANTS));
runLedgerContract("R2Ledger", () => new R2Ledger(env.LEDGER));
runIndexContract("KvIndex", () => new KvIndex(env.INDEX));
runExtractionCacheContract("R2ExtractionCache", () => new R2ExtractionCache(env.LEDGER));
runExtractionCacheContract("ComposedStore (R2 extraction cache)", () =>
  defaultStore(env, settingsOf(env), () => {}),
);
runStoreContract(
  "ComposedStore (SessionDO + R2 + KV)",
  () => defaultStore(env, settingsOf(env), () => {}),
  { settle: settleTenantStats },
);
