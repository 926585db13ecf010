/**
 * The SessionStatePort over the SessionDO namespace: one object per tenant+session, reached by RPC.
 */

import type { OffloadConfigPatch } from "../config.ts";
import type { TurnUsage } from "../core/billing.ts";
import type { TurnCommit } from "../core/ports.ts";
import type { SessionRef } from "../core/types.ts";
import type { ProxyState, ProxyTurn } from "../proxy/port.ts";
import type {
  SessionCommitResult,
  SessionDetail,
  SessionLoad,
  SessionReportData,
  SessionStatePort,
} from "../store/ports.ts";
import type {
  BeginAsk,
  RecordsBatch,
  RecordsResult,
  SessionBegin,
  TurnProtocol,
} from "../store/turn-protocol.ts";
import type { SessionDO } from "./session-do.ts";
import { sessionObjectName } from "./state.ts";
import type { TurnKey, UsageOutcome } from "./usage.ts";

export class DurableSessionState implements SessionStatePort, TurnProtocol {
  readonly #ns: DurableObjectNamespace<SessionDO>;

  constructor(ns: DurableObjectNamespace<SessionDO>) {
    this.#ns = ns;
  }

  /**
   * The tenant is part of the name: another tenant's session with the same id is another object.
   */
  stub(ref: SessionRef): DurableObjectStub<SessionDO> {
    return this.#ns.get(this.#ns.idFromName(sessionObjectName(ref)));
  }

  async load(
    ref: SessionRef,
    toolUseIds: readonly string[],
    toolNames: readonly string[] = [],
  ): Promise<SessionLoad> {
    return (await this.stub(ref).load(ref, toolUseIds, toolNames)) as SessionLoad;
  }

  async commit(ref: SessionRef, commit: TurnCommit): Promise<SessionCommitResult> {
    return (await this.stub(ref).commit(ref, commit)) as SessionCommitResult;
  }

  async noteRecall(ref: SessionRef, memId: string): Promise<string | null> {
    return (await this.stub(ref).noteRecall(ref, memId)) as string | null;
  }

  async describe(ref: SessionRef): Promise<SessionDetail | null> {
    return (await this.stub(ref).describe(ref)) as SessionDetail | null;
  }

  async report(
    ref: SessionRef,
    options: { turns?: boolean } = {},
  ): Promise<SessionReportData | null> {
    return (await this.stub(ref).report(ref, options)) as SessionReportData | null;
  }

  async getConfig(ref: SessionRef): Promise<OffloadConfigPatch> {
    return (await this.stub(ref).getConfig(ref)) as OffloadConfigPatch;
  }

  async setConfig(ref: SessionRef, patch: OffloadConfigPatch): Promise<void> {
    await this.stub(ref).setConfig(ref, patch);
  }

  async proxyState(ref: SessionRef): Promise<ProxyState> {
    return (await this.stub(ref).proxyState(ref)) as ProxyState;
  }

  async finishProxyTurn(ref: SessionRef, turn: ProxyTurn): Promise<void> {
    await this.stub(ref).finishProxyTurn(ref, turn);
  }

  async recordUsage(ref: SessionRef, key: TurnKey, usage: TurnUsage): Promise<UsageOutcome | null> {
    return (await this.stub(ref).recordUsage(ref, key, usage)) as UsageOutcome | null;
  }

  async destroy(ref: SessionRef): Promise<string[]> {
    return (await this.stub(ref).destroy(ref)) as string[];
  }

  async begin(ref: SessionRef, ask: BeginAsk): Promise<SessionBegin> {
    return (await this.stub(ref).begin(ref, ask)) as SessionBegin;
  }

  async addRecords(ref: SessionRef, batch: RecordsBatch): Promise<RecordsResult> {
    return (await this.stub(ref).addRecords(ref, batch)) as RecordsResult;
  }

  async purged(ref: SessionRef): Promise<void> {
    await this.stub(ref).purged(ref);
  }
}
