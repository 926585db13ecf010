/**
 * Zlib inflation under a running cap, for image data and PDF streams: a small inflater (RFC 1950/1951)
 * that writes through one fixed window and hands each filled part of it to the caller, who copies what it
 * keeps. The output is counted as it is made, and the first byte past the cap stops the work there: a small
 * file that declares a 100×100 image but inflates to gigabytes costs what the image declares, not its whole
 * expansion. Nothing is allocated per chunk, so a large image leaves no garbage behind it either (a
 * collector that runs late would otherwise hold tens of megabytes of spent output).
 *
 * The compressed data may come in parts (a PNG's IDAT chunks): they are read where they are, never
 * concatenated. Building a dynamic block's tables costs a few hundred steps, and each block's header costs
 * at least a few bytes of input, so no input costs more than a small multiple of its size to read.
 */

/** Why inflation stopped early: `over` past the cap, `corrupt` not a zlib stream. */
export class InflateError extends Error {
  readonly kind: "over" | "corrupt";
  constructor(kind: "over" | "corrupt", message: string) {
    super(message);
    this.kind = kind;
  }
}

const corrupt = (why: string) =>
  new InflateError("corrupt", `the compressed data is damaged: ${why}`);

const LENGTH_BASE = Uint16Array.from([
  3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
  163, 195, 227, 258,
]);
const LENGTH_EXTRA = Uint8Array.from([
  0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
]);
const DIST_BASE = Uint16Array.from([
  1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049,
  3073, 4097, 6145, 8193, 12289, 16385, 24577,
]);
const DIST_EXTRA = Uint8Array.from([
  0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13,
]);
const CLEN_ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

/** Codes of up to FAST bits are found by one lookup; longer ones bit by bit. */
const FAST = 9;

/** A canonical Huffman code: counts per length, symbols in code order, and the fast table. */
interface Code {
  counts: Uint16Array;
  symbols: Uint16Array;
  /** By the next FAST bits of the stream: (symbol << 4) | length, or 0 for a longer code. */
  fast: Int32Array;
}

function buildCode(lengths: Uint8Array, n: number): Code {
  const counts = new Uint16Array(16);
  for (let i = 0; i < n; i++) counts[lengths[i]!]!++;
  counts[0] = 0;
  let left = 1;
  for (let len = 1; len <= 15; len++) {
    left = left * 2 - counts[len]!;
    if (left < 0) throw corrupt("an over-subscribed Huffman code");
  }
  const offsets = new Uint16Array(16);
  for (let len = 1; len < 15; len++) offsets[len + 1] = offsets[len]! + counts[len]!;
  const symbols = new Uint16Array(n);
  for (let s = 0; s < n; s++) if (lengths[s] !== 0) symbols[offsets[lengths[s]!]!++] = s;
  // Fast table: each code of up to FAST bits, bit-reversed (the stream gives a code's first bit first).
  const fast = new Int32Array(1 << FAST);
  let code = 0;
  let k = 0;
  for (let len = 1; len <= FAST; len++) {
    for (let i = 0; i < counts[len]!; i++, code++, k++) {
      let rev = 0;
      for (let b = 0; b < len; b++) rev |= ((code >> b) & 1) << (len - 1 - b);
      for (let fill = rev; fill < 1 << FAST; fill += 1 << len)
        fast[fill] = (symbols[k]! << 4) | len;
    }
    code <<= 1;
  }
  return { counts, symbols, fast };
}

const FIXED_LITERALS = (() => {
  const l = new Uint8Array(288);
  l.fill(8, 0, 144).fill(9, 144, 256).fill(7, 256, 280).fill(8, 280, 288);
  return buildCode(l, 288);
})();
const FIXED_DISTANCES = buildCode(new Uint8Array(30).fill(5), 30);

/** Bits of the compressed parts, least significant first. */
class Bits {
  readonly #parts: readonly Uint8Array[];
  #part = 0;
  #pos = 0;
  #acc = 0;
  #n = 0;

  constructor(parts: readonly Uint8Array[]) {
    this.#parts = parts;
  }

  #byte(): number {
    while (this.#part < this.#parts.length) {
      const p = this.#parts[this.#part]!;
      if (this.#pos < p.length) return p[this.#pos++]!;
      this.#part++;
      this.#pos = 0;
    }
    return -1;
  }

  /** At least `k` bits buffered, unless the data ends (then what there is). */
  #fill(k: number): void {
    while (this.#n < k) {
      const b = this.#byte();
      if (b < 0) return;
      this.#acc |= b << this.#n;
      this.#n += 8;
    }
  }

  bits(k: number): number {
    if (k === 0) return 0;
    this.#fill(k);
    if (this.#n < k) throw corrupt("it ends early");
    const v = this.#acc & ((1 << k) - 1);
    this.#acc >>>= k;
    this.#n -= k;
    return v;
  }

  decode(c: Code): number {
    this.#fill(FAST);
    const e = c.fast[this.#acc & ((1 << FAST) - 1)]!;
    if (e !== 0 && (e & 15) <= this.#n) {
      this.#acc >>>= e & 15;
      this.#n -= e & 15;
      return e >> 4;
    }
    // A long code (or the last bits of the data): bit by bit, canonically.
    let code = 0;
    let first = 0;
    let index = 0;
    for (let len = 1; len <= 15; len++) {
      code |= this.bits(1);
      const count = c.counts[len]!;
      if (code - first < count) return c.symbols[index + code - first]!;
      index += count;
      first = (first + count) << 1;
      code <<= 1;
    }
    throw corrupt("an invalid Huffman code");
  }

  /** To the next byte boundary. */
  align(): void {
    const drop = this.#n & 7;
    this.#acc >>>= drop;
    this.#n -= drop;
  }
}

const WINDOW = 32768;

/**
 * Inflate a zlib stream given in `parts`, handing the output to `onData` in pieces (each a view of the
 * inflater's window, valid only during the call: copy what you keep), never more than `cap` bytes in all.
 * Throws an InflateError: `over` after handing on the first `cap` bytes of a stream that has more,
 * `corrupt` for damaged data. Data after the stream's end is ignored.
 */
export function inflateInto(
  parts: readonly Uint8Array[],
  cap: number,
  onData: (chunk: Uint8Array) => void,
): number {
  const bits = new Bits(parts);
  const cmf = bits.bits(8);
  const flg = bits.bits(8);
  if ((cmf & 15) !== 8 || ((cmf << 8) | flg) % 31 !== 0 || (flg & 0x20) !== 0)
    throw corrupt("not a zlib stream");
  const buf = new Uint8Array(3 * WINDOW);
  let wp = 0;
  /** Where the output not yet handed on starts, and how much was handed on. */
  let from = 0;
  let emitted = 0;
  const emit = (to: number) => {
    if (to > from) onData(buf.subarray(from, to));
    emitted += to - from;
    from = to;
  };
  const flush = () => {
    emit(wp);
    // Keep the last window for copies, at the front.
    buf.copyWithin(0, wp - WINDOW, wp);
    wp = WINDOW;
    from = WINDOW;
  };
  const over = () => {
    emit(from + (cap - emitted));
    throw new InflateError("over", `the data inflates past ${cap} bytes`);
  };
  let final = 0;
  const lengths = new Uint8Array(320);
  while (!final) {
    final = bits.bits(1);
    const type = bits.bits(2);
    if (type === 0) {
      bits.align();
      const len = bits.bits(16);
      if ((bits.bits(16) ^ 0xffff) !== len) throw corrupt("a stored block's length");
      for (let i = 0; i < len; i++) {
        if (wp >= 2 * WINDOW) flush();
        if (emitted + wp - from >= cap) over();
        buf[wp++] = bits.bits(8);
      }
      continue;
    }
    let lit: Code;
    let dist: Code;
    if (type === 1) {
      lit = FIXED_LITERALS;
      dist = FIXED_DISTANCES;
    } else if (type === 2) {
      const hlit = bits.bits(5) + 257;
      const hdist = bits.bits(5) + 1;
      const hclen = bits.bits(4) + 4;
      if (hlit > 286 || hdist > 30) throw corrupt("too many codes");
      const clen = new Uint8Array(19);
      for (let i = 0; i < hclen; i++) clen[CLEN_ORDER[i]!] = bits.bits(3);
      const lc = buildCode(clen, 19);
      lengths.fill(0);
      for (let i = 0; i < hlit + hdist; ) {
        const sym = bits.decode(lc);
        if (sym < 16) lengths[i++] = sym;
        else {
          const [rep, value] =
            sym === 16
              ? [3 + bits.bits(2), i > 0 ? lengths[i - 1]! : -1]
              : sym === 17
                ? [3 + bits.bits(3), 0]
                : [11 + bits.bits(7), 0];
          if (value < 0 || i + rep > hlit + hdist) throw corrupt("invalid code lengths");
          lengths.fill(value, i, i + rep);
          i += rep;
        }
      }
      if (lengths[256] === 0) throw corrupt("no end-of-block code");
      lit = buildCode(lengths.subarray(0, hlit), hlit);
      dist = buildCode(lengths.subarray(hlit, hlit + hdist), hdist);
    } else throw corrupt("an invalid block type");
    for (;;) {
      if (wp >= 2 * WINDOW) flush();
      if (emitted + wp - from >= cap) {
        // At the cap: only the block's end (or the stream's) may follow.
        const sym = bits.decode(lit);
        if (sym === 256) break;
        over();
      }
      const sym = bits.decode(lit);
      if (sym < 256) {
        buf[wp++] = sym;
        continue;
      }
      if (sym === 256) break;
      const li = sym - 257;
      if (li >= 29) throw corrupt("an invalid length code");
      let len = LENGTH_BASE[li]! + bits.bits(LENGTH_EXTRA[li]!);
      const di = bits.decode(dist);
      if (di >= 30) throw corrupt("an invalid distance code");
      const d = DIST_BASE[di]! + bits.bits(DIST_EXTRA[di]!);
      // The window keeps the last 32 KB at its front after a flush: any distance up to wp is there.
      if (d > wp) throw corrupt("a distance before the start");
      // A copy past the cap stops at it.
      const room = cap - (emitted + wp - from);
      const copy = Math.min(len, room);
      for (let i = 0; i < copy; i++, wp++) buf[wp] = buf[wp - d]!;
      len -= copy;
      if (len > 0) over();
    }
  }
  emit(wp);
  return emitted;
}

/** All of a zlib stream, inflated under `cap` (throws an InflateError past it or on damaged data). */
export function inflateCapped(data: Uint8Array, cap: number): Uint8Array {
  let out = new Uint8Array(Math.min(cap, Math.max(1024, data.length * 4)));
  let n = 0;
  inflateInto([data], cap, (chunk) => {
    if (n + chunk.length > out.length) {
      const grown = new Uint8Array(Math.min(cap, Math.max(2 * out.length, n + chunk.length)));
      grown.set(out.subarray(0, n));
      out = grown;
    }
    out.set(chunk, n);
    n += chunk.length;
  });
  return out.subarray(0, n);
}
