/**
 * Bytes → string for text attachments, the same in every runtime: BOMs first, then a declared charset, then
 * strict UTF-8, then Windows-1252 (what spreadsheet exports and old mail bodies usually are). Decoded by hand
 * where runtimes differ (workerd's TextDecoder knows fewer labels than Node's).
 */

const CP1252_HIGH = [
  0x20ac, 0x81, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021, 0x02c6, 0x2030, 0x0160, 0x2039,
  0x0152, 0x8d, 0x017d, 0x8f, 0x90, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x02dc,
  0x2122, 0x0161, 0x203a, 0x0153, 0x9d, 0x017e, 0x0178,
];

function decodeCp1252(b: Uint8Array): string {
  const parts: string[] = [];
  const CHUNK = 8192;
  const codes = new Uint16Array(Math.min(CHUNK, b.length));
  for (let start = 0; start < b.length; start += CHUNK) {
    const end = Math.min(b.length, start + CHUNK);
    for (let i = start; i < end; i++) {
      const c = b[i]!;
      codes[i - start] = c >= 0x80 && c <= 0x9f ? CP1252_HIGH[c - 0x80]! : c;
    }
    parts.push(String.fromCharCode(...codes.subarray(0, end - start)));
  }
  return parts.join("");
}

function decodeUtf16(b: Uint8Array, bigEndian: boolean): string {
  if (!bigEndian) return new TextDecoder("utf-16le").decode(b);
  const swapped = new Uint8Array(b.length - (b.length % 2));
  for (let i = 0; i + 1 < b.length; i += 2) {
    swapped[i] = b[i + 1]!;
    swapped[i + 1] = b[i]!;
  }
  return new TextDecoder("utf-16le").decode(swapped);
}

export type TextEncodingName = "utf-8" | "utf-16le" | "utf-16be" | "windows-1252";

/** The encoding a BOM announces, if any, and the BOM's length. */
export function bomOf(b: Uint8Array): { encoding: TextEncodingName; length: number } | null {
  if (b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) return { encoding: "utf-8", length: 3 };
  if (b[0] === 0xff && b[1] === 0xfe) return { encoding: "utf-16le", length: 2 };
  if (b[0] === 0xfe && b[1] === 0xff) return { encoding: "utf-16be", length: 2 };
  return null;
}

/** True if the head of the bytes looks like text: no NUL bytes (unless a UTF-16 BOM says why). */
export function looksLikeText(b: Uint8Array, probe = 8192): boolean {
  const bom = bomOf(b);
  if (bom && bom.encoding !== "utf-8") return true;
  const end = Math.min(b.length, probe);
  for (let i = 0; i < end; i++) if (b[i] === 0) return false;
  return true;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

export function decodeText(b: Uint8Array, charset?: string): string {
  const bom = bomOf(b);
  if (bom) {
    const body = b.subarray(bom.length);
    if (bom.encoding === "utf-8")
      return new TextDecoder("utf-8", { fatal: false, ignoreBOM: true }).decode(body);
    return decodeUtf16(body, bom.encoding === "utf-16be");
  }
  const cs = charset?.toLowerCase();
  if (cs === "utf-16le" || cs === "utf-16") return decodeUtf16(b, false);
  if (cs === "utf-16be") return decodeUtf16(b, true);
  if (
    cs === "iso-8859-1" ||
    cs === "latin1" ||
    cs === "windows-1252" ||
    cs === "cp1252" ||
    cs === "us-ascii" ||
    cs === "ascii"
  ) {
    return decodeCp1252(b);
  }
  try {
    return strictUtf8.decode(b);
  } catch {
    return decodeCp1252(b);
  }
}
