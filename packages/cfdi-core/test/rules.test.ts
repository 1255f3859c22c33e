/**
 * The SAT rule engine, rule by rule: each case takes a valid document (frozen by cfdi-core, parsed
 * back as a PAC receives it), breaks one thing, and expects exactly that rule's code — while the
 * untouched document passes every rule. A rule without a case fails the coverage test at the end.
 *
 * @clock CFDI40136 compares the Año with today's year
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, test } from '@jest/globals';
import { freezeSample, sampleIngreso, TEST_EMISOR } from '@timbra/test-support';
import {
  attr,
  checkSatRules,
  childElements,
  freezeComprobante,
  NS,
  parseXml,
  SAT_RULES,
  setAttr,
  CLAVE_PROD_SERV_SHAPE,
  type InvoiceRequestInput,
  type Taxpayer,
  type XmlElement,
} from '../src/index.ts';
import { loadTestCsd } from '@timbra/test-support';
import { loadCatalogKeys } from '@timbra/cfdi-node';

const csd = loadTestCsd('EKU9003173C9');
const C = NS.cfdi;
const P = NS.pago20;

// ---- base documents -------------------------------------------------------------------------------

const concepto = (over: Record<string, unknown> = {}) => ({
  claveProdServ: '86121503',
  cantidad: '1',
  claveUnidad: 'E48',
  descripcion: 'Colegiatura',
  valorUnitario: '1000.00',
  objetoImp: '02',
  traslados: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.160000' }],
  ...over,
});

const UUID = '5FB2822E-396D-4725-8521-CDC4BDD20CCF';

const pagoRequest = () => ({
  ...sampleIngreso(),
  tipoDeComprobante: 'P' as const,
  moneda: 'XXX',
  formaPago: undefined,
  metodoPago: undefined,
  conceptos: undefined,
  receptor: { ...sampleIngreso().receptor, usoCFDI: 'CP01' },
  pago: {
    fechaPago: new Date(Date.now() - 3_600_000).toISOString(),
    formaDePagoP: '03',
    monedaP: 'MXN',
    monto: '580.00',
    doctosRelacionados: [
      {
        idDocumento: UUID,
        monedaDR: 'MXN',
        numParcialidad: 1,
        impSaldoAnt: '1160.00',
        impPagado: '580.00',
        objetoImpDR: '02',
        trasladosDR: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.160000' }],
      },
    ],
  },
});

const BASES = {
  ingreso: () => sampleIngreso({ conceptos: [concepto({ descuento: '10.00' })] }),
  egreso: () =>
    sampleIngreso({
      tipoDeComprobante: 'E',
      receptor: { ...sampleIngreso().receptor, usoCFDI: 'G02' },
      cfdiRelacionados: [{ tipoRelacion: '03', uuids: [UUID] }],
    }),
  retenciones: () =>
    sampleIngreso({
      receptor: {
        rfc: 'URE180429TM6',
        nombre: 'UNIVERSIDAD ROBOTICA ESPAÑOLA',
        domicilioFiscalReceptor: '86991',
        regimenFiscalReceptor: '601',
        usoCFDI: 'G03',
      },
      emisor: { ...TEST_EMISOR },
      conceptos: [
        concepto({
          retenciones: [
            { impuesto: '001', tipoFactor: 'Tasa', tasaOCuota: '0.100000' },
            { impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.106667' },
          ],
        }),
        concepto({ traslados: [{ impuesto: '002', tipoFactor: 'Exento' }], valorUnitario: '50.00' }),
      ],
    }),
  global: () =>
    sampleIngreso({
      receptor: {
        rfc: 'XAXX010101000',
        nombre: 'PUBLICO EN GENERAL',
        domicilioFiscalReceptor: '42501',
        regimenFiscalReceptor: '616',
        usoCFDI: 'S01',
      },
      informacionGlobal: {
        periodicidad: '01',
        meses: String(new Date().getMonth() + 1).padStart(2, '0'),
        año: new Date().getFullYear(),
      },
    }),
  usd: () => sampleIngreso({ moneda: 'USD', tipoCambio: '17.250000' }),
  pago: () => pagoRequest(),
  pagoRetenciones: () => {
    const pago = pagoRequest();
    const [docto] = pago.pago.doctosRelacionados;
    return {
      ...pago,
      pago: {
        ...pago.pago,
        doctosRelacionados: [
          {
            ...docto!,
            retencionesDR: [
              { impuesto: '001', tipoFactor: 'Tasa', tasaOCuota: '0.100000' },
              { impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.106667' },
            ],
          },
        ],
      },
    };
  },
} satisfies Record<string, () => InvoiceRequestInput>;

type Base = keyof typeof BASES;
const cache = new Map<Base, string>();
function documentOf(base: Base): XmlElement {
  let xml = cache.get(base);
  if (!xml) {
    xml = freezeComprobante(BASES[base](), csd).xml;
    cache.set(base, xml);
  }
  return parseXml(xml);
}

// ---- navigating and breaking a document -----------------------------------------------------------

/** The element at a path of local names under Comprobante ('Receptor', 'Conceptos/Concepto'…). */
function node(doc: XmlElement, path: string): XmlElement {
  let current = doc;
  for (const step of path.split('/').filter(Boolean)) {
    const [local, index] = step.split('#') as [string, string | undefined];
    const ns = [
      'Pagos',
      'Pago',
      'Totales',
      'DoctoRelacionado',
      'ImpuestosDR',
      'TrasladosDR',
      'TrasladoDR',
      'RetencionesDR',
      'RetencionDR',
      'ImpuestosP',
      'TrasladosP',
      'TrasladoP',
      'RetencionesP',
      'RetencionP',
    ].includes(local)
      ? P
      : C;
    const found = childElements(current, ns, local)[Number(index ?? 0)];
    if (!found) throw new Error(`no ${step} in ${path}`);
    current = found;
  }
  return current;
}
const set = (path: string, name: string, value: string) => (doc: XmlElement) => setAttr(node(doc, path), name, value);
const unset = (path: string, name: string) => (doc: XmlElement) => {
  const el = node(doc, path);
  el.attrs = el.attrs.filter(([k]) => k !== name);
};
const drop = (path: string, local: string) => (doc: XmlElement) => {
  const el = node(doc, path);
  el.children = el.children.filter((c) => !(c.kind === 'element' && c.local === local));
};
const all =
  (...fns: ((doc: XmlElement) => void)[]) =>
  (doc: XmlElement) =>
    fns.forEach((f) => f(doc));

const CONCEPTO = 'Conceptos/Concepto';
const TRASLADO = `${CONCEPTO}/Impuestos/Traslados/Traslado`;
const RETENCION = `${CONCEPTO}/Impuestos/Retenciones/Retencion`;
const PAGO = 'Complemento/Pagos/Pago';
const DOCTO = `${PAGO}/DoctoRelacionado`;
const TOTALES = 'Complemento/Pagos/Totales';
const TRASLADO_DR = `${DOCTO}/ImpuestosDR/TrasladosDR/TrasladoDR`;
const RETENCION_DR = `${DOCTO}/ImpuestosDR/RetencionesDR/RetencionDR`;
const TRASLADO_P = `${PAGO}/ImpuestosP/TrasladosP/TrasladoP`;
const RETENCION_P = `${PAGO}/ImpuestosP/RetencionesP/RetencionP`;

const REGISTRY: Record<string, Taxpayer> = {
  EKU9003173C9: {
    rfc: 'EKU9003173C9',
    name: 'ESCUELA KEMPER URGATE',
    postalCode: '42501',
    regimenes: ['601'],
    status: 'active',
  },
  URE180429TM6: {
    rfc: 'URE180429TM6',
    name: 'UNIVERSIDAD ROBOTICA ESPAÑOLA',
    postalCode: '86991',
    regimenes: ['601'],
    status: 'active',
  },
  CACX7605101P8: {
    rfc: 'CACX7605101P8',
    name: 'XOCHILT CASAS CHAVEZ',
    postalCode: '36257',
    regimenes: ['612'],
    status: 'active',
  },
};
const registry = { taxpayer: (rfc: string) => REGISTRY[rfc] };

interface Case {
  rule: string;
  base: Base;
  breaks: (doc: XmlElement) => void;
  ctx?: Parameters<typeof checkSatRules>[1];
}

// The SAT's code for each condition (matriz de errores CFDI 4.0 and Pagos 2.0, as PACs answer them):
// each case breaks one condition of a valid document and expects that code.
// prettier-ignore
const CASES: Case[] = [
  { rule: 'CFDI40101', base: 'ingreso', breaks: set('', 'Fecha', '2026-13-01T10:00:00') },
  { rule: 'CFDI40103', base: 'pago', breaks: set('', 'FormaPago', '03') },
  { rule: 'CFDI40104', base: 'ingreso', breaks: set('', 'FormaPago', '77') },
  { rule: 'CFDI40105', base: 'ingreso', breaks: set('', 'MetodoPago', 'PPD') },
  { rule: 'CFDI40107', base: 'ingreso', breaks: set('', 'SubTotal', '1000.000') },
  { rule: 'CFDI40108', base: 'ingreso', breaks: set('', 'SubTotal', '999.00') },
  { rule: 'CFDI40109', base: 'pago', breaks: set('', 'SubTotal', '1') },
  { rule: 'CFDI40110', base: 'ingreso', breaks: set('', 'Descuento', '2000.00') },
  { rule: 'CFDI40111', base: 'ingreso', breaks: set('', 'Descuento', '9.00') },
  { rule: 'CFDI40112', base: 'ingreso', breaks: all(set('', 'Descuento', '10.001'), set(CONCEPTO, 'Descuento', '10.001')) },
  { rule: 'CFDI40113', base: 'ingreso', breaks: set('', 'Moneda', 'ZZZ') },
  { rule: 'CFDI40114', base: 'ingreso', breaks: set('', 'TipoCambio', '17.5') },
  { rule: 'CFDI40115', base: 'usd', breaks: unset('', 'TipoCambio') },
  { rule: 'CFDI40116', base: 'pago', breaks: set('', 'TipoCambio', '1') },
  { rule: 'CFDI40117', base: 'usd', breaks: set('', 'TipoCambio', '17.1234567') },
  { rule: 'CFDI40119', base: 'ingreso', breaks: set('', 'Total', '9999.99') },
  { rule: 'CFDI40120', base: 'ingreso', breaks: all(set('', 'TipoDeComprobante', 'I'), (d) => { setAttr(d, 'Total', '1000000000000000000'); }) },
  { rule: 'CFDI40121', base: 'ingreso', breaks: set('', 'TipoDeComprobante', 'T') },
  { rule: 'CFDI40122', base: 'ingreso', breaks: set('', 'Exportacion', '02') },
  { rule: 'CFDI40123', base: 'ingreso', breaks: set('', 'Exportacion', '09') },
  { rule: 'CFDI40124', base: 'ingreso', breaks: set('', 'MetodoPago', 'PIP') },
  { rule: 'CFDI40125', base: 'pago', breaks: set('', 'MetodoPago', 'PUE') },
  { rule: 'CFDI40126', base: 'ingreso', breaks: set('', 'LugarExpedicion', '4250') },
  { rule: 'CFDI40126', base: 'ingreso', breaks: set('', 'LugarExpedicion', '01001'), ctx: { codigosPostales: new Set(['42501', '36257']) } },
  { rule: 'CFDI40130', base: 'global', breaks: drop('', 'InformacionGlobal') },
  { rule: 'CFDI40131', base: 'global', breaks: set('InformacionGlobal', 'Periodicidad', '06') },
  { rule: 'CFDI40132', base: 'global', breaks: all(set('InformacionGlobal', 'Periodicidad', '05'), set('InformacionGlobal', 'Meses', '13')) },
  { rule: 'CFDI40133', base: 'global', breaks: set('InformacionGlobal', 'Meses', '19') },
  { rule: 'CFDI40134', base: 'global', breaks: set('InformacionGlobal', 'Meses', '14') },
  { rule: 'CFDI40135', base: 'global', breaks: all(set('Emisor', 'RegimenFiscal', '621'), set('InformacionGlobal', 'Periodicidad', '05'), set('InformacionGlobal', 'Meses', '01')) },
  { rule: 'CFDI40136', base: 'global', breaks: set('InformacionGlobal', 'Año', '2019') },
  { rule: 'CFDI40137', base: 'egreso', breaks: set('CfdiRelacionados', 'TipoRelacion', '09') },
  { rule: 'CFDI40138', base: 'ingreso', breaks: set('Emisor', 'Rfc', 'AAA010101AAA'), ctx: registry },
  { rule: 'CFDI40139', base: 'ingreso', breaks: set('Emisor', 'Nombre', 'ESCUELA KEMPER URGATE SA DE CV'), ctx: registry },
  { rule: 'CFDI40140', base: 'ingreso', breaks: set('Emisor', 'RegimenFiscal', '699') },
  { rule: 'CFDI40141', base: 'ingreso', breaks: set('Emisor', 'RegimenFiscal', '612') },
  { rule: 'CFDI40143', base: 'ingreso', breaks: set('Receptor', 'Rfc', 'MAHJ280603TI9'), ctx: registry },
  { rule: 'CFDI40143', base: 'ingreso', breaks: set('Receptor', 'Rfc', 'NOT-AN-RFC') },
  { rule: 'CFDI40145', base: 'ingreso', breaks: set('Receptor', 'Nombre', 'XOCHITL CASAS CHAVEZ'), ctx: registry },
  { rule: 'CFDI40146', base: 'ingreso', breaks: set('Receptor', 'Nombre', 'Publico  en general') },
  { rule: 'CFDI40147', base: 'ingreso', breaks: set('Receptor', 'DomicilioFiscalReceptor', '36258'), ctx: registry },
  { rule: 'CFDI40147', base: 'ingreso', breaks: set('Receptor', 'DomicilioFiscalReceptor', '3625A') },
  { rule: 'CFDI40149', base: 'global', breaks: set('Receptor', 'DomicilioFiscalReceptor', '01000') },
  { rule: 'CFDI40150', base: 'ingreso', breaks: all(set('Receptor', 'Rfc', 'XEXX010101000'), set('Receptor', 'ResidenciaFiscal', 'XYZ')) },
  { rule: 'CFDI40151', base: 'ingreso', breaks: set('Receptor', 'ResidenciaFiscal', 'USA') },
  { rule: 'CFDI40152', base: 'ingreso', breaks: all(set('Receptor', 'Rfc', 'XEXX010101000'), set('Receptor', 'ResidenciaFiscal', 'MEX')) },
  { rule: 'CFDI40153', base: 'ingreso', breaks: all(set('Receptor', 'Rfc', 'XEXX010101000'), set('Receptor', 'NumRegIdTrib', '123456789')) },
  { rule: 'CFDI40154', base: 'ingreso', breaks: set('Receptor', 'NumRegIdTrib', '123456789') },
  { rule: 'CFDI40157', base: 'ingreso', breaks: set('Receptor', 'RegimenFiscalReceptor', '699') },
  { rule: 'CFDI40158', base: 'ingreso', breaks: set('Receptor', 'RegimenFiscalReceptor', '601') },
  { rule: 'CFDI40159', base: 'ingreso', breaks: set('Receptor', 'RegimenFiscalReceptor', '605'), ctx: registry },
  { rule: 'CFDI40159', base: 'global', breaks: set('Receptor', 'RegimenFiscalReceptor', '605') },
  { rule: 'CFDI40160', base: 'ingreso', breaks: set('Receptor', 'UsoCFDI', 'CP01') },
  { rule: 'CFDI40161', base: 'ingreso', breaks: all(set('Receptor', 'RegimenFiscalReceptor', '605'), set('Receptor', 'UsoCFDI', 'G03')) },
  { rule: 'CFDI40161', base: 'global', breaks: set('Receptor', 'UsoCFDI', 'G03') },
  { rule: 'CFDI40162', base: 'ingreso', breaks: set(CONCEPTO, 'ClaveProdServ', '00000000') },
  { rule: 'CFDI40162', base: 'ingreso', breaks: set(CONCEPTO, 'ClaveProdServ', '01010101'), ctx: { clavesProdServ: new Set(['86121503']) } },
  { rule: 'CFDI40165', base: 'ingreso', breaks: set(CONCEPTO, 'ClaveUnidad', 'QQQ') },
  { rule: 'CFDI40166', base: 'ingreso', breaks: all(set(CONCEPTO, 'ValorUnitario', '0.00'), set(CONCEPTO, 'Importe', '0.00')) },
  { rule: 'CFDI40167', base: 'ingreso', breaks: set(CONCEPTO, 'Importe', '1500.02') },
  { rule: 'CFDI40167', base: 'ingreso', breaks: all(set(CONCEPTO, 'Cantidad', '1.000'), set(CONCEPTO, 'Importe', '1000.52')) },
  { rule: 'CFDI40169', base: 'ingreso', breaks: set(CONCEPTO, 'Descuento', '1000.01') },
  { rule: 'CFDI40170', base: 'ingreso', breaks: set(CONCEPTO, 'ObjetoImp', '07') },
  { rule: 'CFDI40171', base: 'ingreso', breaks: drop(CONCEPTO, 'Impuestos') },
  { rule: 'CFDI40172', base: 'ingreso', breaks: set(CONCEPTO, 'ObjetoImp', '01') },
  { rule: 'CFDI40174', base: 'ingreso', breaks: set(TRASLADO, 'Base', '0') },
  { rule: 'CFDI40175', base: 'ingreso', breaks: set(TRASLADO, 'Impuesto', '001') },
  { rule: 'CFDI40176', base: 'ingreso', breaks: set(TRASLADO, 'TipoFactor', 'Fijo') },
  { rule: 'CFDI40177', base: 'retenciones', breaks: set('Conceptos/Concepto#1/Impuestos/Traslados/Traslado', 'Importe', '0.00') },
  { rule: 'CFDI40178', base: 'ingreso', breaks: unset(TRASLADO, 'Importe') },
  { rule: 'CFDI40179', base: 'ingreso', breaks: set(TRASLADO, 'TasaOCuota', '0.150000') },
  { rule: 'CFDI40180', base: 'ingreso', breaks: set(TRASLADO, 'Importe', '157.00') },
  { rule: 'CFDI40181', base: 'retenciones', breaks: set(RETENCION, 'Base', '0') },
  { rule: 'CFDI40182', base: 'retenciones', breaks: set(RETENCION, 'Impuesto', '004') },
  { rule: 'CFDI40183', base: 'retenciones', breaks: set(RETENCION, 'TipoFactor', 'Fija') },
  { rule: 'CFDI40184', base: 'retenciones', breaks: set(RETENCION, 'TipoFactor', 'Exento') },
  { rule: 'CFDI40185', base: 'retenciones', breaks: all(set(RETENCION, 'Impuesto', '003'), set(RETENCION, 'TasaOCuota', '0.030000')) },
  { rule: 'CFDI40185', base: 'retenciones', breaks: set(RETENCION, 'TasaOCuota', '0.400000') },
  { rule: 'CFDI40186', base: 'retenciones', breaks: set(RETENCION, 'Importe', '99.00') },
  { rule: 'CFDI40201', base: 'ingreso', breaks: drop('', 'Impuestos') },
  { rule: 'CFDI40203', base: 'retenciones', breaks: set('Impuestos', 'TotalImpuestosRetenidos', '1.00') },
  { rule: 'CFDI40205', base: 'ingreso', breaks: set('Impuestos', 'TotalImpuestosTrasladados', '158.00') },
  { rule: 'CFDI40211', base: 'retenciones', breaks: set('Impuestos/Retenciones/Retencion', 'Importe', '1.00') },
  { rule: 'CFDI40215', base: 'ingreso', breaks: set('Impuestos/Traslados/Traslado', 'Base', '990.01') },
  { rule: 'CFDI40221', base: 'ingreso', breaks: set('Impuestos/Traslados/Traslado', 'Importe', '157.00') },
  // Pagos 2.0: the comprobante a Pago rides on
  { rule: 'CRP20102', base: 'pago', breaks: set('', 'Exportacion', '02') },
  { rule: 'CRP20103', base: 'pago', breaks: set('', 'SubTotal', '1') },
  { rule: 'CRP20104', base: 'pago', breaks: set('', 'Moneda', 'MXN') },
  { rule: 'CRP20105', base: 'pago', breaks: set('', 'FormaPago', '03') },
  { rule: 'CRP20106', base: 'pago', breaks: set('', 'MetodoPago', 'PUE') },
  { rule: 'CRP20107', base: 'pago', breaks: set('', 'CondicionesDePago', 'Contado') },
  { rule: 'CRP20108', base: 'pago', breaks: set('', 'Descuento', '0') },
  { rule: 'CRP20109', base: 'pago', breaks: set('', 'TipoCambio', '1') },
  { rule: 'CRP20110', base: 'pago', breaks: set('', 'Total', '580.00') },
  { rule: 'CRP20111', base: 'pago', breaks: (d) => { const cs = node(d, 'Conceptos'); cs.children.push(node(d, CONCEPTO)); } },
  { rule: 'CRP20113', base: 'pago', breaks: set(CONCEPTO, 'ClaveProdServ', '01010101') },
  { rule: 'CRP20114', base: 'pago', breaks: set(CONCEPTO, 'NoIdentificacion', 'P-1') },
  { rule: 'CRP20115', base: 'pago', breaks: set(CONCEPTO, 'Cantidad', '2') },
  { rule: 'CRP20116', base: 'pago', breaks: set(CONCEPTO, 'ClaveUnidad', 'E48') },
  { rule: 'CRP20117', base: 'pago', breaks: set(CONCEPTO, 'Unidad', 'Actividad') },
  { rule: 'CRP20118', base: 'pago', breaks: set(CONCEPTO, 'Descripcion', 'Abono') },
  { rule: 'CRP20119', base: 'pago', breaks: set(CONCEPTO, 'ValorUnitario', '1') },
  { rule: 'CRP20120', base: 'pago', breaks: set(CONCEPTO, 'Importe', '1') },
  { rule: 'CRP20121', base: 'pago', breaks: set(CONCEPTO, 'Descuento', '0') },
  { rule: 'CRP20122', base: 'pago', breaks: set(CONCEPTO, 'ObjetoImp', '02') },
  { rule: 'CRP20123', base: 'pago', breaks: (d) => { node(d, CONCEPTO).children.push(node(documentOf('ingreso'), `${CONCEPTO}/Impuestos`)); } },
  { rule: 'CRP20999', base: 'pago', breaks: drop('Complemento', 'Pagos') },
  // Totales
  { rule: 'CRP20201', base: 'pagoRetenciones', breaks: set(TOTALES, 'TotalRetencionesIVA', '1.00') },
  { rule: 'CRP20202', base: 'pagoRetenciones', breaks: unset(TOTALES, 'TotalRetencionesISR') },
  { rule: 'CRP20203', base: 'pagoRetenciones', breaks: set(TOTALES, 'TotalRetencionesIEPS', '1.00') },
  { rule: 'CRP20204', base: 'pago', breaks: set(TOTALES, 'TotalTrasladosBaseIVA16', '500.01') },
  { rule: 'CRP20205', base: 'pago', breaks: set(TOTALES, 'TotalTrasladosImpuestoIVA16', '80.01') },
  { rule: 'CRP20206', base: 'pago', breaks: set(TOTALES, 'TotalTrasladosBaseIVA8', '500.00') },
  { rule: 'CRP20207', base: 'pago', breaks: set(TOTALES, 'TotalTrasladosImpuestoIVA8', '40.00') },
  { rule: 'CRP20208', base: 'pago', breaks: set(TOTALES, 'TotalTrasladosBaseIVA0', '500.00') },
  { rule: 'CRP20209', base: 'pago', breaks: set(TOTALES, 'TotalTrasladosImpuestoIVA0', '0.00') },
  { rule: 'CRP20210', base: 'pago', breaks: set(TOTALES, 'TotalTrasladosBaseIVAExento', '500.00') },
  { rule: 'CRP20211', base: 'pago', breaks: set(TOTALES, 'MontoTotalPagos', '581.00') },
  // each Pago
  { rule: 'CRP20212', base: 'pago', breaks: set(PAGO, 'FormaDePagoP', '99') },
  { rule: 'CRP20213', base: 'pago', breaks: set(PAGO, 'MonedaP', 'XXX') },
  { rule: 'CRP20214', base: 'pago', breaks: all(set(PAGO, 'MonedaP', 'USD'), unset(PAGO, 'TipoCambioP')) },
  { rule: 'CRP20215', base: 'pago', breaks: set(PAGO, 'TipoCambioP', '17.00') },
  { rule: 'CRP20217', base: 'pago', breaks: set(PAGO, 'Monto', '579.99') },
  { rule: 'CRP20218', base: 'pago', breaks: set(PAGO, 'Monto', '0') },
  { rule: 'CRP20219', base: 'pago', breaks: set(PAGO, 'Monto', '580.001') },
  // each related document
  { rule: 'CRP20236', base: 'pago', breaks: set(DOCTO, 'MonedaDR', 'XXX') },
  { rule: 'CRP20237', base: 'pago', breaks: all(set(DOCTO, 'MonedaDR', 'USD'), unset(DOCTO, 'EquivalenciaDR')) },
  { rule: 'CRP20238', base: 'pago', breaks: set(DOCTO, 'EquivalenciaDR', '2') },
  { rule: 'CRP20239', base: 'pago', breaks: set(DOCTO, 'ImpSaldoAnt', '0') },
  { rule: 'CRP20240', base: 'pago', breaks: all(set(DOCTO, 'ImpSaldoAnt', '1160.001'), set(DOCTO, 'ImpSaldoInsoluto', '580.001')) },
  { rule: 'CRP20241', base: 'pago', breaks: set(DOCTO, 'ImpPagado', '0') },
  { rule: 'CRP20242', base: 'pago', breaks: all(set(DOCTO, 'ImpPagado', '580.001'), set(DOCTO, 'ImpSaldoInsoluto', '579.999')) },
  { rule: 'CRP20243', base: 'pago', breaks: all(set(DOCTO, 'ImpSaldoAnt', '1160.001'), set(DOCTO, 'ImpSaldoInsoluto', '580.001')) },
  { rule: 'CRP20244', base: 'pago', breaks: set(DOCTO, 'ImpSaldoInsoluto', '0.00') },
  { rule: 'CRP20245', base: 'pago', breaks: set(DOCTO, 'ObjetoImpDR', '09') },
  { rule: 'CRP20246', base: 'pago', breaks: drop(DOCTO, 'ImpuestosDR') },
  { rule: 'CRP20247', base: 'pago', breaks: set(DOCTO, 'ObjetoImpDR', '01') },
  { rule: 'CRP20248', base: 'pago', breaks: drop(`${DOCTO}/ImpuestosDR`, 'TrasladosDR') },
  // the related documents' retenciones and traslados
  { rule: 'CRP20249', base: 'pagoRetenciones', breaks: set(RETENCION_DR, 'BaseDR', '0') },
  { rule: 'CRP20250', base: 'pagoRetenciones', breaks: set(RETENCION_DR, 'ImpuestoDR', '004') },
  { rule: 'CRP20251', base: 'pagoRetenciones', breaks: set(RETENCION_DR, 'TipoFactorDR', 'Fija') },
  { rule: 'CRP20252', base: 'pagoRetenciones', breaks: set(RETENCION_DR, 'TipoFactorDR', 'Exento') },
  { rule: 'CRP20253', base: 'pagoRetenciones', breaks: set(RETENCION_DR, 'TasaOCuotaDR', '0.400000') },
  { rule: 'CRP20254', base: 'pagoRetenciones', breaks: set(RETENCION_DR, 'ImporteDR', '9.00') },
  { rule: 'CRP20255', base: 'pago', breaks: set(TRASLADO_DR, 'BaseDR', '0') },
  { rule: 'CRP20256', base: 'pago', breaks: set(TRASLADO_DR, 'ImpuestoDR', '004') },
  { rule: 'CRP20257', base: 'pago', breaks: set(TRASLADO_DR, 'TipoFactorDR', 'Fija') },
  { rule: 'CRP20258', base: 'pago', breaks: set(TRASLADO_DR, 'TipoFactorDR', 'Exento') },
  { rule: 'CRP20259', base: 'pago', breaks: unset(TRASLADO_DR, 'ImporteDR') },
  { rule: 'CRP20260', base: 'pago', breaks: set(TRASLADO_DR, 'TasaOCuotaDR', '0.150000') },
  { rule: 'CRP20261', base: 'pago', breaks: set(TRASLADO_DR, 'ImporteDR', '90.00') },
  // the Pago's own taxes
  { rule: 'CRP20262', base: 'pagoRetenciones', breaks: set(RETENCION_P, 'ImpuestoP', '004') },
  { rule: 'CRP20263', base: 'pagoRetenciones', breaks: set(RETENCION_P, 'ImpuestoP', '002') },
  { rule: 'CRP20265', base: 'pagoRetenciones', breaks: set(RETENCION_P, 'ImporteP', '1.00') },
  { rule: 'CRP20266', base: 'pago', breaks: set(TRASLADO_P, 'TipoFactorP', 'Exento') },
  { rule: 'CRP20268', base: 'pago', breaks: set(TRASLADO_P, 'BaseP', '500.01') },
  { rule: 'CRP20270', base: 'pago', breaks: set(TRASLADO_P, 'ImpuestoP', '001') },
  { rule: 'CRP20272', base: 'pago', breaks: set(TRASLADO_P, 'TasaOCuotaP', '0.150000') },
  { rule: 'CRP20274', base: 'pago', breaks: set(TRASLADO_P, 'ImporteP', '80.01') },
];

describe('every base document passes every rule', () => {
  test.each(Object.keys(BASES) as Base[])('%s', (base) => {
    expect(checkSatRules(documentOf(base), { ...registry, now: new Date() })).toEqual([]);
  });
});

describe('each rule fires on the document that breaks it', () => {
  test.each(CASES.map((c, i) => [`${c.rule} #${i}`, c] as const))('%s', (_name, c) => {
    const doc = documentOf(c.base);
    expect(checkSatRules(doc, c.ctx)).toEqual([]);
    c.breaks(doc);
    const codes = checkSatRules(doc, c.ctx).map((v) => v.rule);
    expect(codes).toContain(c.rule);
  });
});

test('every rule has a case: a code checked in several parts has a case for each', () => {
  const count = (codes: string[]) => codes.reduce((m, c) => m.set(c, (m.get(c) ?? 0) + 1), new Map<string, number>());
  const cases = count(CASES.map((c) => c.rule));
  const rules = count(SAT_RULES.filter((r) => r.code !== 'CFDI40118').map((r) => r.code));
  const short = [...rules].filter(([code, n]) => (cases.get(code) ?? 0) < n).map(([code]) => code);
  expect(short).toEqual([]);
});

test('rules are in the order of their SAT codes, each condition once, and every violation names its node', () => {
  const codes = SAT_RULES.map((r) => r.code);
  expect(codes.every((c) => /^(CFDI40|CRP20)\d{3}$/.test(c))).toBe(true);
  expect(codes).toEqual([...codes].sort());
  expect(new Set(SAT_RULES.map((r) => `${r.code} ${r.node} ${r.en}`)).size).toBe(SAT_RULES.length);
  const doc = documentOf('ingreso');
  setAttr(node(doc, 'Receptor'), 'UsoCFDI', 'ZZZ');
  const [violation] = checkSatRules(doc);
  expect(violation).toMatchObject({ rule: 'CFDI40160', path: '/cfdi:Comprobante/cfdi:Receptor/@UsoCFDI' });
  expect(violation?.es).toMatch(/c_UsoCFDI/);
  expect(attr(doc, 'Version')).toBe('4.0');
  // A repeated node is named with its XPath position, and so is what lies under it.
  const two = documentOf('retenciones');
  setAttr(node(two, 'Conceptos/Concepto#1/Impuestos/Traslados/Traslado'), 'TipoFactor', 'Cuota');
  expect(checkSatRules(two).map((v) => v.path)).toContain(
    '/cfdi:Comprobante/cfdi:Conceptos/cfdi:Concepto[2]/cfdi:Impuestos/cfdi:Traslados/cfdi:Traslado[1]/@TasaOCuota',
  );
});

test('each run of the rules reads the document as it is then (nothing gathered in one run outlives it)', () => {
  const doc = documentOf('retenciones');
  expect(checkSatRules(doc)).toEqual([]);
  // The same tree, a concepto's retenciones removed: the comprobante's Retenciones no longer sum them.
  drop('Conceptos/Concepto#0/Impuestos', 'Retenciones')(doc);
  expect(checkSatRules(doc).map((v) => v.rule)).toContain('CFDI40211');
});

test('a frozen sample is the same as the base: freezing runs the rules', () => {
  expect(() => freezeSample({ exportacion: '02' })).toThrow(/CFDI40122/);
});

describe('the operator’s catalogues (c_ClaveProdServ, c_CodigoPostal)', () => {
  it('are read from a CSV or text file, key in the first column, headers skipped', () => {
    const dir = mkdtempSync(join(tmpdir(), 'timbra-cat-'));
    try {
      const file = join(dir, 'claves.csv');
      writeFileSync(file, 'c_ClaveProdServ,Descripción\n"86121503","Colegiaturas"\n01010101,No existe\n\n');
      expect([...loadCatalogKeys(file, CLAVE_PROD_SERV_SHAPE)]).toEqual(['86121503', '01010101']);
      writeFileSync(file, 'only a title\n');
      expect(() => loadCatalogKeys(file, CLAVE_PROD_SERV_SHAPE)).toThrow(/holds no key/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('given in the context, the rules and freezing check against them, and nothing outlives the call', () => {
    const doc = documentOf('ingreso');
    const catalogs = { clavesProdServ: new Set(['01010101']), codigosPostales: new Set(['42501']) };
    expect(checkSatRules(doc, catalogs).map((v) => v.rule)).toEqual(['CFDI40147', 'CFDI40162']);
    expect(() => freezeComprobante(BASES.ingreso(), csd, catalogs)).toThrow(/CFDI40162/);
    expect(checkSatRules(doc)).toEqual([]);
    expect(() => freezeComprobante(BASES.ingreso(), csd)).not.toThrow();
  });
});
