/**
 * The images a PDF page draws, found without decoding any of them, and the one OCR reads decoded straight
 * into the engine's buffer. The page's content (and that of the forms it draws, each once) is scanned for
 * `Do` and inline images; each image is known by its declared size. The largest is decoded here when its
 * encoding is one of ours — JPEG (DCTDecode, through jpeg-decode.ts) or raw samples behind Flate, LZW,
 * run-length or ASCII filters, with PNG or TIFF predictors — in the common colour spaces (grey, RGB, CMYK,
 * ICC-based, calibrated, indexed, one-ink separations, stencil masks). Other encodings (CCITT fax, JBIG2,
 * JPEG 2000) and colour spaces are left to pdf.js, which decodes every image of the page: pdf-ocr.ts lets
 * it only when all of them fit the page's budget.
 */
import { ExtractionFailedError } from "./errors.ts";
import { InflateError, inflateInto } from "./inflate.ts";
import { jpegRaster } from "./jpeg-decode.ts";
import { halfRaster, type OcrRaster, ocrScale, overPixelsMessage } from "./ocr.ts";
import {
  applyFilter,
  type Dict,
  decodeStream,
  FILTER_NAMES,
  filtersOf,
  indexOf,
  isDict,
  Lexer,
  Name,
  nameOf,
  type PdfDocument,
  Predictor,
  Ref,
  Stream,
  type Value,
} from "./pdf-objects.ts";
import { type PixelWriter, RowPainter, rowBytes } from "./raster.ts";

/** Forms drawn inside forms, at most this deep. */
const MAX_FORM_DEPTH = 12;
/** Images a page may list before the scan stops counting them one by one. */
const MAX_IMAGES = 10_000;

/** An image a page draws, as its dictionary declares it. */
export interface PageImage {
  stream: Stream;
  width: number;
  height: number;
  /** The resources it was drawn with (for a named colour space). */
  resources: Dict | null;
  /** Its encoding when it is an image codec (the last filter): DCTDecode, CCITTFaxDecode, JBIG2Decode, … */
  codec: string | null;
  /** Bytes pdf.js would hold for it decoded (1 bit a pixel for masks and 1-bit images, else RGBA). */
  pdfjsBytes: number;
  /** Drawn inline in the content (BI … EI), not from the resources. */
  inline: boolean;
}

const corrupt = (why: string) => new ExtractionFailedError("pdf", "corrupt", `PDF: ${why}`);

const INLINE_KEYS: Record<string, string> = {
  W: "Width",
  H: "Height",
  BPC: "BitsPerComponent",
  CS: "ColorSpace",
  F: "Filter",
  DP: "DecodeParms",
  IM: "ImageMask",
  D: "Decode",
  I: "Interpolate",
};
const INLINE_SPACES: Record<string, string> = {
  G: "DeviceGray",
  RGB: "DeviceRGB",
  CMYK: "DeviceCMYK",
  I: "Indexed",
};

function describe(
  doc: PdfDocument,
  stream: Stream,
  resources: Dict | null,
  inline = false,
): PageImage | null {
  const d = stream.dict;
  const width = doc.get(d, "Width");
  const height = doc.get(d, "Height");
  if (typeof width !== "number" || typeof height !== "number" || !(width >= 1) || !(height >= 1))
    return null;
  const { names } = filtersOf(doc, d);
  const last = names.at(-1);
  const codec =
    last !== undefined && ["DCTDecode", "CCITTFaxDecode", "JBIG2Decode", "JPXDecode"].includes(last)
      ? last
      : null;
  const bpc = doc.get(d, "BitsPerComponent");
  const oneBit = doc.get(d, "ImageMask") === true || bpc === 1;
  const pixels = Math.floor(width) * Math.floor(height);
  return {
    stream,
    width: Math.floor(width),
    height: Math.floor(height),
    resources,
    codec,
    pdfjsBytes: oneBit ? Math.ceil(width / 8) * height : 4 * pixels,
    inline,
  };
}

/** What a scan of a page found. */
export interface PageScan {
  /** The images the page draws, each once. */
  drawn: PageImage[];
  /** Every image its resources could reach (drawn or not, patterns and Type 3 fonts included): bytes. */
  reachableBytes: number;
}

class Scanner {
  readonly doc: PdfDocument;
  readonly drawn: PageImage[] = [];
  readonly #seen = new Set<Value>();

  constructor(doc: PdfDocument) {
    this.doc = doc;
  }

  content(bytes: Uint8Array, resources: Dict | null, depth: number): void {
    // Operands are not counted against the document's objects: the scan is linear in the content, whose
    // inflated size is what the budget bounds.
    const lx = new Lexer(bytes, 0, { inflate: 0, objects: Number.POSITIVE_INFINITY });
    const b = bytes;
    let operand: Value = null;
    for (;;) {
      lx.skipSpace();
      if (lx.pos >= b.length) return;
      const c = b[lx.pos]!;
      // Operands: names, strings, arrays, dictionaries, numbers.
      if (
        c === 0x2f ||
        c === 0x28 ||
        c === 0x3c ||
        c === 0x5b ||
        c === 0x2b ||
        c === 0x2d ||
        c === 0x2e ||
        (c >= 0x30 && c <= 0x39)
      ) {
        operand = lx.object();
        continue;
      }
      const op = lx.word();
      if (op === null) {
        lx.pos++; // a stray delimiter
        continue;
      }
      if (op === "Do" && operand instanceof Name) this.#draw(operand.name, resources, depth);
      else if (op === "BI") this.#inline(lx, resources);
      operand = null;
      if (this.drawn.length > MAX_IMAGES) return;
    }
  }

  #draw(name: string, resources: Dict | null, depth: number): void {
    const doc = this.doc;
    const xobjects = resources === null ? undefined : doc.get(resources, "XObject");
    if (!isDict(xobjects)) return;
    const entry = xobjects.get(name);
    const key = entry instanceof Ref ? entry.num : entry;
    if (key === undefined || this.#seen.has(key)) return;
    this.#seen.add(key);
    const x = doc.resolve(entry);
    if (!(x instanceof Stream)) return;
    const subtype = nameOf(doc.get(x.dict, "Subtype"));
    if (subtype === "Image") {
      const image = describe(doc, x, resources);
      if (image !== null) this.drawn.push(image);
    } else if (subtype === "Form" && depth < MAX_FORM_DEPTH) {
      const own = doc.get(x.dict, "Resources");
      this.content(decodeStream(doc, x), isDict(own) ? own : resources, depth + 1);
    }
  }

  /** `BI … ID <data> EI`: the image's dictionary, its data, and the scan resumed after it. */
  #inline(lx: Lexer, resources: Dict | null): void {
    const dict: Dict = new Map();
    for (;;) {
      lx.skipSpace();
      if (lx.pos >= lx.b.length) return;
      const save = lx.pos;
      if (lx.word() === "ID") break;
      lx.pos = save;
      const key = lx.object();
      const value = lx.object();
      if (key instanceof Name) {
        const full = INLINE_KEYS[key.name] ?? key.name;
        const named =
          value instanceof Name
            ? (INLINE_SPACES[value.name] ?? FILTER_NAMES[value.name])
            : undefined;
        dict.set(full, named === undefined ? value : new Name(named));
      }
    }
    const start = lx.pos + 1;
    let end = start;
    for (end = indexOf(lx.b, "EI", start); end >= 0; end = indexOf(lx.b, "EI", end + 2)) {
      const before = lx.b[end - 1]!;
      const after = lx.b[end + 2];
      if (
        (before === 32 || before === 10 || before === 13 || before === 9) &&
        (after === undefined || after === 32 || after === 10 || after === 13 || after === 9)
      )
        break;
    }
    if (end < 0) end = lx.b.length;
    lx.pos = Math.min(lx.b.length, end + 2);
    const data = lx.b.subarray(start, Math.max(start, end - 1));
    const image = describe(this.doc, new Stream(dict, data), resources, true);
    if (image !== null) this.drawn.push(image);
  }
}

/** A page's resources, inherited from its ancestors in the page tree when it has none of its own. */
function resourcesOf(doc: PdfDocument, page: Dict): Dict | null {
  let node: Value | undefined = page;
  for (let i = 0; i < 32 && isDict(node); i++) {
    const r = doc.get(node, "Resources");
    if (isDict(r)) return r;
    node = doc.get(node, "Parent");
  }
  return null;
}

/** Bytes pdf.js would decode for every image these resources reach (forms, patterns, Type 3 fonts). */
function reachableBytes(doc: PdfDocument, resources: Dict | null): number {
  let bytes = 0;
  const seen = new Set<Value>();
  const visit = (res: Value | undefined, depth: number) => {
    if (!isDict(res) || depth > MAX_FORM_DEPTH || seen.size > MAX_IMAGES) return;
    for (const key of ["XObject", "Pattern", "Font"]) {
      const group = doc.get(res, key);
      if (!isDict(group)) continue;
      for (const v of group.values()) {
        const id = v instanceof Ref ? v.num : v;
        if (seen.has(id)) continue;
        seen.add(id);
        const x = doc.resolve(v);
        const d = x instanceof Stream ? x.dict : x;
        if (!isDict(d)) continue;
        if (x instanceof Stream && nameOf(doc.get(d, "Subtype")) === "Image")
          bytes += describe(doc, x, null)?.pdfjsBytes ?? 0;
        visit(doc.get(d, "Resources"), depth + 1);
      }
    }
  };
  visit(resources ?? undefined, 0);
  return bytes;
}

/** The images page `ref` draws, and what pdf.js would decode were it asked for the page. */
export function scanPage(doc: PdfDocument, ref: { num: number; gen: number }): PageScan {
  const page = doc.fetch(new Ref(ref.num, ref.gen));
  if (!isDict(page)) throw corrupt("a page is not a dictionary");
  const resources = resourcesOf(doc, page);
  const contents = doc.get(page, "Contents");
  const streams = (Array.isArray(contents) ? contents : [contents]).map((c) => doc.resolve(c));
  const parts = streams.flatMap((s) => (s instanceof Stream ? [decodeStream(doc, s)] : []));
  const scanner = new Scanner(doc);
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length + 1, 0));
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    bytes[at + p.length] = 10; // streams of one page are one content, split anywhere but inside a token
    at += p.length + 1;
  }
  scanner.content(bytes, resources, 0);
  return { drawn: scanner.drawn, reachableBytes: reachableBytes(doc, resources) };
}

/* ---- the chosen image, decoded ---- */

type ToRgb = (v: Float64Array, out: Uint8Array, o: number) => void;

/** A colour space: its components and how their values (0–1, or an index) become RGB. */
interface Space {
  components: number;
  /** Indexed: the values are palette indices, not intensities. */
  indexed: boolean;
  rgb: ToRgb;
}

// Values 0–1 to bytes, rounded (a Uint8Array store truncates).
const grey: ToRgb = (v, out, o) => {
  out[o] = out[o + 1] = out[o + 2] = 255 * v[0]! + 0.5;
};
const rgb: ToRgb = (v, out, o) => {
  out[o] = 255 * v[0]! + 0.5;
  out[o + 1] = 255 * v[1]! + 0.5;
  out[o + 2] = 255 * v[2]! + 0.5;
};
const cmyk: ToRgb = (v, out, o) => {
  const k = 1 - v[3]!;
  out[o] = 255 * (1 - v[0]!) * k + 0.5;
  out[o + 1] = 255 * (1 - v[1]!) * k + 0.5;
  out[o + 2] = 255 * (1 - v[2]!) * k + 0.5;
};

const DEVICE: Record<string, Space> = {
  DeviceGray: { components: 1, indexed: false, rgb: grey },
  CalGray: { components: 1, indexed: false, rgb: grey },
  G: { components: 1, indexed: false, rgb: grey },
  DeviceRGB: { components: 3, indexed: false, rgb },
  CalRGB: { components: 3, indexed: false, rgb },
  RGB: { components: 3, indexed: false, rgb },
  DeviceCMYK: { components: 4, indexed: false, rgb: cmyk },
  CMYK: { components: 4, indexed: false, rgb: cmyk },
};

const clamp01 = (x: number) => (x < 0 ? 0 : Math.min(x, 1));

/** The colour space of `cs`, or null when it is not one read here (pdf.js then decodes the page). */
function spaceOf(
  doc: PdfDocument,
  cs: Value | undefined,
  resources: Dict | null,
  depth = 0,
): Space | null {
  if (depth > 4) return null;
  cs = doc.resolve(cs);
  if (cs instanceof Name) {
    if (DEVICE[cs.name] !== undefined) return DEVICE[cs.name]!;
    const named = resources === null ? undefined : doc.get(resources, "ColorSpace");
    return isDict(named) ? spaceOf(doc, named.get(cs.name), null, depth + 1) : null;
  }
  if (!Array.isArray(cs) || cs.length === 0) return null;
  const family = nameOf(doc.resolve(cs[0]));
  if (family === "CalGray" || family === "CalRGB") return DEVICE[family]!;
  if (family === "ICCBased") {
    const s = doc.resolve(cs[1]);
    const n = s instanceof Stream ? doc.get(s.dict, "N") : undefined;
    return n === 1
      ? DEVICE.DeviceGray!
      : n === 3
        ? DEVICE.DeviceRGB!
        : n === 4
          ? DEVICE.DeviceCMYK!
          : null;
  }
  if (family === "Separation") {
    // One ink: its tint is how much of it, drawn dark on white (its alternate colour is not looked up).
    return {
      components: 1,
      indexed: false,
      rgb: (v, out, o) => grey(Float64Array.of(1 - v[0]!), out, o),
    };
  }
  if (family === "Indexed" || family === "I") {
    const base = spaceOf(doc, cs[1], resources, depth + 1);
    const hival = doc.resolve(cs[2]);
    const lookup = doc.resolve(cs[3]);
    if (base === null || base.indexed || typeof hival !== "number") return null;
    const table =
      typeof lookup === "string"
        ? Uint8Array.from(lookup, (c) => c.charCodeAt(0))
        : lookup instanceof Stream
          ? decodeStream(doc, lookup)
          : null;
    if (table === null) return null;
    const n = base.components;
    const entry = new Float64Array(n);
    const max = Math.min(255, Math.floor(hival));
    return {
      components: 1,
      indexed: true,
      rgb: (v, out, o) => {
        const i = Math.max(0, Math.min(max, Math.round(v[0]!)));
        for (let k = 0; k < n; k++) entry[k] = (table[i * n + k] ?? 0) / 255;
        base.rgb(entry, out, o);
      },
    };
  }
  return null;
}

/**
 * How samples of `bpc` bits become RGBA in `space` under the decode array (each component's range; a mask
 * paints where its decoded sample is 0).
 */
function pdfPixel(
  space: Space,
  bpc: number,
  decode: Value | undefined,
  mask: boolean,
): PixelWriter {
  const n = space.components;
  const max = (1 << bpc) - 1;
  const d =
    Array.isArray(decode) && decode.length >= 2 * n && decode.every((x) => typeof x === "number")
      ? (decode as number[])
      : Array.from({ length: 2 * n }, (_, i) => (i % 2 === 0 ? 0 : space.indexed ? max : 1));
  const v = new Float64Array(n);
  if (mask) {
    const paintOn = d[0]! < d[1]! ? 0 : 1; // the sample value that paints (Decode [0 1]: 0)
    return (s, i, out, o) => {
      out[o] = out[o + 1] = out[o + 2] = s[i] === paintOn ? 0 : 255;
      out[o + 3] = 255;
    };
  }
  return (s, i, out, o) => {
    for (let k = 0; k < n; k++) {
      const x = d[2 * k]! + (s[i + k]! * (d[2 * k + 1]! - d[2 * k]!)) / max;
      v[k] = space.indexed ? x : clamp01(x);
    }
    space.rgb(v, out, o);
    out[o + 3] = 255;
  };
}

/**
 * The raster of a page's image when it is decoded here, or null when pdf.js must (another codec or colour
 * space). Throws `too_large` over `maxPixels`.
 */
export function pageImageRaster(
  doc: PdfDocument,
  image: PageImage,
  maxPixels: number,
): OcrRaster | null {
  if (image.codec !== null && image.codec !== "DCTDecode") return null;
  const d = image.stream.dict;
  const mask = doc.get(d, "ImageMask") === true;
  const space = mask ? DEVICE.DeviceGray! : spaceOf(doc, doc.get(d, "ColorSpace"), image.resources);
  if (space === null) return null;
  const decode = doc.get(d, "Decode");
  const { names, params } = filtersOf(doc, d);
  const last = image.codec === null ? names.length : names.length - 1;
  const streamed = image.codec === null && names[last - 1] === "FlateDecode";
  // Every filter before the codec (or before a final Flate, which is inflated row by row) in memory: they
  // are the rare ASCII and LZW wrappers, bounded by the document's budget.
  let data = image.stream.data;
  const inMemory = streamed ? last - 1 : last;
  for (let i = 0; i < inMemory; i++) data = applyFilter(doc, names[i]!, params[i]!, data);
  if (image.codec === "DCTDecode") {
    const transform = params.at(-1)?.get("ColorTransform");
    return jpegRaster(data, maxPixels, {
      colorTransform: transform === 0 || transform === 1 ? transform : undefined,
      // The PDF's colour space and decode array when they fit the JPEG's components; else its own reading.
      pixel: (count) =>
        count === space.components ? pdfPixel(space, 8, decode, false) : undefined,
    });
  }
  const { width, height } = image;
  const scale = ocrScale(width, height, maxPixels);
  const tooLarge = (why?: string) =>
    new ExtractionFailedError(
      "pdf",
      "too_large",
      overPixelsMessage("a page's image", width, height, maxPixels, why),
    );
  if (scale === null) throw tooLarge();
  // Halved, rows are averaged as they are inflated; samples another filter put in memory are not halved.
  if (scale === 2 && inMemory > 0)
    throw tooLarge(`an image behind ${names[0]} is not read at half resolution`);
  const half = scale === 2;
  const bpcValue = doc.get(d, "BitsPerComponent");
  const bpc = mask ? 1 : typeof bpcValue === "number" ? bpcValue : 8;
  if (![1, 2, 4, 8, 16].includes(bpc)) return null;
  const channels = mask ? 1 : space.components;
  const pixel = pdfPixel(space, bpc, decode, mask);
  // A final Flate's predictor is undone row by row here; any other filter's was undone with it.
  const predictorParams = streamed ? (params[last - 1] ?? null) : null;
  const paint: OcrRaster["paint"] = (target) => {
    const rows = new RowSink(
      new RowPainter(target(), width, channels, bpc, pixel, half ? { height } : undefined),
      width,
      height,
      channels,
      bpc,
      predictorParams,
    );
    if (streamed) {
      try {
        inflateInto([data], rows.cap, (chunk) => rows.push(chunk));
      } catch (cause) {
        // Data past the image is ignored, as pdf.js does; damaged data leaves the rest of the page white.
        if (!(cause instanceof InflateError)) throw cause;
      }
    } else rows.push(data);
    rows.finish();
  };
  return half ? halfRaster(width, height, paint) : { width, height, paint };
}

/** Bytes → predictor undone → image rows, painted; rows that never arrive are left white. */
class RowSink {
  readonly #painter: RowPainter;
  readonly #height: number;
  readonly #predictor: Predictor;
  readonly #row: Uint8Array;
  #fill = 0;
  #y = 0;
  /** What the data may inflate to: the image's rows, with the predictor's filter bytes. */
  readonly cap: number;

  constructor(
    painter: RowPainter,
    width: number,
    height: number,
    channels: number,
    bpc: number,
    params: Dict | null,
  ) {
    this.#painter = painter;
    this.#height = height;
    this.#row = new Uint8Array(rowBytes(width, channels, bpc));
    this.#predictor = new Predictor(params, (bytes) => this.#rows(bytes));
    this.cap = this.#predictor.encoded(this.#row.length * height);
  }

  push(chunk: Uint8Array): void {
    if (this.#y < this.#height) this.#predictor.push(chunk);
  }

  #rows(bytes: Uint8Array): void {
    const n = this.#row.length;
    for (let at = 0; at < bytes.length && this.#y < this.#height; ) {
      const take = Math.min(n - this.#fill, bytes.length - at);
      this.#row.set(bytes.subarray(at, at + take), this.#fill);
      this.#fill += take;
      at += take;
      if (this.#fill < n) return;
      this.#painter.row(this.#row, this.#y++);
      this.#fill = 0;
    }
  }

  /** Rows the data did not reach: white paper. */
  finish(): void {
    this.#painter.white(this.#y, this.#height);
  }
}
