/**
 * A session's calls replayed through `compact` one by one over a `MemoryStore` of its own, as a
 * deployment would have seen them: what was stubbed on an earlier call stays stubbed, with the
 * same bytes, on every later one. The store's clock is the session's timeline where it has one.
 */
import type { OffloadConfig } from "../config.ts";
import { type CompactOutput, compact } from "../core/compact.ts";
import type { AttachmentExtractor } from "../core/ports.ts";
import type { SessionRef } from "../core/types.ts";
import { callTimes, REPLAY_EPOCH_MS } from "../replay/gaps.ts";
import type { ReplaySession } from "../replay/types.ts";
import { MemoryStore } from "../store/memory.ts";
import { callRequest, type RequestSettings } from "./requests.ts";

export interface TurnSettings {
  request: RequestSettings;
  config: OffloadConfig;
  /** Keys mem_ids (the store lives in this process only). */
  secret: string;
  extractor: AttachmentExtractor;
}

/** One session's replay: its own store, its own clock. */
export class SessionReplay {
  readonly store: MemoryStore;
  readonly ref: SessionRef;
  readonly #session: ReplaySession;
  readonly #settings: TurnSettings;
  readonly #times: number[] | null;
  #clock = REPLAY_EPOCH_MS;

  constructor(session: ReplaySession, settings: TurnSettings) {
    this.#session = session;
    this.#settings = settings;
    this.#times = callTimes(session);
    this.store = new MemoryStore({ now: () => this.#clock, log: () => {} });
    this.ref = {
      tenant: "eval",
      session: session.id.replace(/[^A-Za-z0-9._:-]/g, "_").slice(0, 128),
    };
  }

  /** The request of call `j` as the client sent it (JSON text), the clock moved to its time. */
  request(j: number, settings: RequestSettings = this.#settings.request): string {
    const at = this.#times?.[j];
    if (at !== undefined) this.#clock = at;
    return callRequest(this.#session, this.#session.calls[j]!, settings);
  }

  /** Call `j` compacted (and recorded in the store, as the deployment's turn would be). */
  async compactCall(j: number): Promise<CompactOutput<string>> {
    return compact({
      format: this.#settings.request.provider,
      request: this.request(j),
      session: this.ref,
      store: this.store,
      config: this.#settings.config,
      secret: this.#settings.secret,
      extractor: this.#settings.extractor,
    });
  }
}
