/**
 * The reference a halved decode (raster.ts's HalfRows) is checked against, written the plain way: every
 * target pixel the mean of the 2×2 block it covers (fewer at an odd edge), rounded half up.
 */

/** The 2×2 box average of an RGBA picture, rounded half up: what a halved decode must equal exactly. */
export function boxHalf(data: Uint8Array, w: number, h: number): Uint8Array {
  const [hw, hh] = [Math.ceil(w / 2), Math.ceil(h / 2)];
  const out = new Uint8Array(hw * hh * 4);
  for (let y = 0; y < hh; y++)
    for (let x = 0; x < hw; x++) {
      const px: number[] = [];
      for (const [dx, dy] of [
        [0, 0],
        [1, 0],
        [0, 1],
        [1, 1],
      ] as const)
        if (2 * x + dx < w && 2 * y + dy < h) px.push(((2 * y + dy) * w + 2 * x + dx) * 4);
      for (let c = 0; c < 3; c++) {
        const sum = px.reduce((s, p) => s + data[p + c]!, 0);
        out[(y * hw + x) * 4 + c] = Math.floor((sum + (px.length >> 1)) / px.length);
      }
      out[(y * hw + x) * 4 + 3] = 255;
    }
  return out;
}
