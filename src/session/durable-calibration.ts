/**
 * The CalibrationPort over the TenantDO namespace (one object per tenant; its calibration table).
 * The in-memory twin is memory-calibration.ts.
 */
import type { Calibration } from "../core/calibration.ts";
import type { CalibrationPort } from "../store/ports.ts";
import type { TenantDO } from "./tenant-do.ts";

export class DurableCalibration implements CalibrationPort {
  readonly #ns: DurableObjectNamespace<TenantDO>;

  constructor(ns: DurableObjectNamespace<TenantDO>) {
    this.#ns = ns;
  }

  #stub(tenant: string): DurableObjectStub<TenantDO> {
    return this.#ns.get(this.#ns.idFromName(tenant));
  }

  async get(tenant: string, model: string): Promise<Calibration | null> {
    return (await this.#stub(tenant).calibration(model)) as Calibration | null;
  }

  async all(tenant: string): Promise<Record<string, Calibration>> {
    return (await this.#stub(tenant).calibrations()) as Record<string, Calibration>;
  }

  async learn(
    tenant: string,
    model: string,
    estimate: Record<string, number>,
    measured: number,
  ): Promise<Calibration> {
    return (await this.#stub(tenant).learnCalibration(model, estimate, measured)) as Calibration;
  }
}
