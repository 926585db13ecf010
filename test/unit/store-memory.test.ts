import { runStoreContract } from "../../src/contract/store.contract.ts";
import { MemoryStore } from "../../src/store/memory.ts";

runStoreContract("MemoryStore", () => new MemoryStore());
