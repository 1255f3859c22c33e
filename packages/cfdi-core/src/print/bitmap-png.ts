/**
 * A black-and-white square bitmap (a QR symbol) as a PNG: grayscale, 1 bit per pixel, no filter, one
 * zlib stream (RFC 2083). A few hundred microseconds for a QR, against ~10 ms through an RGBA
 * renderer.
 */
import { constants, crc32, deflateSync } from 'node:zlib';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(data, crc32(head.subarray(4))) >>> 0, 0);
  return Buffer.concat([head, data, crc]);
}

/**
 * `size`×`size` modules, `dark(x, y)` for each, each module `scale` pixels wide, with a light border
 * of `margin` modules (a QR's quiet zone).
 */
export function bitmapPng(
  size: number,
  dark: (x: number, y: number) => boolean,
  options: { scale: number; margin: number },
): Buffer {
  const { scale, margin } = options;
  const width = (size + 2 * margin) * scale;
  const rowBytes = Math.ceil(width / 8);
  // Each row: filter byte 0, then the pixels, most significant bit first; 1 = white, 0 = black. A
  // module row is drawn once and copied to its `scale` pixel rows; margin rows stay white.
  const stride = rowBytes + 1;
  const raw = Buffer.alloc(stride * width, 0xff);
  for (let py = 0; py < width; py++) raw[py * stride] = 0;
  for (let my = 0; my < size; my++) {
    const first = (margin + my) * scale * stride;
    for (let mx = 0; mx < size; mx++) {
      if (!dark(mx, my)) continue;
      for (let px = (margin + mx) * scale, end = px + scale; px < end; px++)
        raw[first + 1 + (px >> 3)]! &= ~(0x80 >> (px & 7));
    }
    for (let k = 1; k < scale; k++) raw.copy(raw, first + k * stride, first, first + stride);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(width, 4);
  ihdr[8] = 1; // bit depth
  ihdr[9] = 0; // grayscale
  ihdr[10] = 0; // deflate
  ihdr[11] = 0; // adaptive filtering (each row says its filter: none)
  ihdr[12] = 0; // no interlace
  return Buffer.concat([
    SIGNATURE,
    chunk('IHDR', ihdr),
    // Run-length strategy: a QR's rows are runs of one byte value; for a verification URL's QR it is
    // both smaller (~490 against ~630 bytes) and ~2.5× cheaper than zlib's default (~15 against ~40 µs).
    chunk('IDAT', deflateSync(raw, { strategy: constants.Z_RLE })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
