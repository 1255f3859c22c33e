import { describe, expect, it } from '@jest/globals';
import { PNG } from 'pngjs';
import { bitmapPng } from '../src/print/bitmap-png.ts';

describe('bitmapPng (the QR’s 1-bit PNG)', () => {
  it('reads back, pixel by pixel, as the bitmap scaled with its light margin', () => {
    // 5×5 modules, not a multiple of 8 pixels wide once scaled (rows end mid-byte).
    const dark = (x: number, y: number) => (x + 2 * y) % 3 === 0;
    const png = PNG.sync.read(bitmapPng(5, dark, { scale: 3, margin: 1 }));
    expect([png.width, png.height]).toEqual([21, 21]);
    for (let py = 0; py < 21; py++)
      for (let px = 0; px < 21; px++) {
        const [mx, my] = [Math.floor(px / 3) - 1, Math.floor(py / 3) - 1];
        const inside = mx >= 0 && mx < 5 && my >= 0 && my < 5;
        const expected = inside && dark(mx, my) ? 0 : 255;
        expect([px, py, png.data[(py * 21 + px) * 4]]).toEqual([px, py, expected]);
      }
  });
});
