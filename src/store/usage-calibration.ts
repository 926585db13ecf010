/**
 * A composed store's usage path: the proxy's turn (its hops, usage and memos, written after the
 * answer when it has no memos), a client's measured usage, and the tenant's calibration each
 * measured turn teaches where the calibration port learns itself.
 */
import { promptOf, type TurnUsage } from "../core/billing.ts";
import { type Calibration, calibrationReady, claimedTokens } from "../core/calibration.ts";
import { resolveModel } from "../core/pricing.ts";
import type { SessionRef, TurnEstimate } from "../core/types.ts";
import type { ProxyTurn } from "../proxy/port.ts";
import type { TurnKey, UsageOutcome } from "../session/usage.ts";
import { type BackendCalls, describeCause } from "./backend-calls.ts";
import type { TurnCommits } from "./turn-commit.ts";

export class UsageCalibration {
  readonly #calls: BackendCalls;
  readonly #commits: TurnCommits;

  constructor(calls: BackendCalls, commits: TurnCommits) {
    this.#calls = calls;
    this.#commits = commits;
  }

  /**
   * Only memos are read by the next request: a turn without any (its hops, its usage) is written
   * after the answer where the caller can keep work alive, so no provider answer waits for it.
   */
  async finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void> {
    const defer = this.#calls.parts.defer;
    if (turn.memos.length > 0 || defer === undefined) return this.#finishProxyTurn(ref, turn);
    defer(() =>
      this.#finishProxyTurn(ref, turn).catch(() => {
        // Logged by the guard; only this turn's note and usage are lost.
      }),
    );
  }

  async #finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void> {
    // A steady turn's line may still be on its way: the hops are noted on it once it is there.
    if (this.#commits.pendingLog !== null) await this.#commits.pendingLog();
    let line = { ...turn, turn_seq: turn.turn_seq ?? this.#commits.lastTurnSeq };
    if (line.turn_seq !== null && turn.usage !== undefined && turn.estimate !== undefined) {
      // Learned first, so the line keeps the removed tokens at the calibration this turn refined.
      const cal = await this.#learn(ref.tenant, turn.usage, turn.estimate);
      if (calibrationReady(cal))
        line = {
          ...line,
          usage: {
            ...turn.usage,
            removed_calibrated: claimedTokens(cal, turn.estimate.removed),
          },
        };
    }
    await this.#calls.guard("saving the proxy's turn", () =>
      this.#calls.parts.sessions.finishProxyTurn(ref, line),
    );
  }

  /** Keeps a turn's measured usage on its line, and learns from it once. */
  async recordUsage(ref: SessionRef, key: TurnKey, usage: TurnUsage): Promise<UsageOutcome | null> {
    const outcome = await this.#calls.guard("saving the turn's usage", () =>
      this.#calls.parts.sessions.recordUsage(ref, key, usage),
    );
    if (outcome?.status === "recorded" && outcome.estimate !== null)
      await this.#learn(ref.tenant, usage, outcome.estimate);
    return outcome;
  }

  /** The tenant's calibration (null without a calibration store, or when it cannot be read). */
  async calibration(ref: SessionRef, model: string): Promise<Calibration | null> {
    const port = this.#calls.parts.calibration;
    if (port === undefined) return null;
    try {
      return await port.get(ref.tenant, model);
    } catch (cause) {
      this.#calls.log(`[edge-offload] reading the calibration failed: ${describeCause(cause)}`);
      return null;
    }
  }

  /** The tenant's calibration per model ({} without a calibration store). */
  async calibrations(tenant: string): Promise<Record<string, Calibration>> {
    const port = this.#calls.parts.calibration;
    if (port === undefined) return {};
    return this.#calls.guard("reading the calibration", () => port.all(tenant));
  }

  /**
   * One measured turn calibrates the tenant's estimates for its model: the client's own call
   * against the request as sent (the hops' calls are requests we built, not estimated). Best
   * effort.
   */
  async #learn(
    tenant: string,
    usage: TurnUsage,
    estimate: TurnEstimate,
  ): Promise<Calibration | null> {
    const port = this.#calls.parts.calibration;
    const model = resolveModel(usage.model ?? estimate.model)?.id;
    // A port without `learn` leaves learning to the session state (the SessionDO holds the
    // tenant's calibration and sends its samples in batches: tenant-copy.ts).
    if (port?.learn === undefined || model === undefined) return null;
    const learn = port.learn.bind(port);
    let out: Calibration | null = null;
    await this.#calls.soft(
      "the calibration write",
      async () => {
        out = await learn(tenant, model, estimate.sent, promptOf(usage.first));
      },
      undefined,
      "stats_error",
    );
    return out;
  }
}
