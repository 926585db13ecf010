// The adapters against the real local bindings (R2, KV, the SQLite-backed SessionDO and TenantDO) inside
// workerd.
import { env, runInDurableObject } from "cloudflare:test";
import { defaultStore } from "../../src/app.ts";
import { runExtractionCacheContract } from "../../src/contract/extraction-cache.contract.ts";
import { runIndexContract } from "../../src/contract/index.contract.ts";
import { runLedgerContract } from "../../src/contract/ledger.contract.ts";
import { runSessionStateContract } from "../../src/contract/session-state.contract.ts";
import { runStoreContract } from "../../src/contract/store.contract.ts";
import { runTenantLearningContract } from "../../src/contract/tenant-learning.contract.ts";
import { settingsOf } from "../../src/http/context.ts";
import { durableSessionState, durableTenants } from "../../src/store/durable.ts";
import { KvIndex } from "../../src/store/kv.ts";
import { R2Ledger } from "../../src/store/r2.ts";
import { R2ExtractionCache } from "../../src/store/r2-extractions.ts";
import { sessionObjectName } from "../../src/store/state.ts";
import { settleTenantLearning } from "./settle.ts";

runSessionStateContract("SessionDO (SQLite)", () => durableSessionState(env.SESSIONS), {
  // Idle: the session's last activity moved back in its object.
  idle: (_state, ref, ms) =>
    runInDurableObject(
      env.SESSIONS.get(env.SESSIONS.idFromName(sessionObjectName(ref))),
      (_i, o) => {
        o.storage.sql.exec("UPDATE eo_sessions SET last_active = last_active - ?", ms);
      },
    ),
});
runTenantLearningContract("TenantDO (SQLite)", () => durableTenants(env.TENANTS));
runLedgerContract("R2Ledger", () => new R2Ledger(env.LEDGER));
runIndexContract("KvIndex", () => new KvIndex(env.INDEX));
runExtractionCacheContract("R2ExtractionCache", () => new R2ExtractionCache(env.LEDGER));
runExtractionCacheContract("ComposedStore (R2 extraction cache)", () =>
  defaultStore(env, settingsOf(env), () => {}),
);
runStoreContract(
  "ComposedStore (SessionDO + R2 + KV + TenantDO behind the isolate's cache)",
  () => defaultStore(env, settingsOf(env), () => {}),
  { settle: settleTenantLearning },
);
