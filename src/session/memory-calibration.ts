/** The in-memory twin of the TenantDO's calibration table (the same `calibrate` rule). */
import { type Calibration, calibrate } from "../core/calibration.ts";
import type { CalibrationPort } from "../store/ports.ts";

export class MemoryCalibration implements CalibrationPort {
  readonly #tenants = new Map<string, Map<string, Calibration>>();

  async get(tenant: string, model: string): Promise<Calibration | null> {
    const c = this.#tenants.get(tenant)?.get(model);
    return c === undefined ? null : structuredClone(c);
  }

  async all(tenant: string): Promise<Record<string, Calibration>> {
    return structuredClone(Object.fromEntries(this.#tenants.get(tenant) ?? []));
  }

  async learn(
    tenant: string,
    model: string,
    estimate: Record<string, number>,
    measured: number,
  ): Promise<Calibration> {
    let map = this.#tenants.get(tenant);
    if (map === undefined) this.#tenants.set(tenant, (map = new Map()));
    const next = calibrate(map.get(model), estimate, measured);
    map.set(model, next);
    return structuredClone(next);
  }
}
