/**
 * Rows of decoded samples written into the OCR engine's RGBA buffer: what the PNG reader and a PDF page's
 * raster images share (PNG's row filters, which PDF's Flate predictors reuse; samples of 1 to 16 bits
 * unpacked; colour, transparency and PDF's decode arrays mapped to 8-bit RGBA over white paper). Nothing
 * here holds more than a row: the image itself is only ever in the target buffer.
 */

import type { OcrPixels, OcrRaster } from "./ocr.ts";

/** Writes the pixel whose samples start at `s[i]` as RGBA at `out[o..o+3]`. */
export type PixelWriter = (s: Uint16Array, i: number, out: Uint8Array, o: number) => void;

/** Bytes of one row of `width` pixels of `channels` samples of `depth` bits. */
export function rowBytes(width: number, channels: number, depth: number): number {
  return Math.ceil((width * channels * depth) / 8);
}

/**
 * Undo PNG's filter `type` on `row` in place; `prev` is the row above, already unfiltered (zeros for the
 * first), `bpp` the bytes of a pixel (at least 1). False for an unknown filter type.
 */
export function unfilter(type: number, row: Uint8Array, prev: Uint8Array, bpp: number): boolean {
  const n = row.length;
  switch (type) {
    case 0:
      return true;
    case 1:
      for (let i = bpp; i < n; i++) row[i] = (row[i]! + row[i - bpp]!) & 255;
      return true;
    case 2:
      for (let i = 0; i < n; i++) row[i] = (row[i]! + prev[i]!) & 255;
      return true;
    case 3:
      for (let i = 0; i < bpp && i < n; i++) row[i] = (row[i]! + (prev[i]! >> 1)) & 255;
      for (let i = bpp; i < n; i++) row[i] = (row[i]! + ((row[i - bpp]! + prev[i]!) >> 1)) & 255;
      return true;
    case 4:
      for (let i = 0; i < bpp && i < n; i++) row[i] = (row[i]! + prev[i]!) & 255;
      for (let i = bpp; i < n; i++) {
        const a = row[i - bpp]!;
        const b = prev[i]!;
        const c = prev[i - bpp]!;
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        row[i] = (row[i]! + (pa <= pb && pa <= pc ? a : pb <= pc ? b : c)) & 255;
      }
      return true;
    default:
      return false;
  }
}

/** The first `count` samples of a packed row, one value each (0 … 2^depth − 1). */
export function unpack(row: Uint8Array, count: number, depth: number, out: Uint16Array): void {
  if (depth === 8) {
    for (let i = 0; i < count; i++) out[i] = row[i]!;
    return;
  }
  if (depth === 16) {
    for (let i = 0; i < count; i++) out[i] = (row[2 * i]! << 8) | row[2 * i + 1]!;
    return;
  }
  const perByte = 8 / depth;
  const mask = (1 << depth) - 1;
  for (let i = 0; i < count; i++) {
    const byte = row[Math.floor(i / perByte)]!;
    out[i] = (byte >> (8 - depth * ((i % perByte) + 1))) & mask;
  }
}

/** A colour `c` (0–255) at opacity `a` (0–255) over white paper. */
export const overWhite = (c: number, a: number): number => (c * a + 255 * (255 - a) + 127) / 255;

/**
 * A picture halved while it is decoded: its RGBA rows, given in order, are averaged 2×2 into a target of
 * ⌈width/2⌉×⌈height/2⌉ pixels, one target row per two rows given (an odd last row or column averages the
 * pixels it has). It holds one row of sums, so the picture at full resolution never exists. Colour only:
 * the rows are opaque (transparency is flattened onto white before), so alpha is 255.
 */
export class HalfRows {
  readonly #target: Uint8Array;
  readonly #width: number;
  readonly #height: number;
  readonly #sums: Uint32Array;
  #next = 0;

  constructor(target: Uint8Array, width: number, height: number) {
    this.#target = target;
    this.#width = width;
    this.#height = height;
    this.#sums = new Uint32Array(Math.ceil(width / 2) * 3);
  }

  /** Row `y` of the picture (4 bytes a pixel from `at`); rows come in order, each once. */
  add(rgba: Uint8Array, y: number, at = 0): void {
    if (y !== this.#next) throw new Error(`row ${y} out of order (expected ${this.#next})`);
    this.#next++;
    const sums = this.#sums;
    const w = this.#width;
    for (let x = 0, s = 0, p = at; x < w; x += 2, s += 3, p += 8) {
      const pair = x + 1 < w;
      sums[s] = sums[s]! + rgba[p]! + (pair ? rgba[p + 4]! : 0);
      sums[s + 1] = sums[s + 1]! + rgba[p + 1]! + (pair ? rgba[p + 5]! : 0);
      sums[s + 2] = sums[s + 2]! + rgba[p + 2]! + (pair ? rgba[p + 6]! : 0);
    }
    if (y % 2 === 1) this.#flush(y >> 1, 2);
    else if (y === this.#height - 1) this.#flush(y >> 1, 1);
  }

  /** Rows from `y` on never came (damaged data): white paper, as a decoder at full size leaves them. */
  white(y: number): void {
    if (y >= this.#height) return;
    const half = Math.ceil(this.#width / 2);
    if (y % 2 === 1) {
      // The pending row's pair is white.
      for (let x = 0; x < half; x++) {
        const n = 2 * x + 1 < this.#width ? 2 : 1;
        for (let c = 0; c < 3; c++) this.#sums[3 * x + c] = this.#sums[3 * x + c]! + 255 * n;
      }
      this.#flush(y >> 1, 2);
    }
    this.#next = this.#height;
    this.#target.fill(255, Math.ceil(y / 2) * half * 4, Math.ceil(this.#height / 2) * half * 4);
  }

  #flush(row: number, rows: number): void {
    const sums = this.#sums;
    const out = this.#target;
    const half = Math.ceil(this.#width / 2);
    for (let x = 0, s = 0, o = row * half * 4; x < half; x++, s += 3, o += 4) {
      const n = rows * (2 * x + 1 < this.#width ? 2 : 1);
      out[o] = Math.floor((sums[s]! + (n >> 1)) / n);
      out[o + 1] = Math.floor((sums[s + 1]! + (n >> 1)) / n);
      out[o + 2] = Math.floor((sums[s + 2]! + (n >> 1)) / n);
      out[o + 3] = 255;
    }
    sums.fill(0);
  }
}

/**
 * Paints rows of samples into an RGBA target of `width` pixels a row, or, with `half`, into a row of its
 * own that HalfRows averages into a target of half the size (rows then come in order, whole: no Adam7).
 */
export class RowPainter {
  readonly #target: Uint8Array;
  readonly #width: number;
  readonly #channels: number;
  readonly #depth: number;
  readonly #pixel: PixelWriter;
  readonly #samples: Uint16Array;
  readonly #half: HalfRows | null;

  constructor(
    target: Uint8Array,
    width: number,
    channels: number,
    depth: number,
    pixel: PixelWriter,
    half?: { height: number } | undefined,
  ) {
    this.#half = half === undefined ? null : new HalfRows(target, width, half.height);
    this.#target = half === undefined ? target : new Uint8Array(width * 4);
    this.#width = width;
    this.#channels = channels;
    this.#depth = depth;
    this.#pixel = pixel;
    this.#samples = new Uint16Array(width * channels);
  }

  /** A row of `count` pixels from packed `bytes`, at row `y`, columns x0, x0 + dx, … */
  row(bytes: Uint8Array, y: number, count = this.#width, x0 = 0, dx = 1): void {
    const s = this.#samples;
    const c = this.#channels;
    unpack(bytes, count * c, this.#depth, s);
    const out = this.#target;
    let o = ((this.#half === null ? y * this.#width : 0) + x0) * 4;
    for (let i = 0; i < count; i++, o += 4 * dx) this.#pixel(s, i * c, out, o);
    this.#half?.add(out, y);
  }

  /** Rows `y` to `height` never came: white paper. */
  white(y: number, height: number): void {
    if (this.#half !== null) this.#half.white(y);
    else if (y < height) this.#target.fill(255, y * this.#width * 4, height * this.#width * 4);
  }
}

/**
 * Frees an array's memory now rather than at the next collection (a detached buffer has no bytes), where
 * the runtime can: a decoder holding a large working set lets it go row by row while the image grows in
 * the target, so the two are never both whole.
 */
export function release(view: ArrayBufferView): void {
  const buffer = view.buffer as ArrayBuffer & {
    transfer?: (n: number) => ArrayBuffer;
    detached?: boolean;
  };
  if (typeof buffer.transfer === "function" && buffer.detached !== true) buffer.transfer(0);
}

/** Pixels already decoded (grey, RGB or RGBA: pdf.js's, a caller's) as a raster, copied into the target. */
export function pixelsRaster(pixels: OcrPixels): OcrRaster {
  const { width, height, channels, data } = pixels;
  return {
    width,
    height,
    paint(target) {
      const out = target();
      const n = width * height;
      if (channels === 4) {
        out.set(data.subarray(0, 4 * n));
        return;
      }
      for (let i = 0; i < n; i++) {
        const s = i * channels;
        out[4 * i] = data[s]!;
        out[4 * i + 1] = data[channels === 3 ? s + 1 : s]!;
        out[4 * i + 2] = data[channels === 3 ? s + 2 : s]!;
        out[4 * i + 3] = 255;
      }
    },
  };
}
