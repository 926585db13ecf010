/**
 * A small reader of a PDF's objects, for what OCR must know before pdf.js decodes anything: which images a
 * page draws, how large they say they are, and where their bytes are. pdf.js decodes every image of a page
 * while it builds the page's operator list and offers no way to look first, so a page drawing sixty large
 * images would be sixty decodes; this reader looks first.
 *
 * It follows the file's cross-reference sections (tables and streams, /Prev and /XRefStm) as pdf.js does,
 * and rebuilds the index from the `n g obj` headers when they are damaged, as pdf.js does too. Everything is
 * bounded by the document: nesting depth, the number of objects parsed, and the bytes inflated from streams
 * (DocumentBudget), so a hostile structure costs at most a small multiple of the file.
 */
import { ExtractionFailedError } from "./errors.ts";
import { InflateError, inflateCapped } from "./inflate.ts";
import { unfilter } from "./raster.ts";

export class Name {
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
}

export class Ref {
  readonly num: number;
  readonly gen: number;
  constructor(num: number, gen: number) {
    this.num = num;
    this.gen = gen;
  }
}

/** A stream: its dictionary and its raw (still encoded) bytes. */
export class Stream {
  readonly dict: Dict;
  readonly data: Uint8Array;
  constructor(dict: Dict, data: Uint8Array) {
    this.dict = dict;
    this.data = data;
  }
}

export type Dict = Map<string, Value>;
/** Strings are kept as their bytes, in latin1. */
export type Value = null | boolean | number | string | Name | Ref | Stream | Value[] | Dict;

/** Limits of one document's reading. */
export interface DocumentBudget {
  /** Bytes that may still be inflated from streams (content, object and cross-reference streams). */
  inflate: number;
  /** Objects that may still be parsed. */
  objects: number;
}

const MAX_DEPTH = 64;

export const isDict = (v: Value | undefined): v is Dict => v instanceof Map;
export const nameOf = (v: Value | undefined): string | undefined =>
  v instanceof Name ? v.name : undefined;

const tooLarge = (why: string) =>
  new ExtractionFailedError("pdf", "too_large", `PDF: ${why}, over what OCR reads`);
const damaged = (why: string) => new ExtractionFailedError("pdf", "corrupt", `PDF: ${why}`);

const WHITE = new Uint8Array(256);
for (const c of [0, 9, 10, 12, 13, 32]) WHITE[c] = 1;
const DELIM = new Uint8Array(256);
for (const c of "()<>[]{}/%") DELIM[c.charCodeAt(0)] = 1;

/** Tokens and objects from PDF syntax (a file's, an object stream's, or a content stream's bytes). */
export class Lexer {
  readonly b: Uint8Array;
  pos: number;
  readonly #budget: DocumentBudget;

  constructor(bytes: Uint8Array, pos: number, budget: DocumentBudget) {
    this.b = bytes;
    this.pos = pos;
    this.#budget = budget;
  }

  skipSpace(): void {
    const b = this.b;
    while (this.pos < b.length) {
      const c = b[this.pos]!;
      if (WHITE[c]) this.pos++;
      else if (c === 0x25)
        while (this.pos < b.length && b[this.pos] !== 10 && b[this.pos] !== 13) this.pos++;
      else break;
    }
  }

  /** The next keyword or number as text (null at a delimiter or the end); does not move past delimiters. */
  word(): string | null {
    this.skipSpace();
    const start = this.pos;
    while (this.pos < this.b.length && !WHITE[this.b[this.pos]!] && !DELIM[this.b[this.pos]!])
      this.pos++;
    return this.pos > start ? latin1(this.b, start, this.pos) : null;
  }

  /** One object; `n g R` is a reference. Throws on malformed syntax. */
  object(depth = 0): Value {
    if (depth > MAX_DEPTH) throw damaged("objects nested too deep");
    if (--this.#budget.objects < 0) throw tooLarge("more objects than the file could hold");
    this.skipSpace();
    const b = this.b;
    const c = b[this.pos];
    if (c === undefined) throw damaged("unexpected end of data");
    if (c === 0x2f) return this.#name();
    if (c === 0x28) return this.#literal();
    if (c === 0x3c && b[this.pos + 1] === 0x3c) {
      this.pos += 2;
      const dict: Dict = new Map();
      for (;;) {
        this.skipSpace();
        if (b[this.pos] === 0x3e && b[this.pos + 1] === 0x3e) {
          this.pos += 2;
          return dict;
        }
        if (this.pos >= b.length) throw damaged("unterminated dictionary");
        const key = this.object(depth + 1);
        if (!(key instanceof Name)) {
          // A stray token where a key should be: skip it (pdf.js is as lenient).
          continue;
        }
        dict.set(key.name, this.object(depth + 1));
      }
    }
    if (c === 0x3c) return this.#hex();
    if (c === 0x5b) {
      this.pos++;
      const items: Value[] = [];
      for (;;) {
        this.skipSpace();
        if (b[this.pos] === 0x5d) {
          this.pos++;
          return items;
        }
        if (this.pos >= b.length) throw damaged("unterminated array");
        items.push(this.object(depth + 1));
      }
    }
    if (DELIM[c]) {
      this.pos++;
      return null;
    }
    const word = this.word()!;
    if (word === "true" || word === "false") return word === "true";
    if (word === "null") return null;
    const n = Number(word);
    if (!Number.isFinite(n)) return new Name(`#${word}`); // a keyword, as a marked name
    if (Number.isInteger(n) && n >= 0) {
      // `n g R`?
      const save = this.pos;
      const gen = this.word();
      if (gen !== null && /^\d+$/.test(gen)) {
        const r = this.word();
        if (r === "R") return new Ref(n, Number(gen));
      }
      this.pos = save;
    }
    return n;
  }

  #name(): Name {
    const b = this.b;
    let s = "";
    this.pos++;
    while (this.pos < b.length && !WHITE[b[this.pos]!] && !DELIM[b[this.pos]!]) {
      const c = b[this.pos]!;
      if (c === 0x23 && this.pos + 2 < b.length) {
        const code = Number.parseInt(latin1(b, this.pos + 1, this.pos + 3), 16);
        if (!Number.isNaN(code)) {
          s += String.fromCharCode(code);
          this.pos += 3;
          continue;
        }
      }
      s += String.fromCharCode(c);
      this.pos++;
    }
    return new Name(s);
  }

  #literal(): string {
    const b = this.b;
    let depth = 0;
    let s = "";
    this.pos++;
    while (this.pos < b.length) {
      const c = b[this.pos++]!;
      if (c === 0x5c) {
        const e = b[this.pos++];
        if (e === undefined) break;
        const map: Record<number, string> = {
          110: "\n",
          114: "\r",
          116: "\t",
          98: "\b",
          102: "\f",
        };
        if (map[e] !== undefined) s += map[e];
        else if (e >= 0x30 && e <= 0x37) {
          let v = e - 0x30;
          for (let k = 0; k < 2 && b[this.pos]! >= 0x30 && b[this.pos]! <= 0x37; k++)
            v = v * 8 + b[this.pos++]! - 0x30;
          s += String.fromCharCode(v & 255);
        } else if (e === 13 || e === 10) {
          if (e === 13 && b[this.pos] === 10) this.pos++;
        } else s += String.fromCharCode(e);
        continue;
      }
      if (c === 0x28) depth++;
      if (c === 0x29 && depth-- === 0) return s;
      s += String.fromCharCode(c);
    }
    return s;
  }

  #hex(): string {
    const b = this.b;
    let s = "";
    let half = -1;
    this.pos++;
    while (this.pos < b.length && b[this.pos] !== 0x3e) {
      const d = hexDigit(b[this.pos++]!);
      if (d < 0) continue;
      if (half < 0) half = d;
      else {
        s += String.fromCharCode(half * 16 + d);
        half = -1;
      }
    }
    this.pos++;
    if (half >= 0) s += String.fromCharCode(half * 16);
    return s;
  }
}

function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

export function latin1(b: Uint8Array, start: number, end: number): string {
  let s = "";
  for (let i = start; i < end; i += 4096)
    s += String.fromCharCode(...b.subarray(i, Math.min(end, i + 4096)));
  return s;
}

/** Where an object is: at an offset of the file, or inside an object stream. */
type Entry = { offset: number } | { stream: number; index: number };

/** A PDF's objects, found through its cross-reference sections (or their reconstruction). */
export class PdfDocument {
  readonly bytes: Uint8Array;
  readonly budget: DocumentBudget;
  #entries = new Map<number, Entry>();
  #trailer: Dict = new Map();
  #rebuilt = false;
  readonly #objectStreams = new Map<number, { offsets: number[]; data: Uint8Array }>();
  readonly #cache = new Map<number, Value>();

  constructor(bytes: Uint8Array, budget: DocumentBudget) {
    this.bytes = bytes;
    this.budget = budget;
    try {
      this.#readXref();
    } catch (error) {
      if (error instanceof ExtractionFailedError && error.reason === "too_large") throw error;
      this.#rebuild();
    }
  }

  /** True when the document is encrypted (its streams cannot be read here). */
  get encrypted(): boolean {
    return this.#trailer.has("Encrypt");
  }

  /** The object `ref` points to (once read, kept); null when absent. */
  fetch(ref: Ref): Value {
    const known = this.#cache.get(ref.num);
    if (known !== undefined) return known;
    let value = this.#read(ref.num);
    if (value === undefined && !this.#rebuilt) {
      // A cross-reference entry that points nowhere: read the objects again from their headers.
      this.#rebuild();
      value = this.#read(ref.num);
    }
    const out = value ?? null;
    this.#cache.set(ref.num, out);
    return out;
  }

  /** `v` with a reference followed (at most a few in a row). */
  resolve(v: Value | undefined): Value | undefined {
    for (let i = 0; i < 8 && v instanceof Ref; i++) v = this.fetch(v);
    return v instanceof Ref ? null : v;
  }

  /** `dict[key]`, followed. */
  get(dict: Dict, key: string): Value | undefined {
    return this.resolve(dict.get(key));
  }

  #read(num: number): Value | undefined {
    const e = this.#entries.get(num);
    if (e === undefined) return undefined;
    if ("offset" in e) {
      if (e.offset < 0) return null; // a free entry: the object was deleted
      const lx = new Lexer(this.bytes, e.offset, this.budget);
      const n = lx.word();
      lx.word();
      if (n !== String(num) || lx.word() !== "obj") return undefined;
      return this.#body(lx);
    }
    const os = this.#objectStream(e.stream);
    const at = os?.offsets[e.index];
    if (os === undefined || at === undefined) return undefined;
    return new Lexer(os.data, at, this.budget).object();
  }

  /** An object's body after `n g obj`: a value, and its stream data when one follows. */
  #body(lx: Lexer): Value {
    const value = lx.object();
    const save = lx.pos;
    if (!isDict(value) || lx.word() !== "stream") {
      lx.pos = save;
      return value;
    }
    const b = this.bytes;
    let start = lx.pos;
    if (b[start] === 13) start++;
    if (b[start] === 10) start++;
    const length = value.get("Length");
    let end = -1;
    const declared =
      typeof length === "number" ? length : length instanceof Ref ? this.resolve(length) : null;
    if (typeof declared === "number" && declared >= 0 && start + declared <= b.length) {
      const after = new Lexer(b, start + declared, this.budget);
      if (after.word() === "endstream") end = start + declared;
    }
    if (end < 0) end = indexOf(b, "endstream", start);
    if (end < 0) end = b.length;
    return new Stream(value, b.subarray(start, end));
  }

  #objectStream(num: number): { offsets: number[]; data: Uint8Array } | undefined {
    const known = this.#objectStreams.get(num);
    if (known !== undefined) return known;
    const s = this.#read(num);
    if (!(s instanceof Stream)) return undefined;
    const n = this.get(s.dict, "N");
    const first = this.get(s.dict, "First");
    if (typeof n !== "number" || typeof first !== "number" || n < 0 || n > 1e6) return undefined;
    const data = decodeStream(this, s);
    const lx = new Lexer(data, 0, this.budget);
    const offsets: number[] = [];
    for (let i = 0; i < n; i++) {
      lx.word();
      const off = Number(lx.word());
      if (!Number.isFinite(off)) break;
      offsets.push(first + off);
    }
    const out = { offsets, data };
    this.#objectStreams.set(num, out);
    return out;
  }

  #readXref(): void {
    const b = this.bytes;
    const tail = latin1(b, Math.max(0, b.length - 1024), b.length);
    const m = /startxref\s+(\d+)/g;
    let last: RegExpExecArray | null = null;
    for (let x = m.exec(tail); x !== null; x = m.exec(tail)) last = x;
    if (last === null) throw damaged("no startxref");
    let offset: number | undefined = Number(last[1]);
    const seen = new Set<number>();
    while (offset !== undefined && !seen.has(offset) && seen.size < 64) {
      seen.add(offset);
      const trailer = this.#section(offset);
      if (this.#trailer.size === 0) this.#trailer = trailer;
      const stm = trailer.get("XRefStm");
      if (typeof stm === "number" && !seen.has(stm)) {
        seen.add(stm);
        this.#section(stm);
      }
      const prev = trailer.get("Prev");
      offset = typeof prev === "number" ? prev : undefined;
    }
    if (this.#entries.size === 0) throw damaged("an empty cross-reference");
  }

  /** One cross-reference section at `offset` (a table or a stream); its trailer. Older entries never win. */
  #section(offset: number): Dict {
    const lx = new Lexer(this.bytes, offset, this.budget);
    const first = lx.word();
    if (first === "xref") {
      for (;;) {
        const start = lx.word();
        if (start === "trailer") break;
        const count = Number(lx.word());
        if (start === null || !/^\d+$/.test(start) || !Number.isInteger(count))
          throw damaged("a damaged cross-reference table");
        for (let i = 0; i < count; i++) {
          const off = Number(lx.word());
          lx.word();
          const kind = lx.word();
          const num = Number(start) + i;
          if (kind === "n" && !this.#entries.has(num)) this.#entries.set(num, { offset: off });
          else if (kind === "f" && !this.#entries.has(num)) this.#entries.set(num, { offset: -1 });
          else if (kind !== "n" && kind !== "f") throw damaged("a damaged cross-reference table");
        }
      }
      const trailer = lx.object();
      if (!isDict(trailer)) throw damaged("no trailer");
      return trailer;
    }
    // A cross-reference stream: `n g obj << /Type /XRef … >> stream`.
    lx.word();
    if (lx.word() !== "obj") throw damaged("startxref points nowhere");
    const s = this.#body(lx);
    if (!(s instanceof Stream) || nameOf(s.dict.get("Type")) !== "XRef")
      throw damaged("startxref points nowhere");
    const w = s.dict.get("W");
    const size = s.dict.get("Size");
    if (!Array.isArray(w) || w.length < 3 || typeof size !== "number")
      throw damaged("a damaged cross-reference stream");
    const widths = w.map((x) => (typeof x === "number" ? x : 0));
    const index = s.dict.get("Index");
    const ranges = Array.isArray(index) ? index.map(Number) : [0, size];
    const data = decodeStream(this, s);
    const row = widths[0]! + widths[1]! + widths[2]!;
    let at = 0;
    for (let r = 0; r + 1 < ranges.length; r += 2) {
      for (let i = 0; i < ranges[r + 1]! && at + row <= data.length; i++, at += row) {
        const field = (k: number, from: number) => {
          let v = 0;
          for (let j = 0; j < widths[k]!; j++) v = v * 256 + data[from + j]!;
          return v;
        };
        const type = widths[0] === 0 ? 1 : field(0, at);
        const f2 = field(1, at + widths[0]!);
        const f3 = field(2, at + widths[0]! + widths[1]!);
        const num = ranges[r]! + i;
        if (this.#entries.has(num)) continue;
        if (type === 1) this.#entries.set(num, { offset: f2 });
        else if (type === 2) this.#entries.set(num, { stream: f2, index: f3 });
        else this.#entries.set(num, { offset: -1 });
      }
    }
    return s.dict;
  }

  /** The index rebuilt from the file's `n g obj` headers (the last of a number wins) and object streams. */
  #rebuild(): void {
    this.#rebuilt = true;
    this.#cache.clear();
    const direct = new Map<number, Entry>();
    const b = this.bytes;
    const streams: number[] = [];
    for (let p = indexOf(b, "obj", 0); p >= 0; p = indexOf(b, "obj", p + 3)) {
      // Back over "n g " before "obj".
      let q = p - 1;
      while (q >= 0 && WHITE[b[q]!]) q--;
      let g = q;
      while (g >= 0 && b[g]! >= 0x30 && b[g]! <= 0x39) g--;
      if (g === q) continue;
      let s = g;
      while (s >= 0 && WHITE[b[s]!]) s--;
      let n = s;
      while (n >= 0 && b[n]! >= 0x30 && b[n]! <= 0x39) n--;
      if (n === s || s === g) continue;
      const num = Number(latin1(b, n + 1, s + 1));
      direct.set(num, { offset: n + 1 });
      if (/\/Type\s*\/ObjStm/.test(latin1(b, p, Math.min(b.length, p + 256)))) streams.push(num);
    }
    this.#entries = new Map(direct);
    for (const num of streams) {
      const os = this.#objectStream(num);
      if (os === undefined) continue;
      const lx = new Lexer(os.data, 0, this.budget);
      for (let i = 0; i < os.offsets.length; i++) {
        const n = Number(lx.word());
        lx.word();
        if (Number.isInteger(n) && !direct.has(n)) this.#entries.set(n, { stream: num, index: i });
      }
    }
    const trailer = /trailer\s*<</g;
    let t: RegExpExecArray | null = null;
    const text = latin1(b, Math.max(0, b.length - 65536), b.length);
    for (let x = trailer.exec(text); x !== null; x = trailer.exec(text)) t = x;
    if (t !== null) {
      const lx = new Lexer(b, Math.max(0, b.length - 65536) + t.index + 7, this.budget);
      const dict = lx.object();
      if (isDict(dict)) this.#trailer = dict;
    }
  }
}

/** The first `needle` (ASCII) in `b` at or after `from`, or −1. */
export function indexOf(b: Uint8Array, needle: string, from: number): number {
  const first = needle.charCodeAt(0);
  outer: for (
    let i = b.indexOf(first, from);
    i >= 0 && i + needle.length <= b.length;
    i = b.indexOf(first, i + 1)
  ) {
    for (let k = 1; k < needle.length; k++) if (b[i + k] !== needle.charCodeAt(k)) continue outer;
    return i;
  }
  return -1;
}

/** The names of a stream's filters, and their parameters, as parallel lists. */
export function filtersOf(
  doc: PdfDocument,
  dict: Dict,
): { names: string[]; params: (Dict | null)[] } {
  const f = doc.get(dict, "Filter") ?? doc.get(dict, "F");
  const p = doc.get(dict, "DecodeParms") ?? doc.get(dict, "DP");
  const names = (Array.isArray(f) ? f : f === undefined || f === null ? [] : [f]).map(
    (x) => nameOf(doc.resolve(x)) ?? "",
  );
  const params = (Array.isArray(p) ? p : [p]).map((x) => {
    const v = doc.resolve(x);
    return isDict(v) ? v : null;
  });
  return { names, params: names.map((_, i) => params[i] ?? null) };
}

/** Abbreviations of filter names in inline images. */
export const FILTER_NAMES: Record<string, string> = {
  AHx: "ASCIIHexDecode",
  A85: "ASCII85Decode",
  LZW: "LZWDecode",
  Fl: "FlateDecode",
  RL: "RunLengthDecode",
  CCF: "CCITTFaxDecode",
  DCT: "DCTDecode",
};

/**
 * A stream's bytes through its filters, within the document's inflation budget. Only the general-purpose
 * filters are applied here; an image filter (DCT, CCITT, JBIG2, JPX) is a damaged stream for this purpose.
 */
export function decodeStream(doc: PdfDocument, s: Stream): Uint8Array {
  const { names, params } = filtersOf(doc, s.dict);
  let data = s.data;
  for (let i = 0; i < names.length; i++) data = applyFilter(doc, names[i]!, params[i]!, data);
  return data;
}

/** One general-purpose filter (and its predictor), within the inflation budget. */
export function applyFilter(
  doc: PdfDocument,
  name: string,
  params: Dict | null,
  data: Uint8Array,
): Uint8Array {
  const filter = FILTER_NAMES[name] ?? name;
  let out: Uint8Array;
  if (filter === "FlateDecode") {
    try {
      out = inflateCapped(data, Math.max(0, doc.budget.inflate));
    } catch (cause) {
      if (cause instanceof InflateError && cause.kind === "over")
        throw tooLarge("its streams inflate to more than the budget");
      throw damaged("a stream's compressed data is damaged");
    }
  } else if (filter === "ASCIIHexDecode") out = asciiHex(data);
  else if (filter === "ASCII85Decode") out = ascii85(data);
  else if (filter === "LZWDecode")
    out = lzw(
      data,
      params === null ? 1 : Number(params.get("EarlyChange") ?? 1),
      doc.budget.inflate,
    );
  else if (filter === "RunLengthDecode") out = runLength(data, doc.budget.inflate);
  else throw damaged(`a ${filter} stream where data was expected`);
  doc.budget.inflate -= out.length;
  if (doc.budget.inflate < 0) throw tooLarge("its streams inflate to more than the budget");
  return params === null ? out : unpredict(out, params);
}

/**
 * A Flate or LZW predictor undone as the bytes come: PNG's (10–15: a filter byte a row) or TIFF's (2, on
 * 8-bit samples), each row handed on without it; no predictor hands the bytes on as they are. One row
 * and the one above are all it holds.
 */
export class Predictor {
  readonly #onData: (bytes: Uint8Array) => void;
  readonly #kind: "none" | "png" | "tiff";
  readonly #row: number;
  readonly #bpp: number;
  #cur: Uint8Array;
  #prev: Uint8Array;
  #fill = 0;

  constructor(params: Dict | null, onData: (bytes: Uint8Array) => void) {
    this.#onData = onData;
    const predictor = Number(params?.get("Predictor") ?? 1);
    const colors = Number(params?.get("Colors") ?? 1);
    const bpc = Number(params?.get("BitsPerComponent") ?? 8);
    const columns = Number(params?.get("Columns") ?? 1);
    this.#kind = predictor >= 10 ? "png" : predictor === 2 ? "tiff" : "none";
    if (this.#kind === "tiff" && bpc !== 8)
      throw damaged("a TIFF predictor on samples that are not bytes");
    this.#row = Math.ceil((colors * bpc * columns) / 8);
    if (this.#kind !== "none" && !(this.#row > 0 && this.#row <= 1 << 24))
      throw damaged("invalid predictor parameters");
    this.#bpp = Math.max(1, Math.ceil((colors * bpc) / 8));
    const size = this.#kind === "none" ? 0 : this.#row + 1;
    this.#cur = new Uint8Array(size);
    this.#prev = new Uint8Array(size);
  }

  /** Bytes of predicted data that carry `bytes` of data (a filter byte a row for PNG's). */
  encoded(bytes: number): number {
    return this.#kind === "png" ? Math.ceil(bytes / this.#row + 1) * (this.#row + 1) : bytes;
  }

  push(chunk: Uint8Array): void {
    if (this.#kind === "none") {
      this.#onData(chunk);
      return;
    }
    // The row sits at 1…: PNG's filter byte, when there is one, at 0.
    const first = this.#kind === "png" ? 0 : 1;
    const end = this.#row + 1;
    for (let at = 0; at < chunk.length; ) {
      const take = Math.min(end - first - this.#fill, chunk.length - at);
      this.#cur.set(chunk.subarray(at, at + take), first + this.#fill);
      this.#fill += take;
      at += take;
      if (first + this.#fill < end) return;
      const row = this.#cur.subarray(1);
      if (this.#kind === "png") {
        if (!unfilter(this.#cur[0]!, row, this.#prev.subarray(1), this.#bpp))
          throw damaged(`unknown predictor row filter ${this.#cur[0]}`);
      } else
        for (let i = this.#bpp; i < row.length; i++) row[i] = (row[i]! + row[i - this.#bpp]!) & 255;
      this.#onData(row);
      [this.#cur, this.#prev] = [this.#prev, this.#cur];
      this.#fill = 0;
    }
  }
}

/** A whole stream's predictor undone (object and cross-reference streams, LZW image data). */
export function unpredict(data: Uint8Array, params: Dict): Uint8Array {
  const rows: Uint8Array[] = [];
  new Predictor(params, (b) => rows.push(b.slice())).push(data);
  if (rows.length === 1 && rows[0]!.length === data.length) return rows[0]!;
  const out = new Uint8Array(rows.reduce((n, r) => n + r.length, 0));
  let at = 0;
  for (const r of rows) {
    out.set(r, at);
    at += r.length;
  }
  return out;
}

function asciiHex(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(Math.ceil(data.length / 2));
  let n = 0;
  let half = -1;
  for (const c of data) {
    if (c === 0x3e) break;
    const d = hexDigit(c);
    if (d < 0) continue;
    if (half < 0) half = d;
    else {
      out[n++] = half * 16 + d;
      half = -1;
    }
  }
  if (half >= 0) out[n++] = half * 16;
  return out.subarray(0, n);
}

function ascii85(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(Math.ceil((data.length * 4) / 5) + 4);
  let n = 0;
  const group: number[] = [];
  const flush = (count: number) => {
    while (group.length < 5) group.push(84);
    let v = 0;
    for (const d of group) v = v * 85 + d;
    for (let k = 0; k < count - 1; k++) out[n++] = (v >>> (24 - 8 * k)) & 255;
    group.length = 0;
  };
  for (let i = 0; i < data.length; i++) {
    const c = data[i]!;
    if (c === 0x7e) break;
    if (WHITE[c]) continue;
    if (c === 0x7a && group.length === 0) {
      if (n + 4 > out.length) break;
      out.fill(0, n, n + 4);
      n += 4;
      continue;
    }
    if (c < 0x21 || c > 0x75) continue;
    group.push(c - 0x21);
    if (group.length === 5) flush(5);
  }
  if (group.length > 1) flush(group.length);
  return out.subarray(0, n);
}

/** A byte array that grows by doubling, never past `cap` (the inflation budget). */
class Output {
  #buf = new Uint8Array(4096);
  length = 0;
  readonly #cap: number;
  constructor(cap: number) {
    this.#cap = cap;
  }
  push(byte: number): void {
    if (this.length === this.#buf.length) {
      if (this.length >= this.#cap) throw tooLarge("its streams inflate to more than the budget");
      const grown = new Uint8Array(Math.min(this.#cap, this.#buf.length * 2));
      grown.set(this.#buf);
      this.#buf = grown;
    }
    this.#buf[this.length++] = byte;
  }
  bytes(): Uint8Array {
    return this.#buf.subarray(0, this.length);
  }
}

function runLength(data: Uint8Array, cap: number): Uint8Array {
  const out = new Output(Math.max(1, cap));
  let i = 0;
  while (i < data.length) {
    const len = data[i++]!;
    if (len === 128) break;
    if (len < 128) for (let k = 0; k <= len && i < data.length; k++) out.push(data[i++]!);
    else {
      const byte = data[i++] ?? 0;
      for (let k = 0; k < 257 - len; k++) out.push(byte);
    }
  }
  return out.bytes();
}

function lzw(data: Uint8Array, earlyChange: number, cap: number): Uint8Array {
  const out = new Output(Math.max(1, cap));
  const prefix = new Int32Array(4096);
  const suffix = new Uint8Array(4096);
  for (let i = 0; i < 256; i++) suffix[i] = i;
  const stack = new Uint8Array(4096);
  let next = 258;
  let width = 9;
  let prev = -1;
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < data.length; i++) {
    acc = ((acc << 8) | data[i]!) & 0xffffff;
    bits += 8;
    while (bits >= width) {
      const code = (acc >>> (bits - width)) & ((1 << width) - 1);
      bits -= width;
      if (code === 256) {
        next = 258;
        width = 9;
        prev = -1;
        continue;
      }
      if (code === 257 || code > next || (code === next && prev < 0)) return out.bytes();
      // The string of `code` (of the previous code, for the one being defined), read backwards.
      let top = 0;
      let k = code === next ? prev : code;
      while (k >= 256) {
        stack[top++] = suffix[k]!;
        k = prefix[k]!;
      }
      stack[top++] = k;
      for (let t = top - 1; t >= 0; t--) out.push(stack[t]!);
      if (code === next) out.push(k);
      if (prev >= 0 && next < 4096) {
        prefix[next] = prev;
        suffix[next] = k;
        next++;
        if (next + earlyChange >= 1 << width && width < 12) width++;
      }
      prev = code;
    }
  }
  return out.bytes();
}
