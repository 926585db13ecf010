// The in-memory twin and the core run unchanged inside workerd.
import { MemoryStore } from "../../src/store/memory.ts";
import { runStoreContract } from "../contract/store.contract.ts";

runStoreContract("MemoryStore (workerd)", () => new MemoryStore());
