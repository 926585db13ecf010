/**
 * Images decoded to pixels in JavaScript, for OCR: workerd has no canvas and no createImageBitmap. PNG through
 * fast-png, JPEG through jpeg-js; the result is 8-bit RGBA with transparency flattened onto white (text on a
 * transparent background is often black on "transparent black").
 *
 * Uploads are hostile, so the work is bounded before it is done: the pixel count comes from the header and is
 * checked against the caller's limit, and a PNG's compressed data is inflated once under a cap equal to what
 * its header says it holds (a small file that inflates to gigabytes stops there). Ancillary PNG chunks, some
 * of them compressed (iCCP, zTXt, iTXt), are dropped before decoding: OCR needs none of them.
 */

import { decode as decodePng } from "fast-png";
import { Unzlib } from "fflate";
import jpeg from "jpeg-js";
import { ExtractionFailedError } from "./errors.ts";
import type { ImageFormat } from "./types.ts";

/** 8-bit RGBA pixels, row by row. */
export interface RgbaImage {
  width: number;
  height: number;
  data: Uint8Array;
}

/** Formats decodeImage reads. */
export { DECODED_FORMATS } from "./types.ts";

const be32 = (b: Uint8Array, o: number): number =>
  ((b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!) >>> 0;

const KEPT_PNG_CHUNKS = new Set(["IHDR", "PLTE", "tRNS", "IDAT", "IEND"]);

/** Bytes per row of raw PNG data (with its filter byte) for one pass of `width` pixels. */
function rowBytes(width: number, channels: number, depth: number): number {
  return 1 + Math.ceil((width * channels * depth) / 8);
}

const PNG_CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };

/**
 * The PNG with only the chunks decoding needs, after checking that its image data inflates to no more than
 * the header says (Adam7 interlacing adds a filter byte per row of each pass: allow for it).
 */
function boundedPng(bytes: Uint8Array): Uint8Array {
  const corrupt = (why: string) => new ExtractionFailedError("png", "corrupt", `PNG: ${why}`);
  if (bytes.length < 33) throw corrupt("truncated header");
  const width = be32(bytes, 16);
  const height = be32(bytes, 20);
  const depth = bytes[24]!;
  const channels = PNG_CHANNELS[bytes[25]!];
  if (channels === undefined || ![1, 2, 4, 8, 16].includes(depth) || width === 0 || height === 0)
    throw corrupt("invalid header");
  const expected = height * rowBytes(width, channels, depth) + (bytes[28] === 1 ? 15 * height : 0);
  const kept: Uint8Array[] = [bytes.subarray(0, 8)];
  let inflated = 0;
  let overflow = false;
  const inflater = new Unzlib((chunk) => {
    inflated += chunk.length;
    if (inflated > expected) overflow = true;
  });
  let p = 8;
  let ended = false;
  while (p + 12 <= bytes.length && !ended) {
    const length = be32(bytes, p);
    const end = p + 12 + length;
    if (end > bytes.length) throw corrupt("a chunk runs past the end of the file");
    const type = String.fromCharCode(...bytes.subarray(p + 4, p + 8));
    if (type === "IDAT") {
      try {
        inflater.push(bytes.subarray(p + 8, p + 8 + length), false);
      } catch (cause) {
        throw new ExtractionFailedError("png", "corrupt", "PNG: damaged image data", cause);
      }
      if (overflow)
        throw corrupt(`its image data inflates past the ${expected} bytes its header declares`);
    }
    if (KEPT_PNG_CHUNKS.has(type)) kept.push(bytes.subarray(p, end));
    ended = type === "IEND";
    p = end;
  }
  if (!ended) throw corrupt("no IEND chunk (truncated file)");
  const out = new Uint8Array(kept.reduce((n, k) => n + k.length, 0));
  let o = 0;
  for (const k of kept) {
    out.set(k, o);
    o += k.length;
  }
  return out;
}

/**
 * One sample of a packed row (depth 1, 2 or 4) or a byte/word row (8, 16): scaled to 0–255 for intensities,
 * raw for palette indices.
 */
function sampleReader(
  data: Uint8Array | Uint8ClampedArray | Uint16Array,
  depth: number,
  rowSamples: number,
  scaled: boolean,
): (row: number, index: number) => number {
  if (depth === 16) return (row, i) => data[row * rowSamples + i]! >> 8;
  if (depth === 8) return (row, i) => data[row * rowSamples + i]!;
  const perByte = 8 / depth;
  const stride = Math.ceil(rowSamples / perByte);
  const mask = (1 << depth) - 1;
  const scale = scaled ? 255 / mask : 1;
  return (row, i) => {
    const byte = data[row * stride + Math.floor(i / perByte)]!;
    const shift = 8 - depth * ((i % perByte) + 1);
    return Math.round(((byte >> shift) & mask) * scale);
  };
}

/** Any fast-png result as RGBA over white. */
function pngToRgba(bytes: Uint8Array): RgbaImage {
  const png = decodePng(boundedPng(bytes));
  const { width, height, depth, channels, palette } = png;
  const out = new Uint8Array(width * height * 4);
  const rowSamples = width * channels;
  // Indexed samples are palette indices, not intensities: read them unscaled.
  const read = sampleReader(png.data, depth, rowSamples, palette === undefined);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let r: number;
      let g: number;
      let b: number;
      let a = 255;
      const s = x * channels;
      if (palette !== undefined) {
        const entry = palette[read(y, s)] ?? [0, 0, 0, 255];
        [r, g, b] = [entry[0]!, entry[1]!, entry[2]!];
        a = entry[3] ?? 255;
      } else if (channels <= 2) {
        r = g = b = read(y, s);
        if (channels === 2) a = read(y, s + 1);
      } else {
        [r, g, b] = [read(y, s), read(y, s + 1), read(y, s + 2)];
        if (channels === 4) a = read(y, s + 3);
      }
      const o = (y * width + x) * 4;
      // Flatten onto white paper.
      out[o] = Math.round((r * a + 255 * (255 - a)) / 255);
      out[o + 1] = Math.round((g * a + 255 * (255 - a)) / 255);
      out[o + 2] = Math.round((b * a + 255 * (255 - a)) / 255);
      out[o + 3] = 255;
    }
  }
  return { width, height, data: out };
}

/**
 * Decode an image to RGBA. `maxPixels` bounds the work (checked by the decoders too, not only from a header
 * that may lie). Throws ExtractionFailedError: `corrupt` for damaged data, `too_large` over the limit.
 */
export function decodeImage(bytes: Uint8Array, format: ImageFormat, maxPixels: number): RgbaImage {
  let image: RgbaImage;
  try {
    if (format === "png") image = pngToRgba(bytes);
    else if (format === "jpeg") {
      const decoded = jpeg.decode(bytes, {
        useTArray: true,
        formatAsRGBA: true,
        tolerantDecoding: false,
        maxResolutionInMP: maxPixels / 1e6,
        // RGBA output plus the decoder's component planes, with room to spare.
        maxMemoryUsageInMB: Math.max(16, Math.ceil((maxPixels * 8) / (1024 * 1024))),
      });
      image = { width: decoded.width, height: decoded.height, data: decoded.data };
    } else throw new ExtractionFailedError(format, "corrupt", `${format} images are not decoded`);
  } catch (cause) {
    if (cause instanceof ExtractionFailedError) throw cause;
    const message = cause instanceof Error ? cause.message : String(cause);
    if (/maxResolutionInMP|maxMemoryUsageInMB/.test(message))
      throw new ExtractionFailedError(
        format,
        "too_large",
        `the image has more than the ${maxPixels} pixels OCR reads`,
        cause,
      );
    throw new ExtractionFailedError(
      format,
      "corrupt",
      `the ${format} image could not be decoded`,
      cause,
    );
  }
  if (image.width * image.height > maxPixels)
    throw new ExtractionFailedError(
      format,
      "too_large",
      `the image has ${image.width}×${image.height} pixels, more than the ${maxPixels} OCR reads`,
    );
  return image;
}
