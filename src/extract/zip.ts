/**
 * A small, defensive ZIP reader for OOXML containers. It lists the central directory (cheap: the probe uses
 * it) and inflates single entries through the runtime's streaming `DecompressionStream("deflate-raw")`, which
 * hands out ~16 KB chunks, so a zip bomb is stopped as soon as it passes a cap instead of after it has
 * filled memory. Guards: entry count, declared size per entry and in total, actual size against declared
 * size, compression ratio.
 */

import { ExtractionFailedError } from "./errors.ts";
import type { DetectedFormat } from "./types.ts";

export interface ZipEntry {
  name: string;
  method: number;
  flags: number;
  compressed_size: number;
  size: number;
  local_offset: number;
}

export interface ZipLimits {
  max_zip_entries: number;
  max_unzipped_entry_bytes: number;
  max_unzipped_bytes: number;
  max_zip_ratio: number;
}

/** Ratios are only judged on entries above this size: tiny XML parts compress arbitrarily well. */
const RATIO_FLOOR_BYTES = 1 << 20;

const u16 = (b: Uint8Array, o: number): number => b[o]! | (b[o + 1]! << 8);
const u32 = (b: Uint8Array, o: number): number =>
  (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
const u64 = (b: Uint8Array, o: number): number => u32(b, o) + u32(b, o + 4) * 2 ** 32;

const latin1 = new TextDecoder("latin1");
const utf8 = new TextDecoder("utf-8");

export class ZipFormatError extends Error {
  override name = "ZipFormatError";
}

function findEndOfCentralDirectory(b: Uint8Array): number {
  const min = Math.max(0, b.length - 22 - 0xffff);
  for (let i = b.length - 22; i >= min; i--) {
    if (b[i] === 0x50 && b[i + 1] === 0x4b && b[i + 2] === 0x05 && b[i + 3] === 0x06) return i;
  }
  return -1;
}

/**
 * The central directory. Throws ZipFormatError when it cannot be read, and too_large (as an
 * ExtractionFailedError for `format`) when it lists more entries than `maxEntries` — unless `partial`, in
 * which case the first `maxEntries` are returned and `complete` is false (the probe only needs names).
 */
export function listZip(
  b: Uint8Array,
  maxEntries: number,
  format: DetectedFormat = "zip",
): ZipEntry[] {
  return zipDirectory(b, maxEntries, format, false).entries;
}

export function zipDirectory(
  b: Uint8Array,
  maxEntries: number,
  format: DetectedFormat,
  partial: boolean,
): { entries: ZipEntry[]; complete: boolean } {
  const eocd = findEndOfCentralDirectory(b);
  if (eocd < 0) throw new ZipFormatError("no end of central directory");
  let count = u16(b, eocd + 10);
  let cdSize = u32(b, eocd + 12);
  let cdOffset = u32(b, eocd + 16);
  if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    // ZIP64: the locator sits just before the classic record and points at the 64-bit one.
    const loc = eocd - 20;
    if (loc < 0 || u32(b, loc) !== 0x07064b50) throw new ZipFormatError("zip64 locator missing");
    const rec = u64(b, loc + 8);
    if (rec + 56 > b.length || u32(b, rec) !== 0x06064b50)
      throw new ZipFormatError("zip64 record missing");
    count = u64(b, rec + 32);
    cdSize = u64(b, rec + 40);
    cdOffset = u64(b, rec + 48);
  }
  const complete = count <= maxEntries;
  if (!complete && partial) count = maxEntries;
  else if (!complete) {
    throw new ExtractionFailedError(
      format,
      "too_large",
      `the archive lists ${count} entries, more than the ${maxEntries} allowed`,
    );
  }
  if (cdOffset + cdSize > b.length) throw new ZipFormatError("central directory outside the file");
  const entries: ZipEntry[] = [];
  let p = cdOffset;
  for (let i = 0; i < count; i++) {
    if (p + 46 > b.length || u32(b, p) !== 0x02014b50)
      throw new ZipFormatError("bad central directory entry");
    const flags = u16(b, p + 8);
    const method = u16(b, p + 10);
    let compressed = u32(b, p + 20);
    let size = u32(b, p + 24);
    const nameLen = u16(b, p + 28);
    const extraLen = u16(b, p + 30);
    const commentLen = u16(b, p + 32);
    let offset = u32(b, p + 42);
    const nameBytes = b.subarray(p + 46, p + 46 + nameLen);
    const name = (flags & 0x800 ? utf8 : latin1).decode(nameBytes);
    // ZIP64 extra field: the 64-bit values appear in order, only for the fields that are saturated.
    let x = p + 46 + nameLen;
    const xEnd = x + extraLen;
    while (x + 4 <= xEnd) {
      const id = u16(b, x);
      const len = u16(b, x + 2);
      if (id === 0x0001) {
        let q = x + 4;
        if (size === 0xffffffff) {
          size = u64(b, q);
          q += 8;
        }
        if (compressed === 0xffffffff) {
          compressed = u64(b, q);
          q += 8;
        }
        if (offset === 0xffffffff) offset = u64(b, q);
      }
      x += 4 + len;
    }
    entries.push({
      name: name.replace(/\\/g, "/"),
      method,
      flags,
      compressed_size: compressed,
      size,
      local_offset: offset,
    });
    p += 46 + nameLen + extraLen + commentLen;
  }
  return { entries, complete };
}

/** Tracks the bytes inflated across one archive, so many modest entries cannot add up to a bomb. */
export class UnzipBudget {
  used = 0;
  readonly limits: ZipLimits;
  readonly format: DetectedFormat;

  constructor(limits: ZipLimits, format: DetectedFormat) {
    this.limits = limits;
    this.format = format;
  }
}

function tooLarge(budget: UnzipBudget, message: string): ExtractionFailedError {
  return new ExtractionFailedError(budget.format, "too_large", message);
}
function corrupt(budget: UnzipBudget, message: string, cause?: unknown): ExtractionFailedError {
  return new ExtractionFailedError(budget.format, "corrupt", message, cause);
}

/** Inflate one entry, enforcing every cap while the bytes stream out. */
export async function readZipEntry(
  b: Uint8Array,
  entry: ZipEntry,
  budget: UnzipBudget,
): Promise<Uint8Array> {
  const { limits } = budget;
  if (entry.flags & 1)
    throw new ExtractionFailedError(
      budget.format,
      "encrypted",
      `archive entry ${entry.name} is encrypted`,
    );
  if (entry.size > limits.max_unzipped_entry_bytes) {
    throw tooLarge(
      budget,
      `archive entry ${entry.name} declares ${entry.size} bytes, more than the ${limits.max_unzipped_entry_bytes} allowed`,
    );
  }
  if (budget.used + entry.size > limits.max_unzipped_bytes) {
    throw tooLarge(
      budget,
      `the archive would inflate to more than the ${limits.max_unzipped_bytes} bytes allowed`,
    );
  }
  if (entry.size > RATIO_FLOOR_BYTES && entry.size > entry.compressed_size * limits.max_zip_ratio) {
    throw tooLarge(
      budget,
      `archive entry ${entry.name} has a compression ratio above ${limits.max_zip_ratio}:1`,
    );
  }
  const h = entry.local_offset;
  if (h + 30 > b.length || u32(b, h) !== 0x04034b50)
    throw corrupt(budget, `archive entry ${entry.name} has no local header`);
  const start = h + 30 + u16(b, h + 26) + u16(b, h + 28);
  const end = start + entry.compressed_size;
  if (end > b.length)
    throw corrupt(budget, `archive entry ${entry.name} runs past the end of the file`);
  const compressed = b.subarray(start, end);
  let out: Uint8Array;
  if (entry.method === 0) {
    if (entry.compressed_size !== entry.size)
      throw corrupt(budget, `stored entry ${entry.name} has mismatched sizes`);
    out = compressed;
  } else if (entry.method === 8) {
    out = await inflateCapped(compressed, entry, budget);
  } else {
    throw corrupt(budget, `archive entry ${entry.name} uses compression method ${entry.method}`);
  }
  budget.used += out.length;
  return out;
}

async function inflateCapped(
  compressed: Uint8Array,
  entry: ZipEntry,
  budget: UnzipBudget,
): Promise<Uint8Array> {
  // The declared size is the hard cap for this entry (already checked against the limits above); producing
  // more than declared is the signature of a lying header, so it is refused at the first byte over.
  const out = new Uint8Array(entry.size);
  let n = 0;
  const stream = new DecompressionStream("deflate-raw");
  const writer = stream.writable.getWriter();
  // Errors surface on the reader; the writer's promises are observed so they are not reported as unhandled.
  writer.write(compressed as Uint8Array<ArrayBuffer>).catch(() => {});
  writer.close().catch(() => {});
  const reader = stream.readable.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (n + value.length > out.length) {
        await reader.cancel().catch(() => {});
        throw corrupt(
          budget,
          `archive entry ${entry.name} inflates past its declared ${entry.size} bytes`,
        );
      }
      out.set(value, n);
      n += value.length;
    }
  } catch (cause) {
    if (cause instanceof ExtractionFailedError) throw cause;
    throw corrupt(budget, `archive entry ${entry.name} does not inflate`, cause);
  }
  if (n !== out.length)
    throw corrupt(
      budget,
      `archive entry ${entry.name} inflates to ${n} bytes, not the declared ${entry.size}`,
    );
  return out;
}
