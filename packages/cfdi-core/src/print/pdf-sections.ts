/**
 * The sections of the printed CFDI, top to bottom, each drawn on the page the one before left off:
 * the header (merchant, logo, the document's identity), receptor and comprobante, the conceptos
 * table, the pagos of a complemento, the totals and the seal block. pdf.ts makes the document,
 * calls them in order and writes every page's footer.
 */
import type PDFKitDocument from 'pdfkit';
import type { Keyed, PrintableCfdi, PrintableTax } from './printable.ts';

type Doc = InstanceType<typeof PDFKitDocument>;

/** The document being drawn and its text column, with the two text styles every section uses. */
export interface Sheet {
  doc: Doc;
  left: number;
  width: number;
  /** The merchant's colour (`#RRGGBB`) for its name and the headings; else near-black. */
  accent: string | undefined;
  /** A section's title, upper case over a rule. */
  heading: (text: string) => void;
  /** `Name: value`, the name bold. */
  field: (name: string, value: string, x?: number, w?: number) => void;
}

export function sheetOf(doc: Doc, accent?: string): Sheet {
  const left = doc.page.margins.left;
  const width = doc.page.width - left - doc.page.margins.right;
  return {
    doc,
    left,
    width,
    accent,
    heading: (text) => {
      doc
        .moveDown(0.6)
        .font('bold')
        .fontSize(9)
        .fillColor(accent ?? '#1f2328')
        .text(text.toUpperCase(), left, doc.y, { width });
      doc
        .moveTo(left, doc.y + 1)
        .lineTo(left + width, doc.y + 1)
        .lineWidth(accent ? 1 : 0.5)
        .strokeColor(accent ?? '#8c959f')
        .stroke();
      doc.moveDown(0.3).font('regular').fontSize(8).fillColor('#1f2328');
    },
    field: (name, value, x = left, w = width) => {
      doc.font('bold').fontSize(8).text(`${name}: `, x, doc.y, { width: w, continued: true });
      doc.font('regular').text(value);
    },
  };
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

/** The merchant (and logo) left; the document's identity right. */
export function drawHeader(s: Sheet, cfdi: PrintableCfdi, serieFolio: string, logo: Buffer | undefined): void {
  const { doc, left, width } = s;
  const top = doc.y;
  const boxX = left + width - 240;
  let textLeft = left;
  if (logo) {
    doc.image(logo, left, top, { fit: [80, 50] });
    textLeft = left + 90;
  }
  // The merchant's column ends where the document's box begins (narrower beside a logo: it wraps).
  const leftWidth = Math.min(300, boxX - 10 - textLeft);
  doc
    .font('bold')
    .fontSize(13)
    .fillColor(s.accent ?? '#1f2328')
    .text(cfdi.emisor.nombre, textLeft, top, { width: leftWidth });
  doc
    .font('regular')
    .fontSize(8)
    .fillColor('#1f2328')
    .text(`RFC ${cfdi.emisor.rfc}`, textLeft, doc.y, { width: leftWidth });
  doc.text(`Régimen fiscal ${label(cfdi.emisor.regimenFiscal)}`, textLeft, doc.y, { width: leftWidth });
  doc.text(`Lugar de expedición (C.P.) ${cfdi.lugarExpedicion}`, textLeft, doc.y, { width: leftWidth });
  const leftBottom = Math.max(doc.y, logo ? top + 50 : doc.y);
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
}

/** The receptor, and the comprobante's own data (payment, currency, certificates, relations). */
export function drawParties(s: Sheet, cfdi: PrintableCfdi): void {
  const { heading, field } = s;
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
}

/** The conceptos as a table, each with its taxes under it; a new page when the page is nearly full. */
export function drawConceptos(s: Sheet, cfdi: PrintableCfdi): void {
  if (cfdi.conceptos.length === 0) return;
  const { doc, left, width } = s;
  s.heading('Conceptos');
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

/** Each pago of a complemento de pago: its data, taxes and related documents. */
export function drawPagos(s: Sheet, cfdi: PrintableCfdi): void {
  const { heading, field } = s;
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
}

/** The totals, right; the amount in words under them. */
export function drawTotals(s: Sheet, cfdi: PrintableCfdi): void {
  const { doc, left, width } = s;
  s.heading('Totales');
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
}

/** The seal block: the QR left, the sellos and the TFD's cadena beside it. */
export function drawSeal(s: Sheet, cfdi: PrintableCfdi, qr: Buffer): void {
  const { doc, left, width } = s;
  if (doc.y > doc.page.height - 260) doc.addPage();
  s.heading('Timbre fiscal digital');
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
}
