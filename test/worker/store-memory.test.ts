// The in-memory twin and the core run unchanged inside workerd.

import { runStoreContract } from "../../src/contract/store.contract.ts";
import { MemoryStore } from "../../src/store/memory.ts";

runStoreContract("MemoryStore (workerd)", () => new MemoryStore());
