/**
 * OCR's decoders on their own: the inflater against zlib (every level and strategy, any split of the input)
 * and under its cap; PNG in every colour type, bit depth, filter and interlacing against the pixels it was
 * written from; JPEG (baseline, progressive, restarts, subsampling) against jpeg-js, an independent decoder;
 * and each refusing what is damaged or larger than declared with a typed error, before the work.
 */
import { deflateSync } from "node:zlib";
import { zlibSync } from "fflate";
import jpegJs from "jpeg-js";
import { describe, expect, it } from "vitest";
import { ExtractionFailedError } from "../../src/extract/errors.ts";
import { decodeImage, imageRaster } from "../../src/extract/image-decode.ts";
import { InflateError, inflateCapped, inflateInto } from "../../src/extract/inflate.ts";
import { HalfRows } from "../../src/extract/raster.ts";
import { pngFile } from "../fixtures/image-writer.ts";
import { writeJpeg } from "../fixtures/jpeg-writer.ts";
import { scanBombJpeg, zlibZeros } from "../fixtures/ocr-hostile.ts";
import { boxHalf } from "../support/box-half.ts";

let seed = 12345;
const random = () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x7fffffff;
};

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

describe("inflate", () => {
  it("agrees with zlib on every level and strategy, however the input is split", () => {
    for (let t = 0; t < 40; t++) {
      const n = Math.floor(random() * 100_000);
      const raw = new Uint8Array(n);
      for (let i = 0; i < n; i++)
        raw[i] =
          t % 3 === 0
            ? (random() * 256) | 0
            : t % 3 === 1
              ? random() < 0.9
                ? 32
                : i & 255
              : i % 7;
      const z = new Uint8Array(deflateSync(raw, { level: t % 10, strategy: t % 5 }));
      // Split anywhere, down to single bytes.
      const parts: Uint8Array[] = [];
      for (let at = 0; at < z.length; ) {
        const take = 1 + Math.floor(random() * (t % 2 === 0 ? 3 : 5000));
        parts.push(z.subarray(at, at + take));
        at += take;
      }
      const out: number[] = [];
      const total = inflateInto(parts, n, (chunk) => out.push(...chunk));
      expect(total).toBe(n);
      expect(Uint8Array.from(out)).toEqual(raw);
      expect(inflateCapped(zlibSync(raw), n)).toEqual(raw);
    }
  });

  it("stops at its cap: a bomb costs the cap, not its expansion", () => {
    const bomb = zlibZeros(256 * 1024 * 1024);
    let handed = 0;
    const t = performance.now();
    const e = thrown(() => inflateInto([bomb], 10_000, (c) => (handed += c.length)));
    expect(performance.now() - t).toBeLessThan(2000); // a loose bound: the full expansion takes far longer
    expect(e).toBeInstanceOf(InflateError);
    expect((e as InflateError).kind).toBe("over");
    expect(handed).toBe(10_000);
    // Exactly the cap is fine.
    expect(inflateCapped(zlibZeros(5000), 5000).length).toBe(5000);
    expect((thrown(() => inflateCapped(zlibZeros(5001), 5000)) as InflateError).kind).toBe("over");
  });

  it("refuses what is not a zlib stream, truncated data and impossible codes", () => {
    const good = zlibSync(new TextEncoder().encode("hello hello hello hello"));
    for (const bad of [
      Uint8Array.from([1, 2, 3]),
      Uint8Array.from([0x78, 0x9c, 0xff, 0xff]),
      good.subarray(0, good.length - 6),
      Uint8Array.from([0x78, 0x01, 0x07]), // block type 3
    ]) {
      const e = thrown(() => inflateCapped(bad, 1000));
      expect(e).toBeInstanceOf(InflateError);
      expect((e as InflateError).kind).toBe("corrupt");
    }
  });
});

/** Samples of a random image: `channels` a pixel, each 0 … 2^depth − 1. */
function samples(w: number, h: number, channels: number, depth: number): number[] {
  return Array.from({ length: w * h * channels }, () => Math.floor(random() * 2 ** depth));
}

/** PNG rows of `s` (for the pixels of one pass), with filter `type` applied. */
function filteredRows(
  s: number[],
  w: number,
  xs: number[],
  ys: number[],
  channels: number,
  depth: number,
  filter: (row: number) => number,
): Uint8Array {
  const bpp = Math.max(1, (channels * depth) / 8);
  const rowLen = Math.ceil((xs.length * channels * depth) / 8);
  const out: number[] = [];
  let prev = new Uint8Array(rowLen);
  ys.forEach((y, r) => {
    const row = new Uint8Array(rowLen);
    let bit = 0;
    for (const x of xs)
      for (let c = 0; c < channels; c++) {
        const v = s[(y * w + x) * channels + c]!;
        if (depth === 16) {
          row[bit >> 3] = v >> 8;
          row[(bit >> 3) + 1] = v & 255;
        } else row[bit >> 3]! |= v << (8 - depth - (bit & 7));
        bit += depth;
      }
    const type = filter(r);
    const f = new Uint8Array(rowLen);
    for (let i = 0; i < rowLen; i++) {
      const a = i >= bpp ? row[i - bpp]! : 0;
      const b = prev[i]!;
      const c = i >= bpp ? prev[i - bpp]! : 0;
      const p = a + b - c;
      const pred =
        type === 1
          ? a
          : type === 2
            ? b
            : type === 3
              ? (a + b) >> 1
              : type === 4
                ? Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c)
                  ? a
                  : Math.abs(p - b) <= Math.abs(p - c)
                    ? b
                    : c
                : 0;
      f[i] = (row[i]! - pred) & 255;
    }
    out.push(type, ...f);
    prev = row;
  });
  return Uint8Array.from(out);
}

const ADAM7 = [
  [0, 0, 8, 8],
  [4, 0, 8, 8],
  [0, 4, 4, 8],
  [2, 0, 4, 4],
  [0, 2, 2, 4],
  [1, 0, 2, 2],
  [0, 1, 1, 2],
];

function encodePng(
  w: number,
  h: number,
  colorType: number,
  depth: number,
  s: number[],
  interlace: boolean,
  extra: [string, Uint8Array][] = [],
): Uint8Array {
  const channels = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 }[colorType]!;
  const passes = interlace ? ADAM7 : [[0, 0, 1, 1]];
  const parts: Uint8Array[] = [];
  let n = 0;
  for (const [x0, y0, dx, dy] of passes) {
    const xs: number[] = [];
    const ys: number[] = [];
    for (let x = x0!; x < w; x += dx!) xs.push(x);
    for (let y = y0!; y < h; y += dy!) ys.push(y);
    if (xs.length === 0 || ys.length === 0) continue;
    parts.push(filteredRows(s, w, xs, ys, channels, depth, (r) => (r + n++) % 5));
  }
  const raw = Uint8Array.from(parts.flatMap((p) => [...p]));
  return pngFile({ width: w, height: h, depth, colorType, interlace }, zlibSync(raw), extra);
}

const scale = (v: number, depth: number) =>
  depth === 16 ? v >> 8 : Math.round((v * 255) / (2 ** depth - 1));
const over = (c: number, a: number) => Math.round((c * a + 255 * (255 - a)) / 255);

describe("PNG", () => {
  const layouts: [number, number[]][] = [
    [0, [1, 2, 4, 8, 16]],
    [2, [8, 16]],
    [3, [1, 2, 4, 8]],
    [4, [8, 16]],
    [6, [8, 16]],
  ];
  for (const [colorType, depths] of layouts)
    for (const depth of depths)
      for (const interlace of [false, true])
        it(`colour type ${colorType}, ${depth}-bit${interlace ? ", Adam7" : ""}: every pixel as written`, () => {
          const [w, h] = [13, 11];
          const channels = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 }[colorType]!;
          const s = samples(w, h, channels, depth);
          const palette = Uint8Array.from({ length: 3 * 2 ** Math.min(depth, 8) }, () =>
            Math.floor(random() * 256),
          );
          const alpha = Uint8Array.from({ length: 5 }, (_, i) => i * 60);
          const extra: [string, Uint8Array][] =
            colorType === 3
              ? [
                  ["PLTE", palette],
                  ["tRNS", alpha],
                ]
              : [];
          const img = decodeImage(
            encodePng(w, h, colorType, depth, s, interlace, extra),
            "png",
            1e6,
          );
          const want = new Uint8Array(w * h * 4);
          for (let i = 0; i < w * h; i++) {
            const p = s.slice(i * channels, (i + 1) * channels);
            let rgba: number[];
            if (colorType === 3) {
              const a = alpha[p[0]!] ?? 255;
              rgba = [0, 1, 2].map((k) => over(palette[3 * p[0]! + k]!, a));
            } else if (colorType === 0) rgba = Array(3).fill(scale(p[0]!, depth));
            else if (colorType === 2) rgba = p.map((v) => scale(v, depth));
            else if (colorType === 4)
              rgba = Array(3).fill(over(scale(p[0]!, depth), scale(p[1]!, depth)));
            else rgba = p.slice(0, 3).map((v) => over(scale(v, depth), scale(p[3]!, depth)));
            want.set([...rgba, 255], 4 * i);
          }
          const off = [...img.data].map((v, i) => Math.abs(v - want[i]!));
          expect(Math.max(...off)).toBeLessThanOrEqual(1);
        });

  it("a transparent colour key is white paper", () => {
    const s = [0, 0, 0, 10, 20, 30];
    const key = Uint8Array.from([0, 10, 0, 20, 0, 30]);
    const img = decodeImage(encodePng(2, 1, 2, 8, s, false, [["tRNS", key]]), "png", 100);
    expect([...img.data]).toEqual([0, 0, 0, 255, 255, 255, 255, 255]);
  });

  it("refuses from the header alone: over the pixel limit, or a colour type and depth PNG does not have", () => {
    const huge = pngFile({ width: 30_000, height: 30_000, depth: 8, colorType: 0 }, zlibZeros(10));
    const big = thrown(() => imageRaster(huge, "png", 7_300_000)) as ExtractionFailedError;
    expect(big.reason).toBe("too_large");
    const palette16 = pngFile({ width: 10, height: 10, depth: 16, colorType: 3 }, zlibZeros(10));
    const bad = thrown(() => imageRaster(palette16, "png", 100)) as ExtractionFailedError;
    expect(bad.reason).toBe("corrupt");
    expect(bad.message).toMatch(/colour type 3, 16-bit/);
  });

  it("refuses data that inflates past its rows, ends early, has an unknown filter or no palette", () => {
    const cases: [Uint8Array, RegExp][] = [
      [
        pngFile({ width: 100, height: 100, depth: 8, colorType: 0 }, zlibZeros(1 << 26)),
        /inflates past the 10100 bytes/,
      ],
      [pngFile({ width: 100, height: 100, depth: 8, colorType: 0 }, zlibZeros(5000)), /ends early/],
      [
        pngFile(
          { width: 2, height: 1, depth: 8, colorType: 0 },
          zlibSync(Uint8Array.from([9, 1, 2])),
        ),
        /unknown row filter 9/,
      ],
      [
        pngFile(
          { width: 2, height: 1, depth: 8, colorType: 3 },
          zlibSync(Uint8Array.from([0, 1, 2])),
        ),
        /no palette/,
      ],
      [
        pngFile({ width: 2, height: 1, depth: 8, colorType: 0 }, Uint8Array.from([1, 2, 3])),
        /damaged/,
      ],
    ];
    for (const [bytes, message] of cases) {
      const e = thrown(() => decodeImage(bytes, "png", 1e6)) as ExtractionFailedError;
      expect(e).toBeInstanceOf(ExtractionFailedError);
      expect(e.reason).toBe("corrupt");
      expect(e.message).toMatch(message);
    }
  });
});

describe("JPEG", () => {
  const grey = {
    width: 45,
    height: 37,
    channels: 1 as const,
    data: Uint8Array.from(samples(45, 37, 1, 8)),
  };
  const smooth = (x: number, y: number, k: number) => (x * 5 + y * 3 + k * 70) & 255;
  const colour = {
    width: 51,
    height: 29,
    channels: 3 as const,
    data: Uint8Array.from({ length: 51 * 29 * 3 }, (_, i) =>
      smooth(Math.floor(i / 3) % 51, Math.floor(i / 3 / 51), i % 3),
    ),
  };
  const variants: [string, Parameters<typeof writeJpeg>[0], Parameters<typeof writeJpeg>[1]][] = [
    ["grey, baseline", grey, {}],
    ["grey, progressive", grey, { progressive: true }],
    ["grey, progressive with restarts", grey, { progressive: true, restart: 3 }],
    ["colour 4:4:4, baseline", colour, {}],
    ["colour 4:2:0, baseline with restarts", colour, { subsample: true, restart: 2 }],
    ["colour 4:2:0, progressive", colour, { progressive: true, subsample: true }],
    ["colour 4:4:4, progressive with restarts", colour, { progressive: true, restart: 5 }],
  ];
  for (const [name, image, options] of variants)
    it(`${name}: as jpeg-js reads it (±4: their IDCTs differ)`, () => {
      const bytes = writeJpeg(image, options);
      const ref = jpegJs.decode(bytes, { useTArray: true, formatAsRGBA: true });
      const img = decodeImage(bytes, "jpeg", 1e6);
      expect([img.width, img.height]).toEqual([ref.width, ref.height]);
      const off = img.data.reduce((m, v, i) => Math.max(m, Math.abs(v - ref.data[i]!)), 0);
      expect(off).toBeLessThanOrEqual(4);
    });

  it("judges the picture, not its padded blocks: a JPEG of the limit's exact size is read", () => {
    // 17×9 = 153 pixels; its 4:2:0 MCUs pad it to 32×16 = 512.
    const image = {
      width: 17,
      height: 9,
      channels: 3 as const,
      data: new Uint8Array(17 * 9 * 3).fill(200),
    };
    const bytes = writeJpeg(image, { subsample: true });
    expect(imageRaster(bytes, "jpeg", 153).width).toBe(17);
    // One pixel over: read at half resolution (9×5 = 45 pixels), and refused below that.
    expect(imageRaster(bytes, "jpeg", 152)).toMatchObject({ width: 9, height: 5 });
    expect((thrown(() => imageRaster(bytes, "jpeg", 44)) as ExtractionFailedError).reason).toBe(
      "too_large",
    );
  });

  it("refuses a progressive file whose scans revisit its blocks too often, and what it does not read", () => {
    const bomb = thrown(() =>
      decodeImage(scanBombJpeg(256, 40), "jpeg", 1e6),
    ) as ExtractionFailedError;
    expect(bomb.reason).toBe("too_large");
    expect(bomb.message).toMatch(/more than 16 times over/);
    const base = writeJpeg(grey);
    const sof = base.indexOf(0xc0, 2);
    const arithmetic = base.slice();
    arithmetic[sof] = 0xc9;
    expect((thrown(() => decodeImage(arithmetic, "jpeg", 1e6)) as Error).message).toMatch(
      /arithmetic-coded JPEGs are not read/,
    );
    const twelve = base.slice();
    twelve[sof + 3] = 12;
    expect((thrown(() => decodeImage(twelve, "jpeg", 1e6)) as Error).message).toMatch(/12-bit/);
    const dnl = base.slice();
    dnl.set([0, 0], sof + 4);
    expect((thrown(() => decodeImage(dnl, "jpeg", 1e6)) as Error).message).toMatch(/DNL/);
  });

  it("reads a truncated file to its end (the rest mid-grey) and never loops on damaged data", () => {
    const bytes = writeJpeg(colour, { progressive: true });
    for (const cut of [0.3, 0.6, 0.9]) {
      const img = decodeImage(bytes.subarray(0, Math.floor(bytes.length * cut)), "jpeg", 1e6);
      expect(img.width).toBe(51);
    }
    const garbled = bytes.slice();
    for (let i = 700; i < garbled.length - 2; i += 37) garbled[i] = (garbled[i]! * 7 + 3) & 255;
    const e = (() => {
      try {
        decodeImage(garbled, "jpeg", 1e6);
        return null;
      } catch (error) {
        return error;
      }
    })();
    if (e !== null) expect(e).toBeInstanceOf(ExtractionFailedError);
  });
});

describe("half resolution (an image over the pixel limit, within it halved)", () => {
  it("HalfRows averages 2×2 exactly, odd sizes included, and leaves missing rows white", () => {
    for (const [w, h] of [
      [1, 1],
      [2, 2],
      [5, 3],
      [4, 7],
      [7, 1],
    ] as const) {
      const full = Uint8Array.from({ length: w * h * 4 }, (_, i) =>
        i % 4 === 3 ? 255 : Math.floor(random() * 256),
      );
      const out = new Uint8Array(Math.ceil(w / 2) * Math.ceil(h / 2) * 4);
      const half = new HalfRows(out, w, h);
      for (let y = 0; y < h; y++) half.add(full, y, y * w * 4);
      expect(out).toEqual(boxHalf(full, w, h));
    }
    // Rows 0–2 of 6 given, then white: row pair 1 averages row 2 with white paper.
    const w = 3;
    const full = Uint8Array.from({ length: w * 6 * 4 }, (_, i) => (i % 4 === 3 ? 255 : i % 200));
    const white = full.slice().fill(255, 3 * w * 4);
    const out = new Uint8Array(2 * 3 * 4).fill(7);
    const half = new HalfRows(out, w, 6);
    for (let y = 0; y < 3; y++) half.add(full, y, y * w * 4);
    half.white(3);
    expect(out).toEqual(boxHalf(white, w, 6));
    expect(() => new HalfRows(out, w, 6).add(full, 1)).toThrow(/out of order/);
  });

  const layouts: [number, number][] = [
    [0, 1],
    [0, 8],
    [0, 16],
    [2, 8],
    [2, 16],
    [3, 4],
    [4, 8],
    [6, 16],
  ];
  for (const [colorType, depth] of layouts)
    it(`PNG colour type ${colorType}, ${depth}-bit, 13×11 over a limit of 50: the exact box average of its full decode`, () => {
      const [w, h] = [13, 11];
      const channels = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 }[colorType]!;
      const s = samples(w, h, channels, depth);
      const extra: [string, Uint8Array][] =
        colorType === 3
          ? [
              ["PLTE", Uint8Array.from({ length: 48 }, () => Math.floor(random() * 256))],
              ["tRNS", Uint8Array.from([0, 128, 255])],
            ]
          : [];
      const bytes = encodePng(w, h, colorType, depth, s, false, extra);
      const whole = decodeImage(bytes, "png", 1e6);
      const raster = imageRaster(bytes, "png", 50);
      expect([raster.width, raster.height, raster.from]).toEqual([7, 6, { width: 13, height: 11 }]);
      const halved = decodeImage(bytes, "png", 50);
      expect([halved.width, halved.height]).toEqual([7, 6]);
      expect(halved.data).toEqual(boxHalf(whole.data, w, h));
    });

  it("refuses over 4× the limit (its half over it), an interlaced PNG, and a row wider than 65,536", () => {
    const s = samples(13, 11, 1, 8);
    const refused = (bytes: Uint8Array, max: number) =>
      thrown(() => imageRaster(bytes, "png", max)) as ExtractionFailedError;
    const over = refused(encodePng(13, 11, 0, 8, s, false), 41);
    expect(over.reason).toBe("too_large");
    expect(over.message).toMatch(
      /13×11 pixels, more than the 41 OCR reads, even at half resolution \(7×6\)/,
    );
    const adam7 = refused(encodePng(13, 11, 0, 8, s, true), 50);
    expect(adam7.reason).toBe("too_large");
    expect(adam7.message).toMatch(/interlaced PNG is not read at half resolution/);
    const wide = pngFile({ width: 70_000, height: 2, depth: 8, colorType: 0 }, zlibZeros(10));
    expect(refused(wide, 100_000).message).toMatch(/over 65536 pixels wide/);
    // At the default ceiling: a 300 dpi A4 page and a 4K screenshot are read halved; 6000² is not.
    for (const [w, h, read] of [
      [2480, 3508, true],
      [3840, 2160, true],
      [6000, 6000, false],
    ] as const) {
      const header = pngFile({ width: w, height: h, depth: 8, colorType: 0 }, zlibZeros(10));
      if (read)
        expect(imageRaster(header, "png", 7_300_000)).toMatchObject({
          width: w / 2,
          height: h / 2,
          from: { width: w, height: h },
        });
      else expect(refused(header, 7_300_000).reason).toBe("too_large");
    }
  });

  it("a damaged halved PNG is still corrupt (its data ends early)", () => {
    const bytes = encodePng(13, 11, 0, 8, samples(13, 11, 1, 8), false);
    const e = thrown(() => decodeImage(bytes.slice(0, bytes.length - 30), "png", 50));
    expect((e as ExtractionFailedError).reason).toBe("corrupt");
  });

  const grey = {
    width: 45,
    height: 37,
    channels: 1 as const,
    data: Uint8Array.from(samples(45, 37, 1, 8)),
  };
  const colour = {
    width: 51,
    height: 29,
    channels: 3 as const,
    data: Uint8Array.from({ length: 51 * 29 * 3 }, (_, i) => (i * 7 + (i % 3) * 60) & 255),
  };
  for (const [name, image, options] of [
    ["grey", grey, {}],
    ["grey with restarts", grey, { restart: 2 }],
    ["colour 4:4:4", colour, {}],
    ["colour 4:2:0 with restarts", colour, { subsample: true, restart: 3 }],
  ] as const)
    it(`baseline JPEG, ${name}: halved while decoding, the exact box average of its full decode`, () => {
      const bytes = writeJpeg(image, options);
      const whole = decodeImage(bytes, "jpeg", 1e6);
      const limit = Math.ceil(image.width / 2) * Math.ceil(image.height / 2);
      const halved = decodeImage(bytes, "jpeg", limit);
      expect([halved.width, halved.height]).toEqual([
        Math.ceil(image.width / 2),
        Math.ceil(image.height / 2),
      ]);
      expect(halved.data).toEqual(boxHalf(whole.data, image.width, image.height));
      expect(() => decodeImage(bytes, "jpeg", limit - 1)).toThrow(/even at half resolution/);
    });

  it("refuses a progressive JPEG over the limit rather than halve it", () => {
    const bytes = writeJpeg(grey, { progressive: true });
    const e = thrown(() => imageRaster(bytes, "jpeg", 45 * 37 - 1)) as ExtractionFailedError;
    expect(e.reason).toBe("too_large");
    expect(e.message).toMatch(/progressive JPEG is not read at half resolution/);
  });
});
