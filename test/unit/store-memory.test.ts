import { MemoryStore } from "../../src/store/memory.ts";
import { runStoreContract } from "../contract/store.contract.ts";

runStoreContract("MemoryStore", () => new MemoryStore());
