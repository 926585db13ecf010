/**
 * A bound on how long a storage call may take: a backend that hangs (a stuck connection, an
 * overloaded object) must cost a turn a bounded wait and a clear problem, never the client's whole
 * request. The call itself is not cancelled (no backend offers that); its late outcome is ignored.
 */

/** Per backend, milliseconds. */
export interface StoreTimeouts {
  /** The session's authority (a Durable Object call). */
  session: number;
  /** A ledger read or write (R2): bodies of up to tens of megabytes. */
  ledger: number;
  /** The lookup index (KV). */
  index: number;
  /** The tenant's learning statistics. */
  tenants: number;
}

export const DEFAULT_TIMEOUTS: StoreTimeouts = {
  session: 10_000,
  ledger: 30_000,
  index: 5_000,
  tenants: 2_000,
};

export class StorageTimeout extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = "StorageTimeout";
  }
}

export function withTimeout<T>(run: () => Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const late = run();
  return Promise.race([
    late,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StorageTimeout(ms)), ms);
    }),
  ]).finally(() => {
    if (timer !== null) clearTimeout(timer);
    // A call that answers after its timeout must not surface as an unhandled rejection.
    late.catch(() => {});
  });
}
