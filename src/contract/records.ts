// Sessions, records, body metadata and turn log lines for the storage tests: every field set, any overridden;
// and a turn's writes and reads as one call, for a test that needs a body stored or a session read.
import type { OffloadStore, Turn } from "../core/ports.ts";
import type { BodyMeta, ResultRecord, SessionRef, TurnLog } from "../core/types.ts";

let sessions = 0;

/** A session nobody used yet (suites share real bindings across runs, so ids are unique per run too). */
export function freshRef(prefix: string, tenant = "t1"): SessionRef {
  sessions++;
  return { tenant, session: `${prefix}-${Date.now().toString(36)}-${sessions}` };
}

/** A body's metadata as the ledger and the index keep it. */
export function bodyMeta(memId: string, overrides: Partial<BodyMeta> = {}): BodyMeta {
  return {
    mem_id: memId,
    tool_use_id: "toolu_1",
    tool_name: "bash",
    chars: 5,
    tokens: 2,
    kind: "text",
    outline: "text: 1 line",
    turn: 1,
    ...overrides,
  };
}

/** An offloaded result's sticky record. */
export function record(id: string, overrides: Partial<ResultRecord> = {}): ResultRecord {
  return {
    tool_use_id: id,
    tool_name: "bash",
    tier: "large",
    action: "offloaded",
    mem_id: `trm_${"a".repeat(24)}`,
    chars: 70_000,
    tokens: 20_000,
    kind: "text",
    raw_chars: 70_002,
    fingerprint: "f".repeat(64),
    rendered: "[stub]",
    rendered_tokens: 3,
    turn: 2,
    reason: "large: test",
    gate: null,
    ...overrides,
  };
}

/** A turn log line that counted nothing, but for the overrides. */
export function turnLog(turn: number, over: Partial<TurnLog> = {}): TurnLog {
  return {
    turn,
    results: 0,
    kept: 0,
    compacted: 0,
    offloaded: 0,
    new_decisions: 0,
    tokens_before: 0,
    tokens_after: 0,
    saved_usd: 0,
    errors: 0,
    shadow: false,
    gate_fired: 0,
    gate_declined: 0,
    ...over,
  };
}

/** A turn's start for these ids (and tool names), as a turn begun now would see it. */
export function startOf(
  store: Pick<OffloadStore, "beginTurn">,
  ref: SessionRef,
  ids: readonly string[] = [],
  names: readonly string[] = [],
): Promise<Turn> {
  return store.beginTurn(ref, { ids, names });
}

/** A body stored as a turn of the session stores it. */
export async function putBody(
  store: Pick<OffloadStore, "beginTurn">,
  ref: SessionRef,
  body: string,
  meta: BodyMeta,
): Promise<void> {
  await (await startOf(store, ref)).putBody(body, meta);
}

/** One turn's commit and finish (its line written, whatever the commit), as a turn begun now. */
export async function commitTurn(
  store: Pick<OffloadStore, "beginTurn">,
  ref: SessionRef,
  commit: Parameters<Turn["commit"]>[0],
): Promise<{ records: ReadonlyMap<string, ResultRecord>; seq: number | null }> {
  const turn = await startOf(
    store,
    ref,
    commit.records.map((r) => r.tool_use_id),
  );
  const { records } = await turn.commit(commit);
  await turn.finish();
  return { records, seq: turn.seq };
}

const clocks = new WeakMap<object, { skew: number }>();

/** A store part made with a clock of its own, which runs with Date.now and `clockHooks` moves on. */
export function clocked<T extends object>(make: (now: () => number) => T): T {
  const clock = { skew: 0 };
  const made = make(() => Date.now() + clock.skew);
  clocks.set(made, clock);
  return made;
}

/** The session-state contract's hooks for a state made by `clocked`: idle time is the clock's. */
export const clockHooks = {
  idle: async (state: object, _ref: SessionRef, ms: number): Promise<void> => {
    const clock = clocks.get(state);
    if (clock === undefined) throw new Error("not a clocked state");
    clock.skew += ms;
  },
};
