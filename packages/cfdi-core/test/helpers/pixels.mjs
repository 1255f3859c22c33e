/**
 * The print tests' pixel work, in a plain Node process. Inside jest's vm context pngjs and jsqr run
 * about ten times slower (their loops touch globals, which there go through the context's
 * interceptor): reading a 150 dpi page took 2.2 s and finding its QR 3.2 s under jest, against
 * ~0.4 s for both here.
 *
 *   node pixels.mjs qr PAGE.png              → {"data": "<the QR's text>"} ({"data": null}: none found)
 *   node pixels.mjs diff PAGE.png GOLDEN.png → {"width", "height", "goldenWidth", "goldenHeight", "difference"}
 *
 * `difference` is the share of pixels clearly different from the golden image (a summed RGB delta
 * over 96: anti-aliasing may differ by a few levels between poppler builds).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import process from 'node:process';
import { PNG } from 'pngjs';

// jsqr is CommonJS whose module.exports is the decoder itself.
const jsQR = createRequire(import.meta.url)('jsqr');
const read = (path) => PNG.sync.read(readFileSync(path));
const [command, ...paths] = process.argv.slice(2);

if (command === 'qr') {
  const image = read(paths[0]);
  const code = jsQR(new Uint8ClampedArray(image.data), image.width, image.height);
  process.stdout.write(JSON.stringify({ data: code?.data ?? null }));
} else if (command === 'diff') {
  const [image, golden] = paths.map(read);
  let different = 0;
  if (image.width === golden.width && image.height === golden.height)
    for (let i = 0; i < image.data.length; i += 4) {
      const delta =
        Math.abs(image.data[i] - golden.data[i]) +
        Math.abs(image.data[i + 1] - golden.data[i + 1]) +
        Math.abs(image.data[i + 2] - golden.data[i + 2]);
      if (delta > 96) different++;
    }
  process.stdout.write(
    JSON.stringify({
      width: image.width,
      height: image.height,
      goldenWidth: golden.width,
      goldenHeight: golden.height,
      difference: different / (image.width * image.height),
    }),
  );
} else {
  process.stderr.write('usage: node pixels.mjs qr PAGE.png | diff PAGE.png GOLDEN.png\n');
  process.exitCode = 2;
}
