/**
 * Zlib inflation under a running cap, for image data and PDF streams. The compressed bytes are pushed in
 * small slices: deflate expands at most 1,032:1, so one slice inflates to at most about 4 MB, and the output
 * is counted as it comes. The first byte past the cap stops the work there: a small file that declares a
 * 100×100 image but inflates to gigabytes costs one slice, not its whole expansion (fflate inflates all that
 * one push holds before it hands anything back, so pushing a whole chunk at once would not stop it).
 */
import { Unzlib } from "fflate";

/** Compressed bytes per push. */
const SLICE = 4096;

/** Why inflation stopped early: `over` past the cap, `corrupt` not a zlib stream. */
export class InflateError extends Error {
  readonly kind: "over" | "corrupt";
  constructor(kind: "over" | "corrupt", message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.kind = kind;
  }
}

/**
 * A zlib stream inflated as it is pushed, each chunk of output handed to `onData`, never more than `cap`
 * bytes in all: the push that would go past it throws an `over` InflateError after handing on what fits.
 */
export class BoundedInflater {
  readonly #cap: number;
  readonly #onData: (chunk: Uint8Array) => void;
  readonly #unzlib: Unzlib;
  #total = 0;
  #over = false;

  constructor(cap: number, onData: (chunk: Uint8Array) => void) {
    this.#cap = cap;
    this.#onData = onData;
    this.#unzlib = new Unzlib((chunk) => {
      if (this.#over || chunk.length === 0) return;
      const room = this.#cap - this.#total;
      if (chunk.length > room) {
        if (room > 0) this.#onData(chunk.subarray(0, room));
        this.#total = this.#cap;
        this.#over = true;
        return;
      }
      this.#total += chunk.length;
      this.#onData(chunk);
    });
  }

  /** Bytes inflated so far. */
  get total(): number {
    return this.#total;
  }

  /** Inflate more compressed bytes (any length: they are pushed a slice at a time). */
  push(data: Uint8Array): void {
    for (let at = 0; at < data.length; at += SLICE) {
      try {
        this.#unzlib.push(data.subarray(at, Math.min(data.length, at + SLICE)), false);
      } catch (cause) {
        throw new InflateError("corrupt", "the compressed data is damaged", { cause });
      }
      if (this.#over) throw new InflateError("over", `the data inflates past ${this.#cap} bytes`);
    }
  }
}

/** All of a zlib stream, inflated under `cap` (throws an InflateError past it or on damaged data). */
export function inflateCapped(data: Uint8Array, cap: number): Uint8Array {
  const parts: Uint8Array[] = [];
  // fflate hands on a fresh array each time: keeping it is safe.
  const inflater = new BoundedInflater(cap, (chunk) => parts.push(chunk));
  inflater.push(data);
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(inflater.total);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
