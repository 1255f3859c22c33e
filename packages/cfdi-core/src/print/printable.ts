/**
 * What the printed representation of a stamped CFDI shows, read from the stamped XML alone (the
 * document is the source, so the PDF can never disagree with it): the comprobante, emisor and
 * receptor, conceptos and taxes, relations, the Pagos 2.0 details, the TFD and its cadena, the
 * verification URL of the QR and the total in words, with the SAT catalogues' names beside each key.
 */
import { parseStampedCfdi } from '../tfd.ts';
import { attr, childElements, NS, type XmlElement } from '../xml/xml-node.ts';
import {
  C_EXPORTACION,
  C_FORMA_PAGO,
  C_IMPUESTO,
  C_METODO_PAGO,
  C_OBJETO_IMP,
  C_PERIODICIDAD,
  C_MESES,
  C_REGIMEN_FISCAL,
  C_TIPO_DE_COMPROBANTE,
  C_TIPO_RELACION,
  C_USO_CFDI,
} from '../validate/sat-catalogs.ts';
import { amountInWords } from './amount-in-words.ts';
import { satVerificationUrl } from './verification-url.ts';

/** A catalogue key and its name (`601`, `General de Ley Personas Morales`); the name empty when unknown. */
export interface Keyed {
  key: string;
  name: string;
}

export interface PrintableTax {
  impuesto: Keyed;
  tipoFactor: string;
  tasaOCuota?: string;
  base: string;
  importe?: string;
}

export interface PrintableConcepto {
  claveProdServ: string;
  noIdentificacion?: string;
  cantidad: string;
  claveUnidad: string;
  unidad?: string;
  descripcion: string;
  valorUnitario: string;
  importe: string;
  descuento?: string;
  objetoImp: Keyed;
  traslados: PrintableTax[];
  retenciones: PrintableTax[];
}

export interface PrintablePagoDocumento {
  idDocumento: string;
  serieFolio?: string;
  monedaDR: string;
  equivalenciaDR?: string;
  numParcialidad?: string;
  impSaldoAnt?: string;
  impPagado?: string;
  impSaldoInsoluto?: string;
  objetoImpDR: Keyed;
}

export interface PrintablePago {
  fechaPago: string;
  formaDePagoP: Keyed;
  monedaP: string;
  tipoCambioP?: string;
  monto: string;
  /** The payer's operation number (a transfer's tracking key, a card's authorization). */
  numOperacion?: string;
  documentos: PrintablePagoDocumento[];
  /** The payment's taxes (ImpuestosP): what the Pago reports of the documents' traslados and retenciones. */
  trasladosP: PrintableTax[];
  retencionesP: { impuesto: Keyed; importe: string }[];
}

export interface PrintableCfdi {
  tipoDeComprobante: Keyed;
  serie?: string;
  folio?: string;
  fecha: string;
  lugarExpedicion: string;
  formaPago?: Keyed;
  metodoPago?: Keyed;
  moneda: string;
  tipoCambio?: string;
  exportacion: Keyed;
  subTotal: string;
  descuento?: string;
  total: string;
  /** "MIL CIENTO SESENTA PESOS 00/100 M.N." (for a Pago, its total of payments). */
  totalEnLetra: string;
  noCertificado: string;
  informacionGlobal?: { periodicidad: Keyed; meses: Keyed; año: string };
  relacionados: { tipoRelacion: Keyed; uuids: string[] }[];
  emisor: { rfc: string; nombre: string; regimenFiscal: Keyed };
  receptor: { rfc: string; nombre: string; domicilioFiscal: string; regimenFiscal: Keyed; usoCfdi: Keyed };
  conceptos: PrintableConcepto[];
  totalImpuestosTrasladados?: string;
  totalImpuestosRetenidos?: string;
  pagos: PrintablePago[];
  /** Pagos 2.0 Totales: the amount the payments add up to. */
  montoTotalPagos?: string;
  timbre: {
    uuid: string;
    fechaTimbrado: string;
    rfcProvCertif: string;
    noCertificadoSat: string;
    sello: string;
    selloSat: string;
    /** The cadena original del complemento de certificación digital del SAT. */
    cadenaOriginalTfd: string;
  };
  /** What the QR encodes. */
  verificationUrl: string;
}

type Catalog = Readonly<Record<string, { name: string }>>;

const keyed = (catalog: Catalog, key: string | undefined): Keyed => ({
  key: key ?? '',
  name: key === undefined ? '' : (catalog[key]?.name ?? ''),
});

function taxes(parent: XmlElement | undefined, group: 'Traslados' | 'Retenciones'): PrintableTax[] {
  if (!parent) return [];
  const single = group === 'Traslados' ? 'Traslado' : 'Retencion';
  return childElements(parent, NS.cfdi, group)
    .flatMap((g) => childElements(g, NS.cfdi, single))
    .map((t) => ({
      impuesto: keyed(C_IMPUESTO, attr(t, 'Impuesto')),
      tipoFactor: attr(t, 'TipoFactor') ?? '',
      ...optional('tasaOCuota', attr(t, 'TasaOCuota')),
      base: attr(t, 'Base') ?? '',
      ...optional('importe', attr(t, 'Importe')),
    }));
}

/** `{ name: value }` when the value is there, `{}` otherwise (optional attributes stay absent). */
function optional<K extends string>(name: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [name]: value }) as { [P in K]?: string };
}

function one(parent: XmlElement, local: string, ns: string = NS.cfdi): XmlElement | undefined {
  return childElements(parent, ns, local)[0];
}

function conceptoOf(k: XmlElement) {
  const impuestos = one(k, 'Impuestos');
  return {
    claveProdServ: attr(k, 'ClaveProdServ') ?? '',
    ...optional('noIdentificacion', attr(k, 'NoIdentificacion')),
    cantidad: attr(k, 'Cantidad') ?? '',
    claveUnidad: attr(k, 'ClaveUnidad') ?? '',
    ...optional('unidad', attr(k, 'Unidad')),
    descripcion: attr(k, 'Descripcion') ?? '',
    valorUnitario: attr(k, 'ValorUnitario') ?? '',
    importe: attr(k, 'Importe') ?? '',
    ...optional('descuento', attr(k, 'Descuento')),
    objetoImp: keyed(C_OBJETO_IMP, attr(k, 'ObjetoImp')),
    traslados: taxes(impuestos, 'Traslados'),
    retenciones: taxes(impuestos, 'Retenciones'),
  };
}

function pagoOf(p: XmlElement) {
  return {
    fechaPago: attr(p, 'FechaPago') ?? '',
    formaDePagoP: keyed(C_FORMA_PAGO, attr(p, 'FormaDePagoP')),
    monedaP: attr(p, 'MonedaP') ?? '',
    ...optional('tipoCambioP', attr(p, 'TipoCambioP')),
    monto: attr(p, 'Monto') ?? '',
    ...optional('numOperacion', attr(p, 'NumOperacion')),
    trasladosP: childElements(p, NS.pago20, 'ImpuestosP')
      .flatMap((i) => childElements(i, NS.pago20, 'TrasladosP'))
      .flatMap((t) => childElements(t, NS.pago20, 'TrasladoP'))
      .map((t) => ({
        impuesto: keyed(C_IMPUESTO, attr(t, 'ImpuestoP')),
        tipoFactor: attr(t, 'TipoFactorP') ?? '',
        ...optional('tasaOCuota', attr(t, 'TasaOCuotaP')),
        base: attr(t, 'BaseP') ?? '',
        ...optional('importe', attr(t, 'ImporteP')),
      })),
    retencionesP: childElements(p, NS.pago20, 'ImpuestosP')
      .flatMap((i) => childElements(i, NS.pago20, 'RetencionesP'))
      .flatMap((r) => childElements(r, NS.pago20, 'RetencionP'))
      .map((r) => ({ impuesto: keyed(C_IMPUESTO, attr(r, 'ImpuestoP')), importe: attr(r, 'ImporteP') ?? '' })),
    documentos: childElements(p, NS.pago20, 'DoctoRelacionado').map(doctoOf),
  };
}

function doctoOf(d: XmlElement) {
  const serie = attr(d, 'Serie');
  const folio = attr(d, 'Folio');
  return {
    idDocumento: attr(d, 'IdDocumento') ?? '',
    ...optional('serieFolio', serie || folio ? [serie, folio].filter(Boolean).join('-') : undefined),
    monedaDR: attr(d, 'MonedaDR') ?? '',
    ...optional('equivalenciaDR', attr(d, 'EquivalenciaDR')),
    ...optional('numParcialidad', attr(d, 'NumParcialidad')),
    ...optional('impSaldoAnt', attr(d, 'ImpSaldoAnt')),
    ...optional('impPagado', attr(d, 'ImpPagado')),
    ...optional('impSaldoInsoluto', attr(d, 'ImpSaldoInsoluto')),
    objetoImpDR: keyed(C_OBJETO_IMP, attr(d, 'ObjetoImpDR')),
  };
}

function timbreOf(stamped: ReturnType<typeof parseStampedCfdi>) {
  return {
    uuid: stamped.tfd.uuid.toUpperCase(),
    fechaTimbrado: stamped.tfd.fechaTimbrado,
    rfcProvCertif: stamped.tfd.rfcProvCertif,
    noCertificadoSat: stamped.tfd.noCertificadoSAT,
    sello: stamped.sello,
    selloSat: stamped.tfd.selloSAT,
    cadenaOriginalTfd: stamped.tfdCadenaOriginal,
  };
}

/**
 * The printable model of a stamped CFDI 4.0 (Ingreso, Egreso, Pago with Pagos 2.0, or a global).
 * @throws CfdiError when the document has no valid TFD (only stamped documents are printed).
 */
export function printableCfdi(stampedXml: string): PrintableCfdi {
  const stamped = parseStampedCfdi(stampedXml);
  const c = stamped.comprobante;
  const a = (name: string) => attr(c, name);
  const emisor = one(c, 'Emisor')!;
  const receptor = one(c, 'Receptor')!;
  const global = one(c, 'InformacionGlobal');
  const conceptos = childElements(one(c, 'Conceptos')!, NS.cfdi, 'Concepto').map(conceptoOf);
  const impuestos = one(c, 'Impuestos');
  const pagosElement = childElements(c, NS.cfdi, 'Complemento')
    .flatMap((k) => childElements(k, NS.pago20, 'Pagos'))
    .at(0);
  const pagos = (pagosElement ? childElements(pagosElement, NS.pago20, 'Pago') : []).map(pagoOf);
  const totales = pagosElement && one(pagosElement, 'Totales', NS.pago20);
  const montoTotalPagos = totales && attr(totales, 'MontoTotalPagos');
  const total = a('Total') ?? '';
  const moneda = a('Moneda') ?? '';
  return {
    tipoDeComprobante: keyed(C_TIPO_DE_COMPROBANTE, a('TipoDeComprobante')),
    ...optional('serie', a('Serie')),
    ...optional('folio', a('Folio')),
    fecha: a('Fecha') ?? '',
    lugarExpedicion: a('LugarExpedicion') ?? '',
    ...(a('FormaPago') ? { formaPago: keyed(C_FORMA_PAGO, a('FormaPago')) } : {}),
    ...(a('MetodoPago') ? { metodoPago: keyed(C_METODO_PAGO, a('MetodoPago')) } : {}),
    moneda,
    ...optional('tipoCambio', a('TipoCambio')),
    exportacion: keyed(C_EXPORTACION, a('Exportacion')),
    subTotal: a('SubTotal') ?? '',
    ...optional('descuento', a('Descuento')),
    total,
    // A Pago's Total is 0 (moneda XXX): its amount is the payments' total, in pesos.
    totalEnLetra: montoTotalPagos ? amountInWords(montoTotalPagos, 'MXN') : amountInWords(total, moneda),
    noCertificado: a('NoCertificado') ?? '',
    ...(global
      ? {
          informacionGlobal: {
            periodicidad: keyed(C_PERIODICIDAD, attr(global, 'Periodicidad')),
            meses: keyed(C_MESES, attr(global, 'Meses')),
            año: attr(global, 'Año') ?? '',
          },
        }
      : {}),
    relacionados: childElements(c, NS.cfdi, 'CfdiRelacionados').map((r) => ({
      tipoRelacion: keyed(C_TIPO_RELACION, attr(r, 'TipoRelacion')),
      uuids: childElements(r, NS.cfdi, 'CfdiRelacionado').map((u) => attr(u, 'UUID') ?? ''),
    })),
    emisor: {
      rfc: attr(emisor, 'Rfc') ?? '',
      nombre: attr(emisor, 'Nombre') ?? '',
      regimenFiscal: keyed(C_REGIMEN_FISCAL, attr(emisor, 'RegimenFiscal')),
    },
    receptor: {
      rfc: attr(receptor, 'Rfc') ?? '',
      nombre: attr(receptor, 'Nombre') ?? '',
      domicilioFiscal: attr(receptor, 'DomicilioFiscalReceptor') ?? '',
      regimenFiscal: keyed(C_REGIMEN_FISCAL, attr(receptor, 'RegimenFiscalReceptor')),
      usoCfdi: keyed(C_USO_CFDI, attr(receptor, 'UsoCFDI')),
    },
    conceptos,
    ...optional('totalImpuestosTrasladados', impuestos && attr(impuestos, 'TotalImpuestosTrasladados')),
    ...optional('totalImpuestosRetenidos', impuestos && attr(impuestos, 'TotalImpuestosRetenidos')),
    pagos,
    ...optional('montoTotalPagos', montoTotalPagos),
    timbre: timbreOf(stamped),
    verificationUrl: satVerificationUrl({
      uuid: stamped.tfd.uuid,
      rfcEmisor: attr(emisor, 'Rfc') ?? '',
      rfcReceptor: attr(receptor, 'Rfc') ?? '',
      total,
      sello: stamped.sello,
    }),
  };
}
