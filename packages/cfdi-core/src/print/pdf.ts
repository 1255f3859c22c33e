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
import type { Keyed, PrintableCfdi, PrintableTax } from './printable.ts';

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
}

const KIND: Record<string, string> = {
  I: 'Factura (Ingreso)',
  E: 'Nota de crédito (Egreso)',
  P: 'Recibo electrónico de pago (Pago)',
  T: 'Traslado',
  N: 'Nómina',
};

const label = (k: Keyed | undefined) => (k ? (k.name ? `${k.key} – ${k.name.replace(/\.$/, '')}` : k.key) : '—');
const money = (value: string | undefined) =>
  value === undefined
    ? '—'
    : value.replace(/^(-?\d+)(\.\d+)?$/, (_, i: string, d = '') => i.replace(/\B(?=(\d{3})+$)/g, ',') + d);
const taxLine = (t: PrintableTax, kind: string) =>
  `${kind} ${t.impuesto.name || t.impuesto.key} ${t.tipoFactor}${t.tasaOCuota ? ` ${t.tasaOCuota}` : ''} · Base ${money(t.base)}${t.importe ? ` · Importe ${money(t.importe)}` : ''}`;

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
  const left = doc.page.margins.left;
  const width = doc.page.width - left - doc.page.margins.right;

  const heading = (text: string) => {
    doc.moveDown(0.6).font('bold').fontSize(9).fillColor('#1f2328').text(text.toUpperCase(), left, doc.y, { width });
    doc
      .moveTo(left, doc.y + 1)
      .lineTo(left + width, doc.y + 1)
      .lineWidth(0.5)
      .strokeColor('#8c959f')
      .stroke();
    doc.moveDown(0.3).font('regular').fontSize(8);
  };
  const field = (name: string, value: string, x = left, w = width) => {
    doc.font('bold').fontSize(8).text(`${name}: `, x, doc.y, { width: w, continued: true });
    doc.font('regular').text(value);
  };

  // Header: the merchant (and logo) left; the document's identity right.
  const top = doc.y;
  const boxX = left + width - 240;
  let textLeft = left;
  if (options.logo) {
    doc.image(options.logo, left, top, { fit: [80, 50] });
    textLeft = left + 90;
  }
  // The merchant's column ends where the document's box begins (narrower beside a logo: it wraps).
  const leftWidth = Math.min(300, boxX - 10 - textLeft);
  doc.font('bold').fontSize(13).fillColor('#1f2328').text(cfdi.emisor.nombre, textLeft, top, { width: leftWidth });
  doc.font('regular').fontSize(8).text(`RFC ${cfdi.emisor.rfc}`, textLeft, doc.y, { width: leftWidth });
  doc.text(`Régimen fiscal ${label(cfdi.emisor.regimenFiscal)}`, textLeft, doc.y, { width: leftWidth });
  doc.text(`Lugar de expedición (C.P.) ${cfdi.lugarExpedicion}`, textLeft, doc.y, { width: leftWidth });
  const leftBottom = Math.max(doc.y, options.logo ? top + 50 : doc.y);
  doc
    .font('bold')
    .fontSize(11)
    .text(KIND[cfdi.tipoDeComprobante.key] ?? cfdi.tipoDeComprobante.key, boxX, top, {
      width: 240,
      align: 'right',
    });
  doc
    .font('bold')
    .fontSize(10)
    .text(serieFolio ? `Serie-folio ${serieFolio}` : 'Sin serie-folio', boxX, doc.y, {
      width: 240,
      align: 'right',
    });
  doc.font('regular').fontSize(7.5);
  for (const line of [
    `Folio fiscal (UUID) ${cfdi.timbre.uuid}`,
    `Fecha de emisión ${cfdi.fecha}`,
    `Fecha de certificación ${cfdi.timbre.fechaTimbrado}`,
  ])
    doc.text(line, boxX, doc.y, { width: 240, align: 'right' });
  doc.y = Math.max(leftBottom, doc.y);

  heading('Receptor');
  field('Nombre', cfdi.receptor.nombre);
  field('RFC', cfdi.receptor.rfc);
  field('Domicilio fiscal (C.P.)', cfdi.receptor.domicilioFiscal);
  field('Régimen fiscal', label(cfdi.receptor.regimenFiscal));
  field('Uso del CFDI', label(cfdi.receptor.usoCfdi));

  heading('Comprobante');
  if (cfdi.formaPago) field('Forma de pago', label(cfdi.formaPago));
  if (cfdi.metodoPago) field('Método de pago', label(cfdi.metodoPago));
  field('Moneda', `${cfdi.moneda}${cfdi.tipoCambio ? ` · Tipo de cambio ${cfdi.tipoCambio}` : ''}`);
  field('Exportación', label(cfdi.exportacion));
  field('No. de certificado del emisor', cfdi.noCertificado);
  field('No. de certificado del SAT', cfdi.timbre.noCertificadoSat);
  field('RFC del proveedor de certificación', cfdi.timbre.rfcProvCertif);
  if (cfdi.informacionGlobal) {
    const g = cfdi.informacionGlobal;
    field('Información global', `Periodicidad ${label(g.periodicidad)} · Meses ${label(g.meses)} · Año ${g.año}`);
  }
  for (const r of cfdi.relacionados) field(`CFDI relacionados (${label(r.tipoRelacion)})`, r.uuids.join(', '));

  if (cfdi.conceptos.length > 0) {
    heading('Conceptos');
    const columns: [string, number, 'left' | 'right'][] = [
      ['Clave', 52, 'left'],
      ['Cantidad', 44, 'right'],
      ['Unidad', 56, 'left'],
      ['Descripción', width - 52 - 44 - 56 - 70 - 70 - 60, 'left'],
      ['Valor unitario', 70, 'right'],
      ['Importe', 70, 'right'],
      ['Descuento', 60, 'right'],
    ];
    const row = (cells: string[], font: 'regular' | 'bold') => {
      const y = doc.y;
      let x = left;
      let bottom = y;
      doc.font(font).fontSize(7.5);
      cells.forEach((cell, i) => {
        const [, w, align] = columns[i]!;
        doc.text(cell, x, y, { width: w - 4, align });
        bottom = Math.max(bottom, doc.y);
        x += w;
      });
      doc.y = bottom;
    };
    row(
      columns.map(([name]) => name),
      'bold',
    );
    for (const k of cfdi.conceptos) {
      if (doc.y > doc.page.height - 200) doc.addPage();
      doc.moveDown(0.2);
      row(
        [
          k.claveProdServ,
          k.cantidad,
          `${k.claveUnidad}${k.unidad ? ` ${k.unidad}` : ''}`,
          `${k.descripcion}${k.noIdentificacion ? ` (${k.noIdentificacion})` : ''}`,
          money(k.valorUnitario),
          money(k.importe),
          money(k.descuento),
        ],
        'regular',
      );
      doc.font('regular').fontSize(6.5).fillColor('#57606a');
      const taxes = [
        ...k.traslados.map((t) => taxLine(t, 'Traslado')),
        ...k.retenciones.map((t) => taxLine(t, 'Retención')),
      ];
      doc.text(
        `Objeto de impuesto ${label(k.objetoImp)}${taxes.length ? ` · ${taxes.join(' · ')}` : ''}`,
        left + 52,
        doc.y,
        {
          width: width - 52,
        },
      );
      doc.fillColor('#1f2328');
    }
  }

  for (const [i, p] of cfdi.pagos.entries()) {
    heading(`Pago ${i + 1}`);
    field('Fecha de pago', p.fechaPago);
    field('Forma de pago', label(p.formaDePagoP));
    field('Monto', `${money(p.monto)} ${p.monedaP}${p.tipoCambioP ? ` · Tipo de cambio ${p.tipoCambioP}` : ''}`);
    if (p.numOperacion) field('Número de operación', p.numOperacion);
    for (const t of p.trasladosP)
      field(
        `Impuesto trasladado ${label(t.impuesto)}`,
        `base ${money(t.base)} · ${t.tipoFactor}${t.tasaOCuota ? ` ${t.tasaOCuota}` : ''}${t.importe ? ` · importe ${money(t.importe)}` : ''}`,
      );
    for (const r of p.retencionesP) field(`Impuesto retenido ${label(r.impuesto)}`, `importe ${money(r.importe)}`);
    for (const d of p.documentos) {
      field(
        `Documento relacionado ${d.serieFolio ?? ''}`.trim(),
        `${d.idDocumento} · ${d.monedaDR}${d.equivalenciaDR ? ` (equivalencia ${d.equivalenciaDR})` : ''} · parcialidad ${d.numParcialidad ?? '—'} · saldo anterior ${money(d.impSaldoAnt)} · pagado ${money(d.impPagado)} · saldo insoluto ${money(d.impSaldoInsoluto)} · objeto de impuesto ${label(d.objetoImpDR)}`,
      );
    }
  }

  // Totals, right; the amount in words under them.
  heading('Totales');
  const totals: [string, string][] = cfdi.montoTotalPagos
    ? [['Total de los pagos', `${money(cfdi.montoTotalPagos)} MXN`]]
    : [
        ['Subtotal', money(cfdi.subTotal)],
        ...(cfdi.descuento ? ([['Descuento', money(cfdi.descuento)]] as [string, string][]) : []),
        ...(cfdi.totalImpuestosTrasladados
          ? ([['Impuestos trasladados', money(cfdi.totalImpuestosTrasladados)]] as [string, string][])
          : []),
        ...(cfdi.totalImpuestosRetenidos
          ? ([['Impuestos retenidos', money(cfdi.totalImpuestosRetenidos)]] as [string, string][])
          : []),
        ['Total', `${money(cfdi.total)} ${cfdi.moneda}`],
      ];
  for (const [name, value] of totals) {
    const y = doc.y;
    doc
      .font('bold')
      .fontSize(8.5)
      .text(name, left + width - 260, y, { width: 140, align: 'right' });
    doc
      .font(name.startsWith('Total') ? 'bold' : 'regular')
      .text(value, left + width - 115, y, { width: 115, align: 'right' });
  }
  doc.moveDown(0.3).font('bold').fontSize(8).text(`Importe con letra: ${cfdi.totalEnLetra}`, left, doc.y, { width });

  // The seal block: the QR left, the sellos and the TFD's cadena beside it.
  if (doc.y > doc.page.height - 260) doc.addPage();
  heading('Timbre fiscal digital');
  const sealTop = doc.y;
  doc.image(qr, left, sealTop, { width: 110 });
  const sealX = left + 120;
  const sealWidth = width - 120;
  doc.y = sealTop;
  for (const [name, value] of [
    ['Sello digital del CFDI', cfdi.timbre.sello],
    ['Sello digital del SAT', cfdi.timbre.selloSat],
    ['Cadena original del complemento de certificación digital del SAT', cfdi.timbre.cadenaOriginalTfd],
  ] as const) {
    doc.font('bold').fontSize(6.5).text(name, sealX, doc.y, { width: sealWidth });
    doc.font('regular').fontSize(5.5).text(value, sealX, doc.y, { width: sealWidth, lineBreak: true });
    doc.moveDown(0.3);
  }
  doc.y = Math.max(doc.y, sealTop + 115);

  // Every page: the legend and its number; "CANCELADO" across it when cancelled.
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
    if (options.cancelled) {
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
  doc.end();
  return done;
}
