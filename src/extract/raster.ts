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

/** Paints rows of samples into an RGBA target of `width` pixels a row. */
export class RowPainter {
  readonly #target: Uint8Array;
  readonly #width: number;
  readonly #channels: number;
  readonly #depth: number;
  readonly #pixel: PixelWriter;
  readonly #samples: Uint16Array;

  constructor(
    target: Uint8Array,
    width: number,
    channels: number,
    depth: number,
    pixel: PixelWriter,
  ) {
    this.#target = target;
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
    let o = (y * this.#width + x0) * 4;
    for (let i = 0; i < count; i++, o += 4 * dx) this.#pixel(s, i * c, out, o);
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
