/** DejaVu Sans from its npm package, as the PDF printer takes its fonts (read once a process). */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { PdfFonts } from '@timbra/cfdi-core';

const require = createRequire(import.meta.url);
let fonts: PdfFonts | undefined;

/** DejaVu Sans regular and bold: every letter of Spanish, free to embed. */
export function dejavuFonts(): PdfFonts {
  const file = (name: string) => readFileSync(require.resolve(`dejavu-fonts-ttf/ttf/${name}`));
  return (fonts ??= { regular: file('DejaVuSans.ttf'), bold: file('DejaVuSans-Bold.ttf') });
}
