/**
 * The representación impresa of a stamped CFDI as a PDF (pdfkit), from its printable model: every
 * datum the SAT asks to be printed, the QR of the verification URL (qrcode), and "CANCELADO" across
 * each page when the invoice is cancelled. Deterministic: the fonts the caller gives embedded (subsets),
 * the document's dates are the stamp's, nothing else varies — the same document gives the same bytes.
 */
import type * as Fontkit from 'fontkit';
import type PDFKitDocument from 'pdfkit';
import type QRCodeModule from 'qrcode';
import { bitmapPng } from './bitmap-png.ts';
import {
  drawConceptos,
  drawHeader,
  drawPagos,
  drawParties,
  drawSeal,
  drawTotals,
  sheetOf,
  type Sheet,
} from './pdf-sections.ts';
import type { PrintableCfdi } from './printable.ts';

/**
 * pdfkit, fontkit and qrcode, loaded when the first QR or PDF is made, not when the package is:
 * every process imports `@timbra/cfdi-core` and most never print (loading the three took ~0.3 s
 * of each start-up — the API, each worker, every ops command).
 */
let printing:
  Promise<{ PDFDocument: typeof PDFKitDocument; fontkit: typeof Fontkit; QRCode: typeof QRCodeModule }> | undefined;
// One after the other: jest's ESM loader links modules imported side by side in a race ("request
// for 'restructure' is not in cache"); Node does not mind, and the order costs nothing.
const printingModules = () =>
  (printing ??= (async () => {
    const { default: PDFDocument } = await import('pdfkit');
    const fontkit = await import('fontkit');
    const { default: QRCode } = await import('qrcode');
    return { PDFDocument, fontkit, QRCode };
  })());
/**
 * The typefaces a PDF is set in, as TrueType bytes: the caller reads them (`@timbra/cfdi-node`'s
 * `dejavuFonts`, DejaVu Sans: every Spanish letter, and free to embed) and keeps this object for the
 * process's life.
 */
export interface PdfFonts {
  regular: Uint8Array;
  bold: Uint8Array;
}

/**
 * The faces of each `PdfFonts`, parsed once and shared by every document printed with it: pdfkit
 * takes a fontkit font as well as a file, and each document still embeds its own subset. Parsing the
 * TrueType tables again for every PDF was a third of its CPU (~16 of ~48 ms, measured with
 * --cpu-prof). Keyed by the caller's object, so nothing outlives it.
 */
const parsedFaces = new WeakMap<PdfFonts, { regular: Fontkit.Font; bold: Fontkit.Font }>();
function faces(fontkit: typeof Fontkit, fonts: PdfFonts) {
  let parsed = parsedFaces.get(fonts);
  if (!parsed) {
    const face = (bytes: Uint8Array) => fontkit.create(Buffer.from(bytes)) as Fontkit.Font;
    parsed = { regular: face(fonts.regular), bold: face(fonts.bold) };
    parsedFaces.set(fonts, parsed);
  }
  return parsed;
}

export interface PdfOptions {
  /** The typefaces (DejaVu Sans, from `@timbra/cfdi-node`). */
  fonts: PdfFonts;
  /** Shown across every page when the CFDI was cancelled at the SAT. */
  cancelled?: boolean;
  /** The merchant's logo (PNG or JPEG bytes), top left. */
  logo?: Buffer;
  /** The merchant's colour (`#RRGGBB`, checked where it is configured): its name and the headings. */
  color?: string;
}

/** The deployment's PDF options with a merchant's own logo and colour over them (each where it has one). */
export function brandedPdf<T extends Omit<PdfOptions, 'cancelled'>>(
  pdf: T,
  logo: Buffer | undefined,
  color: string | null | undefined,
): T {
  return { ...pdf, ...(logo ? { logo } : {}), ...(color ? { color } : {}) };
}

/**
 * The QR of a CFDI's printed representation, as a PNG: its SAT verification URL (what SW's v4 answer
 * carries). The symbol is qrcode's (one byte-mode segment: the URL is bytes, no need to search mixed
 * modes); the PNG is written here, 1 bit per pixel (qrcode's own PNG renderer paints RGBA pixels and
 * lets pngjs try five filters per row: ~10 ms a QR, most of the PAC sandbox's CPU per stamp).
 */
export async function verificationQrPng(
  verificationUrl: string,
  options: { maskPattern?: 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 } = {},
): Promise<Buffer> {
  const { QRCode } = await printingModules();
  // Without a mask pattern qrcode tries the eight and keeps the most readable (~1 ms): what a printed
  // page should have; the PAC sandbox fixes one (any is valid).
  const { modules } = QRCode.create([{ data: Buffer.from(verificationUrl, 'utf8'), mode: 'byte' }], {
    errorCorrectionLevel: 'M',
    ...(options.maskPattern !== undefined ? { maskPattern: options.maskPattern } : {}),
  });
  return bitmapPng(modules.size, (x, y) => modules.get(y, x) === 1, { scale: 4, margin: 1 });
}

/** The PDF's bytes. */
export async function renderCfdiPdf(cfdi: PrintableCfdi, options: PdfOptions): Promise<Buffer> {
  const { PDFDocument, fontkit } = await printingModules();
  const qr = await verificationQrPng(cfdi.verificationUrl);
  const serieFolio = [cfdi.serie, cfdi.folio].filter(Boolean).join('-');
  // The stamp's instant (FechaTimbrado is Mexico's local time; read as UTC only to be a fixed date).
  const stampedAt = new Date(`${cfdi.timbre.fechaTimbrado}Z`);
  const doc = new PDFDocument({
    size: 'LETTER',
    margin: 36,
    bufferPages: true,
    info: {
      Title: `CFDI ${serieFolio} ${cfdi.timbre.uuid}`,
      Author: cfdi.emisor.nombre,
      Subject: 'Representación impresa de un CFDI 4.0',
      Creator: 'Timbra',
      Producer: 'Timbra',
      CreationDate: stampedAt,
      ModDate: stampedAt,
    },
  });
  const chunks: Buffer[] = [];
  doc.on('data', (chunk: Buffer) => chunks.push(chunk));
  const done = new Promise<Buffer>((resolve) => doc.on('end', () => resolve(Buffer.concat(chunks))));
  // (pdfkit's types name files and bytes only; its PDFFontFactory also takes a fontkit font.)
  const { regular, bold } = faces(fontkit, options.fonts);
  doc.registerFont('regular', regular as unknown as Buffer);
  doc.registerFont('bold', bold as unknown as Buffer);
  const sheet = sheetOf(doc, options.color);
  drawHeader(sheet, cfdi, serieFolio, options.logo);
  drawParties(sheet, cfdi);
  drawConceptos(sheet, cfdi);
  drawPagos(sheet, cfdi);
  drawTotals(sheet, cfdi);
  drawSeal(sheet, cfdi, qr);
  drawPageFooters(sheet, serieFolio, options.cancelled ?? false);
  doc.end();
  return done;
}

/** Every page: the legend and its number; "CANCELADO" across it when cancelled. */
function drawPageFooters(s: Sheet, serieFolio: string, cancelled: boolean): void {
  const { doc, left, width } = s;
  const range = doc.bufferedPageRange();
  for (let i = range.start; i < range.start + range.count; i++) {
    doc.switchToPage(i);
    const bottom = doc.page.height - doc.page.margins.bottom;
    doc.page.margins.bottom = 0;
    doc
      .font('regular')
      .fontSize(7)
      .fillColor('#57606a')
      .text(
        ['Este documento es una representación impresa de un CFDI 4.0', serieFolio, `página ${i + 1} de ${range.count}`]
          .filter(Boolean)
          .join(' · '),
        left,
        bottom + 12,
        { width, align: 'center', lineBreak: false },
      );
    if (cancelled) {
      doc.save();
      doc.rotate(-35, { origin: [doc.page.width / 2, doc.page.height / 2] });
      doc
        .font('bold')
        .fontSize(90)
        .fillColor('#cf222e')
        .fillOpacity(0.25)
        .text('CANCELADO', -doc.page.width / 2, doc.page.height / 2 - 50, {
          width: doc.page.width * 2,
          align: 'center',
          lineBreak: false,
        });
      doc.restore();
    }
    doc.fillColor('#1f2328').fillOpacity(1);
  }
}
