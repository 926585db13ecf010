/**
 * Image signatures and pixel dimensions from headers alone (no decoding): what a deterministic
 * placeholder for an image needs, and what tells a PNG from a WebP.
 */

/** The image formats recognised from their magic bytes. */
export type ImageFormat = "png" | "jpeg" | "gif" | "webp" | "bmp" | "tiff" | "heic" | "avif";

export interface ImageInfo {
  format: ImageFormat;
  width?: number;
  height?: number;
}

const be16 = (b: Uint8Array, o: number): number => (b[o]! << 8) | b[o + 1]!;
const be32 = (b: Uint8Array, o: number): number =>
  ((b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!) >>> 0;
const le16 = (b: Uint8Array, o: number): number => b[o]! | (b[o + 1]! << 8);
const le24 = (b: Uint8Array, o: number): number => b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16);
const le32 = (b: Uint8Array, o: number): number => (le16(b, o) | (le16(b, o + 2) << 16)) >>> 0;

function startsWith(b: Uint8Array, sig: readonly number[], at = 0): boolean {
  if (b.length < at + sig.length) return false;
  for (let i = 0; i < sig.length; i++) if (b[at + i] !== sig[i]) return false;
  return true;
}
const ascii = (b: Uint8Array, at: number, s: string): boolean =>
  startsWith(
    b,
    [...s].map((c) => c.charCodeAt(0)),
    at,
  );

/** The image format from magic bytes, or null. */
export function imageFormatOf(b: Uint8Array): ImageFormat | null {
  if (startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "png";
  if (startsWith(b, [0xff, 0xd8, 0xff])) return "jpeg";
  if (ascii(b, 0, "GIF87a") || ascii(b, 0, "GIF89a")) return "gif";
  if (ascii(b, 0, "RIFF") && ascii(b, 8, "WEBP")) return "webp";
  if (ascii(b, 0, "BM") && b.length >= 26) return "bmp";
  if (startsWith(b, [0x49, 0x49, 0x2a, 0x00]) || startsWith(b, [0x4d, 0x4d, 0x00, 0x2a]))
    return "tiff";
  if (ascii(b, 4, "ftyp")) {
    const brand = String.fromCharCode(...b.subarray(8, 12));
    if (brand === "avif" || brand === "avis") return "avif";
    if (["heic", "heix", "hevc", "heim", "heis", "mif1", "msf1"].includes(brand)) return "heic";
  }
  return null;
}

function jpegSize(b: Uint8Array): { width: number; height: number } | null {
  let p = 2;
  while (p + 9 < b.length) {
    if (b[p] !== 0xff) return null;
    const marker = b[p + 1]!;
    if (marker === 0xff) {
      p++;
      continue;
    }
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      p += 2;
      continue;
    }
    const len = be16(b, p + 2);
    // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC) carry the frame size.
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: be16(b, p + 5), width: be16(b, p + 7) };
    }
    if (marker === 0xd9 || marker === 0xda) return null;
    p += 2 + len;
  }
  return null;
}

/** Format and, when the header states them, dimensions. Null if the bytes are no known image. */
export function imageInfo(b: Uint8Array): ImageInfo | null {
  const format = imageFormatOf(b);
  if (format === null) return null;
  let size: { width: number; height: number } | null = null;
  if (format === "png" && b.length >= 24 && ascii(b, 12, "IHDR"))
    size = { width: be32(b, 16), height: be32(b, 20) };
  else if (format === "gif" && b.length >= 10) size = { width: le16(b, 6), height: le16(b, 8) };
  else if (format === "jpeg") size = jpegSize(b);
  else if (format === "bmp") size = { width: le32(b, 18), height: Math.abs(le32(b, 22) | 0) };
  else if (format === "webp" && b.length >= 25) {
    if (ascii(b, 12, "VP8X") && b.length >= 30)
      size = { width: le24(b, 24) + 1, height: le24(b, 27) + 1 };
    else if (ascii(b, 12, "VP8L") && b[20] === 0x2f) {
      const bits = le32(b, 21);
      size = { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
    } else if (ascii(b, 12, "VP8 ") && b.length >= 30)
      size = { width: le16(b, 26) & 0x3fff, height: le16(b, 28) & 0x3fff };
  }
  return size === null ? { format } : { format, ...size };
}
