/**
 * JPEG read for OCR: baseline, extended and progressive Huffman-coded JPEG (8-bit samples, 1 to 4
 * components, any sampling factors, restart intervals), for image files and a PDF's DCT images alike.
 *
 * Sized by the picture, not by the file: a block is turned into samples as soon as it is final (at once in a
 * sequential scan; after the last scan in a progressive one, whose coefficients are held as 16-bit numbers,
 * the least any decoder can hold), and the samples become RGBA in the target one row of blocks at a time,
 * each row's working memory freed as it is done: as the scan decodes them when one scan holds every
 * component (a baseline file, usually), so such a file never holds its whole picture and can be halved
 * (ocrScale). Otherwise the peak is about 4 bytes a pixel (the target) plus the samples (1 byte a pixel per
 * full-size component), or the coefficients (2 bytes) before any target exists: never the image twice. Block padding is the decoder's business: the pixel limit counts the picture.
 *
 * Every loop is bounded by the declared frame: each scan decodes at most its blocks, at most 64 coefficients
 * each, and the scans together may visit every block at most MAX_VISITS times (a progressive file needs
 * about six), so a small file of thousands of scans is refused rather than read thousands of times over.
 * Arithmetic-coded, lossless, hierarchical and 12-bit JPEGs are not read (`corrupt`, saying so).
 */
import { ExtractionFailedError } from "./errors.ts";
import { halfRaster, type OcrRaster, ocrScale, overPixelsMessage } from "./ocr.ts";
import { HalfRows, type PixelWriter, release } from "./raster.ts";

/** Average visits of a block over all scans (a progressive file's usual scripts make about six). */
const MAX_VISITS = 16;
/** Scans in one file (headers cost time even when their data is empty). */
const MAX_SCANS = 256;

/** Zigzag position → row-major position in the 8×8 block. */
const NATURAL = Uint8Array.from([
  0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20,
  13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52,
  45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
]);

/** IDCT basis: COS[k * 8 + n] = c(n) / 2 · cos((2k + 1) n π / 16). */
const COS = (() => {
  const t = new Float64Array(64);
  for (let k = 0; k < 8; k++)
    for (let n = 0; n < 8; n++)
      t[k * 8 + n] =
        ((n === 0 ? Math.SQRT1_2 : 1) / 2) * Math.cos(((2 * k + 1) * n * Math.PI) / 16);
  return t;
})();

const corrupt = (why: string, cause?: unknown) =>
  new ExtractionFailedError("jpeg", "corrupt", `JPEG: ${why}`, cause);

interface Huffman {
  /** Largest code of each length (−1: none), index 1–16. */
  maxcode: Int32Array;
  /** Index into `values` of the first code of each length, less that code. */
  offset: Int32Array;
  values: Uint8Array;
}

interface Component {
  id: number;
  h: number;
  v: number;
  tq: number;
  /** Blocks of the component's own picture (what a scan of it alone covers). */
  blocksPerLine: number;
  blocksPerColumn: number;
  /** Blocks of whole MCUs (what an interleaved scan covers, and what is stored). */
  paddedLine: number;
  paddedColumn: number;
  /** Progressive: coefficients by block row (paddedLine × 64, zigzag order). */
  coeffs: Bands<Int16Array> | null;
  /** Samples by block row: 8 lines of paddedLine × 8. */
  planes: Bands<Uint8Array> | null;
  pred: number;
  dc: Huffman | undefined;
  ac: Huffman | undefined;
}

interface Frame {
  width: number;
  height: number;
  progressive: boolean;
  components: Component[];
  maxH: number;
  maxV: number;
  mcusPerLine: number;
  mcusPerColumn: number;
}

const be16 = (b: Uint8Array, o: number): number => (b[o]! << 8) | b[o + 1]!;

function buildHuffman(counts: Uint8Array, values: Uint8Array): Huffman {
  const maxcode = new Int32Array(18).fill(-1);
  const offset = new Int32Array(18);
  let code = 0;
  let k = 0;
  for (let len = 1; len <= 16; len++) {
    const n = counts[len - 1]!;
    offset[len] = k - code;
    if (n > 0) {
      code += n;
      k += n;
      maxcode[len] = code - 1;
      if (code > 1 << len) throw corrupt("invalid Huffman table");
    }
    code <<= 1;
  }
  return { maxcode, offset, values };
}

/** The entropy-coded data of a scan, bit by bit; stops at a marker (then reads zeros). */
class BitReader {
  readonly #data: Uint8Array;
  pos: number;
  #acc = 0;
  #bits = 0;
  /** The marker that ended the data (0xd0–0xd7: a restart), or −1. */
  marker = -1;

  constructor(data: Uint8Array, pos: number) {
    this.#data = data;
    this.pos = pos;
  }

  #load(): void {
    let byte = 0;
    while (this.marker === -1 && this.pos < this.#data.length) {
      const b = this.#data[this.pos]!;
      if (b !== 0xff) {
        byte = b;
        this.pos++;
        break;
      }
      const next = this.#data[this.pos + 1] ?? 0xd9;
      if (next === 0) {
        byte = 0xff;
        this.pos += 2;
        break;
      }
      // 0xff 0xff: a fill byte before a marker, skipped.
      if (next === 0xff) this.pos++;
      else this.marker = next;
    }
    this.#acc = ((this.#acc << 8) | byte) & 0xffffff;
    this.#bits += 8;
  }

  bit(): number {
    if (this.#bits === 0) this.#load();
    this.#bits--;
    return (this.#acc >> this.#bits) & 1;
  }

  bits(n: number): number {
    while (this.#bits < n) this.#load();
    this.#bits -= n;
    return (this.#acc >> this.#bits) & ((1 << n) - 1);
  }

  /** The value of an `s`-bit magnitude category (JPEG's EXTEND). */
  receive(s: number): number {
    if (s === 0) return 0;
    const v = this.bits(s);
    return v < 1 << (s - 1) ? v - (1 << s) + 1 : v;
  }

  decode(table: Huffman): number {
    let code = 0;
    for (let len = 1; len <= 16; len++) {
      code = (code << 1) | this.bit();
      if (code <= table.maxcode[len]!) return table.values[table.offset[len]! + code]!;
    }
    throw corrupt("invalid Huffman code");
  }

  /** Start again on a byte boundary after a restart marker. */
  restart(): void {
    this.#acc = 0;
    this.#bits = 0;
    if (this.marker >= 0xd0 && this.marker <= 0xd7) {
      this.pos += 2;
      this.marker = -1;
    } else if (this.marker === -1) {
      // A missing restart marker: look for the next one (damaged files), never past another marker.
      while (this.pos + 1 < this.#data.length) {
        if (this.#data[this.pos] === 0xff) {
          const m = this.#data[this.pos + 1]!;
          if (m >= 0xd0 && m <= 0xd7) {
            this.pos += 2;
            return;
          }
          if (m !== 0) return;
        }
        this.pos++;
      }
    }
  }
}

/** Inverse DCT of a dequantized block (row-major) into 8 lines of `out` from `at`, `stride` apart. */
function idct(block: Float64Array, out: Uint8Array, at: number, stride: number, tmp: Float64Array) {
  // Columns first (over v), skipping columns that are all zero: most blocks are sparse.
  for (let u = 0; u < 8; u++) {
    let any = false;
    for (let v = 0; v < 8 && !any; v++) any = block[v * 8 + u] !== 0;
    for (let y = 0; y < 8; y++) {
      let sum = 0;
      if (any) for (let v = 0; v < 8; v++) sum += COS[y * 8 + v]! * block[v * 8 + u]!;
      tmp[y * 8 + u] = sum;
    }
  }
  for (let y = 0; y < 8; y++) {
    const row = y * 8;
    for (let x = 0; x < 8; x++) {
      let sum = 128;
      for (let u = 0; u < 8; u++) sum += COS[x * 8 + u]! * tmp[row + u]!;
      out[at + y * stride + x] = sum < 0 ? 0 : sum > 255 ? 255 : sum + 0.5;
    }
  }
}

interface Tables {
  quant: (Int32Array | undefined)[];
  dc: (Huffman | undefined)[];
  ac: (Huffman | undefined)[];
  restart: number;
  adobe: number | null;
  jfif: boolean;
}

/** What the header says: the frame (with no memory allocated yet). */
function readFrame(bytes: Uint8Array, at: number, marker: number): Frame {
  const len = be16(bytes, at);
  if (at + len > bytes.length || len < 8) throw corrupt("truncated frame header");
  if (bytes[at + 2] !== 8) throw corrupt(`${bytes[at + 2]}-bit samples are not read`);
  const height = be16(bytes, at + 3);
  const width = be16(bytes, at + 5);
  const n = bytes[at + 7]!;
  if (width === 0 || height === 0)
    throw corrupt("no width or height in the frame header (a DNL marker is not read)");
  if (n < 1 || n > 4 || len < 8 + 3 * n) throw corrupt(`${n} components`);
  const components: Component[] = [];
  let units = 0;
  for (let i = 0; i < n; i++) {
    const o = at + 8 + 3 * i;
    const h = bytes[o + 1]! >> 4;
    const v = bytes[o + 1]! & 15;
    if (h < 1 || h > 4 || v < 1 || v > 4) throw corrupt("invalid sampling factors");
    units += h * v;
    components.push({
      id: bytes[o]!,
      h,
      v,
      tq: bytes[o + 2]! & 3,
      blocksPerLine: 0,
      blocksPerColumn: 0,
      paddedLine: 0,
      paddedColumn: 0,
      coeffs: null,
      planes: null,
      pred: 0,
      dc: undefined,
      ac: undefined,
    });
  }
  if (units > 10) throw corrupt("more than 10 blocks in an MCU");
  const maxH = Math.max(...components.map((c) => c.h));
  const maxV = Math.max(...components.map((c) => c.v));
  const mcusPerLine = Math.ceil(width / (8 * maxH));
  const mcusPerColumn = Math.ceil(height / (8 * maxV));
  for (const c of components) {
    c.blocksPerLine = Math.ceil((width * c.h) / (8 * maxH));
    c.blocksPerColumn = Math.ceil((height * c.v) / (8 * maxV));
    c.paddedLine = mcusPerLine * c.h;
    c.paddedColumn = mcusPerColumn * c.v;
  }
  return {
    width,
    height,
    progressive: marker === 0xc2,
    components,
    maxH,
    maxV,
    mcusPerLine,
    mcusPerColumn,
  };
}

const SOF_NAMES: Record<number, string> = {
  195: "lossless",
  197: "hierarchical",
  198: "hierarchical",
  199: "hierarchical",
  201: "arithmetic-coded",
  202: "arithmetic-coded",
  203: "arithmetic-coded",
  205: "arithmetic-coded",
  206: "arithmetic-coded",
  207: "arithmetic-coded",
};

/** The frame header, found by walking the markers (no table is read, nothing is decoded). */
function frameOf(bytes: Uint8Array): Frame {
  if (bytes[0] !== 0xff || bytes[1] !== 0xd8) throw corrupt("no start-of-image marker");
  let p = 2;
  while (p + 4 <= bytes.length) {
    if (bytes[p] !== 0xff) throw corrupt("a segment does not start with a marker");
    const marker = bytes[p + 1]!;
    if (marker === 0xff || marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker === 1) {
      p += marker === 0xff ? 1 : 2;
      continue;
    }
    if (marker === 0xc0 || marker === 0xc1 || marker === 0xc2)
      return readFrame(bytes, p + 2, marker);
    if (SOF_NAMES[marker] !== undefined) throw corrupt(`${SOF_NAMES[marker]} JPEGs are not read`);
    if (marker === 0xd9 || marker === 0xda) break;
    p += 2 + be16(bytes, p + 2);
  }
  throw corrupt("no frame header");
}

interface Scan {
  components: Component[];
  ss: number;
  se: number;
  ah: number;
  al: number;
}

/** Bytes of one allocation of rows: smaller ones, once freed, stay resident in the allocator's lists. */
const BAND_BYTES = 256 * 1024;

/**
 * Rows of blocks (coefficients or samples) allocated a band of rows at a time and freed a band at a
 * time, so what is done with is given back while the rest is still at work.
 */
class Bands<T extends Int16Array | Uint8Array> {
  readonly #rows: number;
  readonly #length: number;
  readonly #perBand: number;
  readonly #make: (n: number) => T;
  readonly #bands: (T | null)[];

  constructor(rows: number, rowLength: number, make: (n: number) => T, bytesPer: number) {
    this.#rows = rows;
    this.#length = rowLength;
    this.#perBand = Math.max(1, Math.ceil(BAND_BYTES / (rowLength * bytesPer)));
    this.#make = make;
    this.#bands = Array.from({ length: Math.ceil(rows / this.#perBand) }, () => null);
  }

  /** Row `r`, allocated (zeros) with its band when absent. */
  row(r: number): T {
    const b = Math.floor(r / this.#perBand);
    let band = this.#bands[b];
    if (band === null || band === undefined) {
      const rows = Math.min(this.#perBand, this.#rows - b * this.#perBand);
      band = this.#make(rows * this.#length);
      this.#bands[b] = band;
    }
    const at = (r - b * this.#perBand) * this.#length;
    return band.subarray(at, at + this.#length) as T;
  }

  /** Row `r` when its band exists. */
  existing(r: number): T | null {
    return this.#bands[Math.floor(r / this.#perBand)] === null ? null : this.row(r);
  }

  /** Row `r` is done with: its band is freed when it was the band's last. */
  done(r: number): void {
    if ((r + 1) % this.#perBand !== 0 && r !== this.#rows - 1) return;
    const b = Math.floor(r / this.#perBand);
    const band = this.#bands[b];
    if (band) release(band);
    this.#bands[b] = null;
  }
}

/** Decodes the scans of one file into the components' planes (or coefficients, when progressive). */
class Decoder {
  readonly #bytes: Uint8Array;
  readonly frame: Frame;
  readonly tables: Tables = { quant: [], dc: [], ac: [], restart: 0, adobe: null, jfif: false };
  readonly #block = new Float64Array(64);
  readonly #tmp = new Float64Array(64);
  readonly #zz = new Int32Array(64);
  #visits = 0;
  #scans = 0;
  #eobrun = 0;
  /**
   * Asked at each sequential scan: where its rows go as they are complete (`ready` rows of the picture
   * decoded), null to keep them until the end, or "skip" to leave the scan undecoded.
   */
  onScan: (scan: Scan) => ((ready: number) => void) | null | "skip" = () => null;

  constructor(bytes: Uint8Array, frame: Frame) {
    this.#bytes = bytes;
    this.frame = frame;
  }

  /** Every segment up to the end of the image (or of the data). */
  run(): void {
    const b = this.#bytes;
    let p = 2;
    let framed = false;
    while (p + 4 <= b.length) {
      if (b[p] !== 0xff) {
        // Garbage between segments: skip to the next marker.
        p++;
        continue;
      }
      const marker = b[p + 1]!;
      if (marker === 0xd9) break;
      if (marker === 0xff || marker === 0 || (marker >= 0xd0 && marker <= 0xd8) || marker === 1) {
        p += marker === 0xff ? 1 : 2;
        continue;
      }
      const len = be16(b, p + 2);
      const body = p + 4;
      const end = p + 2 + len;
      if (len < 2 || end > b.length) throw corrupt("a segment runs past the end of the file");
      if (marker === 0xdb) this.#quant(body, end);
      else if (marker === 0xc4) this.#huffman(body, end);
      else if (marker === 0xdd) this.tables.restart = be16(b, body);
      else if (marker === 0xe0 && String.fromCharCode(...b.subarray(body, body + 4)) === "JFIF")
        this.tables.jfif = true;
      else if (marker === 0xee && String.fromCharCode(...b.subarray(body, body + 5)) === "Adobe")
        this.tables.adobe = b[body + 11] ?? 0;
      else if (marker === 0xc0 || marker === 0xc1 || marker === 0xc2) {
        if (framed) throw corrupt("more than one frame");
        framed = true;
        this.#allocate();
      } else if (marker === 0xda) {
        if (!framed) throw corrupt("a scan before the frame header");
        p = this.#scan(body, end);
        continue;
      }
      p = end;
    }
    if (!framed) throw corrupt("no frame header");
  }

  #allocate(): void {
    for (const c of this.frame.components) {
      const length = c.paddedLine * 64;
      c.planes = new Bands(c.paddedColumn, length, (n) => new Uint8Array(n), 1);
      if (this.frame.progressive)
        c.coeffs = new Bands(c.paddedColumn, length, (n) => new Int16Array(n), 2);
    }
  }

  #quant(at: number, end: number): void {
    const b = this.#bytes;
    while (at < end) {
      const pq = b[at]! >> 4;
      const tq = b[at]! & 15;
      const size = pq === 0 ? 64 : 128;
      if (tq > 3 || at + 1 + size > end) throw corrupt("invalid quantization table");
      const t = new Int32Array(64);
      for (let i = 0; i < 64; i++) t[i] = pq === 0 ? b[at + 1 + i]! : be16(b, at + 1 + 2 * i);
      this.tables.quant[tq] = t;
      at += 1 + size;
    }
  }

  #huffman(at: number, end: number): void {
    const b = this.#bytes;
    while (at + 17 <= end) {
      const tc = b[at]! >> 4;
      const th = b[at]! & 15;
      const counts = b.subarray(at + 1, at + 17);
      const total = counts.reduce((s, n) => s + n, 0);
      if (tc > 1 || th > 3 || total > 256 || at + 17 + total > end)
        throw corrupt("invalid Huffman table");
      const table = buildHuffman(counts, b.slice(at + 17, at + 17 + total));
      (tc === 0 ? this.tables.dc : this.tables.ac)[th] = table;
      at += 17 + total;
    }
  }

  /** One scan: its header at `at`, then its data; returns where the data ends. */
  #scan(at: number, end: number): number {
    const b = this.#bytes;
    const f = this.frame;
    if (++this.#scans > MAX_SCANS) throw corrupt(`more than ${MAX_SCANS} scans`);
    const n = b[at]!;
    if (n < 1 || n > 4 || at + 1 + 2 * n + 3 > end) throw corrupt("invalid scan header");
    const components: Component[] = [];
    for (let i = 0; i < n; i++) {
      const id = b[at + 1 + 2 * i]!;
      const c = f.components.find((x) => x.id === id);
      if (c === undefined) throw corrupt("a scan names an unknown component");
      const t = b[at + 2 + 2 * i]!;
      c.dc = this.tables.dc[t >> 4];
      c.ac = this.tables.ac[t & 15];
      components.push(c);
    }
    const o = at + 1 + 2 * n;
    const scan: Scan = {
      components,
      ss: b[o]!,
      se: b[o + 1]!,
      ah: b[o + 2]! >> 4,
      al: b[o + 2]! & 15,
    };
    if (scan.ss > 63 || scan.se > 63 || scan.ss > scan.se || scan.al > 13)
      throw corrupt("invalid spectral selection");
    if (f.progressive && scan.ss > 0 && n !== 1)
      throw corrupt("an AC scan of more than one component");
    if (f.progressive && scan.ss === 0 && scan.se !== 0)
      throw corrupt("a DC scan with AC coefficients");
    const blocks =
      n === 1
        ? components[0]!.blocksPerLine * components[0]!.blocksPerColumn
        : f.mcusPerLine * f.mcusPerColumn * components.reduce((s, c) => s + c.h * c.v, 0);
    this.#visits += blocks;
    const total = f.components.reduce((s, c) => s + c.paddedLine * c.paddedColumn, 0);
    if (this.#visits > MAX_VISITS * total)
      throw new ExtractionFailedError(
        "jpeg",
        "too_large",
        `JPEG: its scans decode every block more than ${MAX_VISITS} times over`,
      );
    const emit = f.progressive ? null : this.onScan(scan);
    let p = end;
    if (emit !== "skip") {
      const reader = new BitReader(b, end);
      this.#decodeScan(scan, reader, emit);
      p = reader.pos;
    }
    // The data ends at the first marker that is not a restart.
    while (
      p + 1 < b.length &&
      !(b[p] === 0xff && b[p + 1] !== 0 && (b[p + 1]! < 0xd0 || b[p + 1]! > 0xd7))
    )
      p++;
    return p;
  }

  #decodeScan(scan: Scan, r: BitReader, emit: ((ready: number) => void) | null): void {
    const f = this.frame;
    for (const c of scan.components) {
      c.pred = 0;
      const needsDc = !f.progressive || (scan.ss === 0 && scan.ah === 0);
      const needsAc = !f.progressive || scan.ss > 0;
      if ((needsDc && c.dc === undefined) || (needsAc && c.ac === undefined))
        throw corrupt("a scan uses a Huffman table that was never defined");
      if (this.tables.quant[c.tq] === undefined) throw corrupt("missing quantization table");
    }
    this.#eobrun = 0;
    const restart = this.tables.restart;
    // Before each MCU but the first, a restart when one is due: byte boundary, predictors and runs reset.
    const begin = (mcu: number) => {
      if (restart === 0 || mcu === 0 || mcu % restart !== 0) return;
      r.restart();
      for (const x of scan.components) x.pred = 0;
      this.#eobrun = 0;
    };
    if (scan.components.length === 1) {
      const c = scan.components[0]!;
      let mcu = 0;
      for (let row = 0; row < c.blocksPerColumn; row++) {
        for (let col = 0; col < c.blocksPerLine; col++) {
          begin(mcu++);
          this.#block1(c, row, col, scan, r);
        }
        emit?.(Math.floor(((row + 1) * 8 * f.maxV) / c.v));
      }
      return;
    }
    let mcu = 0;
    for (let my = 0; my < f.mcusPerColumn; my++) {
      for (let mx = 0; mx < f.mcusPerLine; mx++) {
        begin(mcu++);
        for (const c of scan.components)
          for (let v = 0; v < c.v; v++)
            for (let h = 0; h < c.h; h++) this.#block1(c, my * c.v + v, mx * c.h + h, scan, r);
      }
      emit?.((my + 1) * 8 * f.maxV);
    }
  }

  #block1(c: Component, row: number, col: number, scan: Scan, r: BitReader): void {
    if (!this.frame.progressive) {
      const zz = this.#zz;
      zz.fill(0);
      const t = r.decode(c.dc!);
      c.pred += r.receive(t);
      zz[0] = c.pred;
      for (let k = 1; k < 64; k++) {
        const rs = r.decode(c.ac!);
        const s = rs & 15;
        const run = rs >> 4;
        if (s === 0) {
          if (run < 15) break;
          k += 15;
          continue;
        }
        k += run;
        if (k > 63) break;
        zz[k] = r.receive(s);
      }
      this.#output(c, row, col, zz);
      return;
    }
    const rowCoeffs = c.coeffs!.row(row);
    const base = col * 64;
    if (scan.ss === 0) {
      if (scan.ah === 0) {
        const t = r.decode(c.dc!);
        c.pred += r.receive(t);
        rowCoeffs[base] = c.pred * (1 << scan.al);
      } else if (r.bit()) rowCoeffs[base] = rowCoeffs[base]! | (1 << scan.al);
      return;
    }
    if (scan.ah === 0) this.#acFirst(c, rowCoeffs, base, scan, r);
    else this.#acRefine(c, rowCoeffs, base, scan, r);
  }

  #acFirst(c: Component, z: Int16Array, base: number, scan: Scan, r: BitReader): void {
    if (this.#eobrun > 0) {
      this.#eobrun--;
      return;
    }
    for (let k = scan.ss; k <= scan.se; k++) {
      const rs = r.decode(c.ac!);
      const s = rs & 15;
      const run = rs >> 4;
      if (s === 0) {
        if (run < 15) {
          this.#eobrun = (1 << run) - 1 + (run > 0 ? r.bits(run) : 0);
          return;
        }
        k += 15;
        continue;
      }
      k += run;
      if (k > 63) return;
      z[base + k] = r.receive(s) * (1 << scan.al);
    }
  }

  /** A refinement scan of AC coefficients (libjpeg's decode_mcu_AC_refine). */
  #acRefine(c: Component, z: Int16Array, base: number, scan: Scan, r: BitReader): void {
    const p1 = 1 << scan.al;
    const m1 = -1 * p1;
    let k = scan.ss;
    const correct = (i: number) => {
      if (r.bit() && (z[i]! & p1) === 0) z[i] = z[i]! + (z[i]! >= 0 ? p1 : m1);
    };
    if (this.#eobrun === 0) {
      for (; k <= scan.se; k++) {
        const rs = r.decode(c.ac!);
        let s = rs & 15;
        let run = rs >> 4;
        if (s !== 0) s = r.bit() ? p1 : m1;
        else if (run !== 15) {
          this.#eobrun = (1 << run) + (run > 0 ? r.bits(run) : 0);
          break;
        }
        while (k <= scan.se) {
          if (z[base + k] !== 0) correct(base + k);
          else if (--run < 0) break;
          k++;
        }
        if (s !== 0 && k <= scan.se) z[base + k] = s;
      }
    }
    if (this.#eobrun > 0) {
      for (; k <= scan.se; k++) if (z[base + k] !== 0) correct(base + k);
      this.#eobrun--;
    }
  }

  /** A block's final coefficients (zigzag order) into the component's samples. */
  #output(c: Component, row: number, col: number, zz: Int32Array | Int16Array, at = 0): void {
    const q = this.tables.quant[c.tq]!;
    const plane = c.planes!.row(row);
    const stride = c.paddedLine * 8;
    let ac = false;
    for (let k = 1; k < 64 && !ac; k++) ac = zz[at + k] !== 0;
    if (!ac) {
      // Only the average: a flat block (most of a scanned page's paper), one value for all 64 samples.
      const v = (zz[at]! * q[0]!) / 8 + 128;
      const flat = v < 0 ? 0 : v > 255 ? 255 : v + 0.5;
      for (let y = 0; y < 8; y++) plane.fill(flat, col * 8 + y * stride, col * 8 + y * stride + 8);
      return;
    }
    const block = this.#block;
    block.fill(0);
    for (let k = 0; k < 64; k++) {
      const v = zz[at + k]!;
      if (v !== 0) block[NATURAL[k]!] = v * q[k]!;
    }
    idct(block, plane, col * 8, stride, this.#tmp);
  }

  /** Progressive: every block's samples from its coefficients, each band of coefficients freed once done. */
  finishCoefficients(): void {
    for (const c of this.frame.components) {
      if (c.coeffs === null) continue;
      if (this.tables.quant[c.tq] === undefined) throw corrupt("missing quantization table");
      for (let row = 0; row < c.paddedColumn; row++) {
        const z = c.coeffs.existing(row);
        if (z !== null)
          for (let col = 0; col < c.paddedLine; col++) this.#output(c, row, col, z, col * 64);
        c.coeffs.done(row);
      }
      c.coeffs = null;
    }
  }
}

/** How the file's components are to be read (JFIF, Adobe's marker, or what a PDF says). */
export type JpegColour = "grey" | "rgb" | "ycbcr" | "cmyk" | "ycck";

function colourOf(d: Decoder, transform: 0 | 1 | undefined): JpegColour {
  const cs = d.frame.components;
  if (cs.length === 1 || cs.length === 2) return "grey";
  const adobe = d.tables.adobe;
  if (cs.length === 4) {
    if (transform !== undefined) return transform === 1 ? "ycck" : "cmyk";
    return adobe === 2 ? "ycck" : "cmyk";
  }
  if (transform !== undefined) return transform === 1 ? "ycbcr" : "rgb";
  if (adobe !== null) return adobe === 0 ? "rgb" : "ycbcr";
  // Components named R, G, B are stored untransformed (libjpeg's rule).
  if (cs[0]!.id === 0x52 && cs[1]!.id === 0x47 && cs[2]!.id === 0x42) return "rgb";
  return "ycbcr";
}

const clamp = (v: number) => (v < 0 ? 0 : Math.min(v, 255));

/**
 * A file's own pixels as RGBA. CMYK is read as Adobe stores it, inverted (255: no ink), as jpeg-js and most
 * readers do: a 4-component JPEG nearly always comes from Photoshop.
 */
function filePixel(colour: JpegColour): PixelWriter {
  if (colour === "grey")
    return (s, i, out, o) => {
      out[o] = out[o + 1] = out[o + 2] = s[i]!;
      out[o + 3] = 255;
    };
  if (colour === "cmyk" || colour === "ycck")
    return (s, i, out, o) => {
      const k = s[i + 3]!;
      out[o] = (s[i]! * k) / 255;
      out[o + 1] = (s[i + 1]! * k) / 255;
      out[o + 2] = (s[i + 2]! * k) / 255;
      out[o + 3] = 255;
    };
  return (s, i, out, o) => {
    out[o] = s[i]!;
    out[o + 1] = s[i + 1]!;
    out[o + 2] = s[i + 2]!;
    out[o + 3] = 255;
  };
}

export interface JpegOptions {
  /** A PDF's ColorTransform: 1 for YCbCr (YCCK), 0 for components as stored; default: the markers say. */
  colorTransform?: 0 | 1 | undefined;
  /**
   * How a pixel's components (1, 3 or 4, after any YCbCr or YCCK transform, 0–255) become RGBA: a PDF's
   * colour space and decode array. Default: grey, RGB, or CMYK as JPEG files store it.
   */
  pixel?: ((components: number) => PixelWriter | undefined) | undefined;
}

/**
 * The JPEG's header, checked: its picture (not its padded blocks) against `maxPixels` (`too_large`; over it
 * but within it at half resolution, a sequential JPEG's raster is the half, averaged 2×2 as its rows of
 * blocks are decoded), its frame (`corrupt`). The pixels are decoded by `paint`.
 */
export function jpegRaster(
  bytes: Uint8Array,
  maxPixels: number,
  options: JpegOptions = {},
): OcrRaster {
  const frame = frameOf(bytes);
  const { width, height } = frame;
  const scale = ocrScale(width, height, maxPixels);
  const tooLarge = (why?: string) =>
    new ExtractionFailedError(
      "jpeg",
      "too_large",
      overPixelsMessage("the image", width, height, maxPixels, why),
    );
  if (scale === null) throw tooLarge();
  if (scale === 1)
    return { width, height, paint: (target) => paint(bytes, frame, options, target, null) };
  // A progressive file's coefficients are all held before any row is final: 2 bytes a pixel and
  // component of the whole picture, over the budget at twice the ceiling.
  if (frame.progressive) throw tooLarge("a progressive JPEG is not read at half resolution");
  return halfRaster(width, height, (target) =>
    paint(bytes, frame, options, target, () =>
      tooLarge("a JPEG whose components are in separate scans is not read at half resolution"),
    ),
  );
}

/**
 * Decodes and paints: a sequential scan of every component is painted row of MCUs by row of MCUs as it is
 * decoded (its samples freed behind it, so a baseline file never holds its whole picture); otherwise the
 * rows are painted after the last scan. `half`, when the picture is halved (rows must then be streamed),
 * is the error for a file whose rows cannot be.
 */
function paint(
  bytes: Uint8Array,
  frame: Frame,
  options: JpegOptions,
  target: () => Uint8Array,
  half: (() => Error) | null,
): void {
  const d = new Decoder(bytes, frame);
  let emit: ((ready: number) => void) | undefined;
  const emitter = () => {
    emit ??= rowEmitter(d, frame, options, target(), half !== null);
    return emit;
  };
  d.onScan = (scan) => {
    // The picture is complete after its first full scan: a later one would only allocate it again.
    if (emit !== undefined) return "skip";
    if (scan.components.length === frame.components.length) return emitter();
    if (half !== null) throw half();
    return null;
  };
  d.run();
  d.finishCoefficients();
  emitter()(frame.height);
}

/** Paints the picture's rows up to `ready` from the decoded samples, freeing each row of MCUs once done. */
function rowEmitter(
  d: Decoder,
  frame: Frame,
  options: JpegOptions,
  target: Uint8Array,
  half: boolean,
): (ready: number) => void {
  const colour = colourOf(d, options.colorTransform);
  const count = colour === "grey" ? 1 : colour === "cmyk" || colour === "ycck" ? 4 : 3;
  const pixel = options.pixel?.(count) ?? filePixel(colour);
  const { width, height, maxH, maxV } = frame;
  // Halved, each row is painted into a row of its own and averaged into the target.
  const out = half ? new Uint8Array(width * 4) : target;
  const halver = half ? new HalfRows(target, width, height) : null;
  const cs = frame.components.slice(0, count === 1 ? 1 : frame.components.length);
  const xs = cs.map((c) =>
    Int32Array.from({ length: width }, (_, x) => Math.floor((x * c.h) / maxH)),
  );
  const s = new Uint16Array(4);
  const lines = 8 * maxV;
  // A block no scan reached reads as mid-grey, as in other readers.
  const mids = cs.map((c) => new Uint8Array(c.paddedLine * 64).fill(128));
  const rows: Uint8Array[] = [...mids];
  const starts = new Int32Array(cs.length);
  const convert = colour === "ycbcr" || colour === "ycck";
  // Pictures read as files, the usual case, without a call a pixel: grey, and YCbCr or RGB.
  const fileGrey = cs.length === 1 && options.pixel === undefined;
  const fileColour = cs.length === 3 && options.pixel === undefined;
  const [x0, x1, x2] = [xs[0]!, xs[1] ?? xs[0]!, xs[2] ?? xs[0]!];
  const clamped = new Uint8ClampedArray(out.buffer, out.byteOffset, out.byteLength);
  let next = 0;
  return (ready) => {
    for (const end = Math.min(ready, height); next < end; next++) {
      const y = next;
      for (let i = 0; i < cs.length; i++) {
        const c = cs[i]!;
        const cy = Math.floor((y * c.v) / maxV);
        rows[i] = c.planes?.existing(cy >> 3) ?? mids[i]!;
        starts[i] = (cy & 7) * c.paddedLine * 8;
      }
      let o = half ? 0 : y * width * 4;
      if (fileGrey) {
        const p0 = rows[0]!;
        const s0 = starts[0]!;
        for (let x = 0; x < width; x++, o += 4) {
          out[o] = out[o + 1] = out[o + 2] = p0[s0 + x0[x]!]!;
          out[o + 3] = 255;
        }
      } else if (fileColour) {
        const [p0, p1, p2] = [rows[0]!, rows[1]!, rows[2]!];
        const [s0, s1, s2] = [starts[0]!, starts[1]!, starts[2]!];
        for (let x = 0; x < width; x++, o += 4) {
          const a = p0[s0 + x0[x]!]!;
          const b = p1[s1 + x1[x]!]!;
          const c = p2[s2 + x2[x]!]!;
          if (convert) {
            // The clamped view rounds and clamps as it stores (a double stored in a Uint8Array is slow).
            clamped[o] = a + 1.402 * (c - 128);
            clamped[o + 1] = a - 0.344136 * (b - 128) - 0.714136 * (c - 128);
            clamped[o + 2] = a + 1.772 * (b - 128);
          } else {
            out[o] = a;
            out[o + 1] = b;
            out[o + 2] = c;
          }
          out[o + 3] = 255;
        }
      } else
        for (let x = 0; x < width; x++, o += 4) {
          for (let i = 0; i < cs.length; i++) s[i] = rows[i]![starts[i]! + xs[i]![x]!]!;
          if (convert) {
            const yy = s[0]!;
            const cb = s[1]! - 128;
            const cr = s[2]! - 128;
            const r = clamp(yy + 1.402 * cr + 0.5);
            const g = clamp(yy - 0.344136 * cb - 0.714136 * cr + 0.5);
            const b = clamp(yy + 1.772 * cb + 0.5);
            // YCCK holds inverted CMY in its YCbCr: as stored, C = 255 − R (libjpeg's conversion).
            s[0] = colour === "ycck" ? 255 - r : r;
            s[1] = colour === "ycck" ? 255 - g : g;
            s[2] = colour === "ycck" ? 255 - b : b;
          }
          pixel(s, 0, out, o);
        }
      // A row of MCUs is done: its samples are no longer needed.
      if ((y + 1) % lines === 0 || y === height - 1) {
        const mcuRow = Math.floor(y / lines);
        for (const c of frame.components)
          for (let r = mcuRow * c.v; r < (mcuRow + 1) * c.v && r < c.paddedColumn; r++)
            c.planes?.done(r);
      }
      halver?.add(out, y);
    }
  };
}
