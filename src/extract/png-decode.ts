/**
 * PNG read for OCR, streamed: the header is checked against the pixel limit before anything is inflated,
 * then the image data is inflated under a running cap equal to what the header declares (its rows, with a
 * filter byte each, per Adam7 pass when interlaced), and every row is unfiltered and painted into the target
 * as soon as it is whole. So the work is the declared image's, whatever the file does: a chunk inflating to
 * gigabytes stops at the cap, and the memory is the target plus two rows and the inflater's window, for 8-
 * and 16-bit samples alike. Ancillary chunks are skipped (OCR needs none of them; some are compressed).
 */
import { ExtractionFailedError } from "./errors.ts";
import { InflateError, inflateInto } from "./inflate.ts";
import { halfRaster, type OcrRaster, ocrScale, overPixelsMessage } from "./ocr.ts";
import { overWhite, type PixelWriter, RowPainter, rowBytes, unfilter } from "./raster.ts";

const be32 = (b: Uint8Array, o: number): number =>
  ((b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!) >>> 0;

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** Samples per pixel, and the bit depths allowed, by colour type. */
const COLOR_TYPES: Record<number, { channels: number; depths: readonly number[] }> = {
  0: { channels: 1, depths: [1, 2, 4, 8, 16] },
  2: { channels: 3, depths: [8, 16] },
  3: { channels: 1, depths: [1, 2, 4, 8] },
  4: { channels: 2, depths: [8, 16] },
  6: { channels: 4, depths: [8, 16] },
};

/** Adam7's passes: first column and row, then their steps. */
const ADAM7 = [
  [0, 0, 8, 8],
  [4, 0, 8, 8],
  [0, 4, 4, 8],
  [2, 0, 4, 4],
  [0, 2, 2, 4],
  [1, 0, 2, 2],
  [0, 1, 1, 2],
] as const;

interface Header {
  width: number;
  height: number;
  depth: number;
  colorType: number;
  channels: number;
  interlaced: boolean;
}

interface Pass {
  x0: number;
  y0: number;
  dx: number;
  dy: number;
  width: number;
  rows: number;
}

const corrupt = (why: string, cause?: unknown) =>
  new ExtractionFailedError("png", "corrupt", `PNG: ${why}`, cause);

function header(bytes: Uint8Array): Header {
  if (bytes.length < 33 || SIGNATURE.some((b, i) => bytes[i] !== b))
    throw corrupt("truncated header");
  if (String.fromCharCode(...bytes.subarray(12, 16)) !== "IHDR" || be32(bytes, 8) < 13)
    throw corrupt("the first chunk is not IHDR");
  const width = be32(bytes, 16);
  const height = be32(bytes, 20);
  const depth = bytes[24]!;
  const colorType = bytes[25]!;
  const type = COLOR_TYPES[colorType];
  if (
    type === undefined ||
    !type.depths.includes(depth) ||
    width === 0 ||
    height === 0 ||
    width > 0x7fffffff ||
    height > 0x7fffffff ||
    bytes[26] !== 0 ||
    bytes[27] !== 0 ||
    bytes[28]! > 1
  )
    throw corrupt(`invalid header (colour type ${colorType}, ${depth}-bit)`);
  return { width, height, depth, colorType, channels: type.channels, interlaced: bytes[28] === 1 };
}

function passes(h: Header): Pass[] {
  const layout = h.interlaced ? ADAM7 : ([[0, 0, 1, 1]] as const);
  return layout
    .map(([x0, y0, dx, dy]) => ({
      x0,
      y0,
      dx,
      dy,
      width: Math.ceil((h.width - x0) / dx),
      rows: Math.ceil((h.height - y0) / dy),
    }))
    .filter((p) => p.width > 0 && p.rows > 0);
}

/** Palette and transparency, as the pixel writer needs them. */
interface Colours {
  palette: Uint8Array | null;
  /** Alpha of each palette entry (255 past the list). */
  alpha: Uint8Array;
  /** The fully transparent grey or RGB value, as samples. */
  key: number[] | null;
}

function pixelWriter(h: Header, c: Colours): PixelWriter {
  const max = (1 << h.depth) - 1;
  const scale = (v: number) => (h.depth === 16 ? v >> 8 : h.depth === 8 ? v : (v * 255) / max);
  const key = c.key;
  switch (h.colorType) {
    case 0:
      return (s, i, out, o) => {
        const g = key !== null && s[i] === key[0] ? 255 : scale(s[i]!);
        out[o] = out[o + 1] = out[o + 2] = g;
        out[o + 3] = 255;
      };
    case 2:
      return (s, i, out, o) => {
        const clear = key !== null && s[i] === key[0] && s[i + 1] === key[1] && s[i + 2] === key[2];
        out[o] = clear ? 255 : scale(s[i]!);
        out[o + 1] = clear ? 255 : scale(s[i + 1]!);
        out[o + 2] = clear ? 255 : scale(s[i + 2]!);
        out[o + 3] = 255;
      };
    case 3: {
      const palette = c.palette!;
      const entries = palette.length / 3;
      return (s, i, out, o) => {
        const n = s[i]!;
        // An index past the palette is drawn black (libpng refuses the file; a reader need not).
        const a = n < entries ? c.alpha[n]! : 255;
        out[o] = n < entries ? overWhite(palette[3 * n]!, a) : 0;
        out[o + 1] = n < entries ? overWhite(palette[3 * n + 1]!, a) : 0;
        out[o + 2] = n < entries ? overWhite(palette[3 * n + 2]!, a) : 0;
        out[o + 3] = 255;
      };
    }
    case 4:
      return (s, i, out, o) => {
        out[o] = out[o + 1] = out[o + 2] = overWhite(scale(s[i]!), scale(s[i + 1]!));
        out[o + 3] = 255;
      };
    default:
      return (s, i, out, o) => {
        const a = scale(s[i + 3]!);
        out[o] = overWhite(scale(s[i]!), a);
        out[o + 1] = overWhite(scale(s[i + 1]!), a);
        out[o + 2] = overWhite(scale(s[i + 2]!), a);
        out[o + 3] = 255;
      };
  }
}

/** The rows of every pass, fed in inflated chunks of any size; each row painted once it is whole. */
class RowReader {
  readonly #passes: Pass[];
  readonly #painter: RowPainter;
  readonly #bpp: number;
  readonly #depth: number;
  readonly #channels: number;
  #pass = 0;
  #row = 0;
  #cur: Uint8Array;
  #prev: Uint8Array;
  #fill = 0;

  constructor(h: Header, ps: Pass[], painter: RowPainter) {
    this.#passes = ps;
    this.#painter = painter;
    this.#bpp = Math.max(1, (h.channels * h.depth) / 8);
    this.#depth = h.depth;
    this.#channels = h.channels;
    const widest = 1 + rowBytes(Math.max(...ps.map((q) => q.width)), h.channels, h.depth);
    this.#cur = new Uint8Array(widest);
    this.#prev = new Uint8Array(widest);
  }

  get done(): boolean {
    return this.#pass >= this.#passes.length;
  }

  push(chunk: Uint8Array): void {
    let at = 0;
    while (at < chunk.length && !this.done) {
      const p = this.#passes[this.#pass]!;
      const need = 1 + rowBytes(p.width, this.#channels, this.#depth);
      const take = Math.min(need - this.#fill, chunk.length - at);
      this.#cur.set(chunk.subarray(at, at + take), this.#fill);
      this.#fill += take;
      at += take;
      if (this.#fill < need) return;
      const row = this.#cur.subarray(1, need);
      if (!unfilter(this.#cur[0]!, row, this.#prev.subarray(1, need), this.#bpp))
        throw corrupt(`unknown row filter ${this.#cur[0]}`);
      this.#painter.row(row, p.y0 + this.#row * p.dy, p.width, p.x0, p.dx);
      [this.#cur, this.#prev] = [this.#prev, this.#cur];
      this.#fill = 0;
      if (++this.#row === p.rows) {
        this.#pass++;
        this.#row = 0;
        this.#prev.fill(0); // each pass starts as if above its first row were zeros
      }
    }
  }
}

/** Bytes the image data inflates to, as the header declares it. */
function declaredBytes(h: Header, ps: Pass[]): number {
  return ps.reduce((n, p) => n + p.rows * (1 + rowBytes(p.width, h.channels, h.depth)), 0);
}

/**
 * The PNG's header, checked: its size against `maxPixels` (`too_large`; over it but within it at half
 * resolution, the raster is the half, averaged 2×2 as rows are inflated), its fields (`corrupt`). The
 * pixels are decoded by `paint`.
 */
export function pngRaster(bytes: Uint8Array, maxPixels: number): OcrRaster {
  const h = header(bytes);
  const scale = ocrScale(h.width, h.height, maxPixels);
  const tooLarge = (why?: string) =>
    new ExtractionFailedError(
      "png",
      "too_large",
      overPixelsMessage("the image", h.width, h.height, maxPixels, why),
    );
  if (scale === null) throw tooLarge();
  if (scale === 1)
    return { width: h.width, height: h.height, paint: (target) => paint(bytes, h, target, false) };
  // Adam7's passes give rows out of order: halving them would need the whole picture first.
  if (h.interlaced) throw tooLarge("an interlaced PNG is not read at half resolution");
  return halfRaster(h.width, h.height, (target) => paint(bytes, h, target, true));
}

function paint(bytes: Uint8Array, h: Header, target: () => Uint8Array, half: boolean): void {
  const colours: Colours = { palette: null, alpha: new Uint8Array(256).fill(255), key: null };
  const idat: Uint8Array[] = [];
  let p = 8;
  let ended = false;
  while (p + 12 <= bytes.length && !ended) {
    const length = be32(bytes, p);
    const end = p + 12 + length;
    if (length > 0x7fffffff || end > bytes.length)
      throw corrupt("a chunk runs past the end of the file");
    const type = String.fromCharCode(...bytes.subarray(p + 4, p + 8));
    const data = bytes.subarray(p + 8, p + 8 + length);
    if (type === "PLTE" && idat.length === 0) {
      if (length % 3 !== 0 || length === 0 || length > 768) throw corrupt("invalid palette");
      colours.palette = data;
    } else if (type === "tRNS" && idat.length === 0) {
      if (h.colorType === 3) colours.alpha.set(data.subarray(0, 256));
      else if (h.colorType === 0 && length >= 2) colours.key = [(data[0]! << 8) | data[1]!];
      else if (h.colorType === 2 && length >= 6)
        colours.key = [0, 2, 4].map((i) => (data[i]! << 8) | data[i + 1]!);
    } else if (type === "IDAT") idat.push(data);
    ended = type === "IEND";
    p = end;
  }
  if (idat.length === 0) throw corrupt("no image data");
  if (h.colorType === 3 && colours.palette === null) throw corrupt("no palette");
  // A key is compared with samples as read: an 8-bit image's key is its low byte.
  if (colours.key !== null && h.depth < 16)
    colours.key = colours.key.map((k) => k & ((1 << h.depth) - 1));
  const ps = passes(h);
  const cap = declaredBytes(h, ps);
  const painter = new RowPainter(
    target(),
    h.width,
    h.channels,
    h.depth,
    pixelWriter(h, colours),
    half ? { height: h.height } : undefined,
  );
  const rows = new RowReader(h, ps, painter);
  try {
    // The compressed parts are read where they are: a chunked stream is never put back together.
    inflateInto(idat, cap, (chunk) => rows.push(chunk));
  } catch (cause) {
    if (!(cause instanceof InflateError)) throw cause;
    throw cause.kind === "over"
      ? corrupt(`its image data inflates past the ${cap} bytes its header declares`)
      : corrupt(cause.message, cause);
  }
  if (!rows.done)
    throw corrupt(ended ? "the image data ends early" : "no IEND chunk (truncated file)");
}
