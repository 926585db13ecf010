/** A store holding one body under a fixed mem_id, for recall tests. */
import type { BodyMeta } from "../../src/core/types.ts";
import { MemoryStore } from "../../src/store/memory.ts";
import { putBody } from "./records.ts";

export const SESSION = { tenant: "t", session: "s" };
export const MEM = "trm_00000000000000000000abcd";

export async function withBody(body: string): Promise<MemoryStore> {
  const store = new MemoryStore();
  const meta: BodyMeta = {
    mem_id: MEM,
    tool_use_id: "t1",
    tool_name: "x",
    chars: body.length,
    tokens: 1,
    kind: "text",
    outline: "",
    turn: 1,
  };
  await putBody(store, SESSION, body, meta);
  return store;
}
