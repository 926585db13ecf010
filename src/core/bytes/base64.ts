/**
 * Base64 without a runtime's Buffer or atob: strict enough to refuse what is not base64, lenient
 * enough for what clients send (the url alphabet, missing padding). Pure, so the core can size and
 * read attachment bytes.
 */

const B64 = new Int16Array(128).fill(-1);
for (let i = 0; i < 64; i++)
  B64["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".charCodeAt(i)] = i;
B64["-".charCodeAt(0)] = 62; // base64url, which some clients send
B64["_".charCodeAt(0)] = 63;

/**
 * Decoded size of a base64 string, without decoding it (so a too-large file is refused before
 * allocation).
 */
export function base64DecodedLength(data: string): number {
  let end = data.length;
  while (end > 0 && data.charCodeAt(end - 1) === 61 /* = */) end--;
  return Math.floor((end * 3) / 4);
}

/** Strict-enough base64 (standard or url alphabet, optional padding, no whitespace inside). */
export function decodeBase64(data: string): Uint8Array {
  let end = data.length;
  while (end > 0 && data.charCodeAt(end - 1) === 61) end--;
  if (data.length - end > 2 || end % 4 === 1) throw new Error("bad base64 length");
  const out = new Uint8Array(Math.floor((end * 3) / 4));
  let o = 0;
  let i = 0;
  const value = (k: number): number => {
    const c = data.charCodeAt(k);
    const v = c < 128 ? B64[c]! : -1;
    if (v < 0) throw new Error(`bad base64 character at ${k}`);
    return v;
  };
  for (; i + 4 <= end; i += 4) {
    const n = (value(i) << 18) | (value(i + 1) << 12) | (value(i + 2) << 6) | value(i + 3);
    out[o++] = n >> 16;
    out[o++] = (n >> 8) & 255;
    out[o++] = n & 255;
  }
  const rest = end - i;
  if (rest === 2) out[o++] = ((value(i) << 2) | (value(i + 1) >> 4)) & 255;
  else if (rest === 3) {
    const n = (value(i) << 10) | (value(i + 1) << 4) | (value(i + 2) >> 2);
    out[o++] = (n >> 8) & 255;
    out[o++] = n & 255;
  }
  return out;
}
