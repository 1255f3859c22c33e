import { NS } from '../xml/xml-node.ts';

/**
 * The SAT's cadena original XSLT, transcribed as data: for each element the XSLT has a template for,
 * the ordered steps it takes. `cadenaOriginal` interprets these tables over an `XmlElement` tree.
 *
 * Steps mirror XSLT constructs one-for-one so the tables can be checked line by line against
 * `cadenaoriginal_4_0.xslt`, `Pagos20.xslt` and `cadenaoriginal_TFD_1_1.xslt`:
 * - `r` / `o`: `call-template Requerido / Opcional` on an attribute of the current node;
 * - `each`: `for-each select="a/b/c"` over a child path, running nested steps on each match;
 * - `apply`: `apply-templates select="a/b"` — dispatch each match to its own template;
 * - `applyChildren`: `apply-templates select="./*"` (Complemento, ComplementoConcepto).
 */
export type Step =
  | { r: string }
  | { o: string }
  | { each: readonly (readonly [string, string])[]; steps: readonly Step[] }
  | { apply: readonly (readonly [string, string])[] }
  | { applyChildren: true };

const C = NS.cfdi;
const P = NS.pago20;
const r = (name: string): Step => ({ r: name });
const o = (name: string): Step => ({ o: name });
const path = (ns: string, ...locals: string[]) => locals.map((l) => [ns, l] as const);

/** Templates of `cadenaoriginal_4_0.xslt` (with Pagos 2.0), keyed by `namespace|local`. */
// prettier-ignore
export const CFDI_TEMPLATES: ReadonlyMap<string, readonly Step[]> = new Map<string, readonly Step[]>([
  [
    `${C}|Comprobante`,
    [
      r('Version'), o('Serie'), o('Folio'), r('Fecha'), o('FormaPago'), r('NoCertificado'),
      o('CondicionesDePago'), r('SubTotal'), o('Descuento'), r('Moneda'), o('TipoCambio'), r('Total'),
      r('TipoDeComprobante'), r('Exportacion'), o('MetodoPago'), r('LugarExpedicion'), o('Confirmacion'),
      { apply: path(C, 'InformacionGlobal') },
      { apply: path(C, 'CfdiRelacionados') },
      { apply: path(C, 'Emisor') },
      { apply: path(C, 'Receptor') },
      { apply: path(C, 'Conceptos') },
      { apply: path(C, 'Impuestos') },
      { apply: path(C, 'Complemento') },
    ],
  ],
  [`${C}|InformacionGlobal`, [r('Periodicidad'), r('Meses'), r('Año')]],
  [`${C}|CfdiRelacionados`, [r('TipoRelacion'), { each: path(C, 'CfdiRelacionado'), steps: [r('UUID')] }]],
  [`${C}|Emisor`, [r('Rfc'), r('Nombre'), r('RegimenFiscal'), o('FacAtrAdquirente')]],
  [
    `${C}|Receptor`,
    [
      r('Rfc'), r('Nombre'), r('DomicilioFiscalReceptor'), o('ResidenciaFiscal'), o('NumRegIdTrib'),
      r('RegimenFiscalReceptor'), r('UsoCFDI'),
    ],
  ],
  [`${C}|Conceptos`, [{ apply: path(C, 'Concepto') }]],
  [
    `${C}|Concepto`,
    [
      r('ClaveProdServ'), o('NoIdentificacion'), r('Cantidad'), r('ClaveUnidad'), o('Unidad'), r('Descripcion'),
      r('ValorUnitario'), r('Importe'), o('Descuento'), r('ObjetoImp'),
      {
        each: path(C, 'Impuestos', 'Traslados', 'Traslado'),
        steps: [r('Base'), r('Impuesto'), r('TipoFactor'), o('TasaOCuota'), o('Importe')],
      },
      {
        each: path(C, 'Impuestos', 'Retenciones', 'Retencion'),
        steps: [r('Base'), r('Impuesto'), r('TipoFactor'), r('TasaOCuota'), r('Importe')],
      },
      { apply: path(C, 'ACuentaTerceros') },
      { apply: path(C, 'InformacionAduanera') },
      { apply: path(C, 'CuentaPredial') },
      { apply: path(C, 'ComplementoConcepto') },
      { apply: path(C, 'Parte') },
    ],
  ],
  [
    `${C}|ACuentaTerceros`,
    [r('RfcACuentaTerceros'), r('NombreACuentaTerceros'), r('RegimenFiscalACuentaTerceros'), r('DomicilioFiscalACuentaTerceros')],
  ],
  [`${C}|InformacionAduanera`, [r('NumeroPedimento')]],
  [`${C}|CuentaPredial`, [r('Numero')]],
  [`${C}|ComplementoConcepto`, [{ applyChildren: true }]],
  [
    `${C}|Parte`,
    [
      r('ClaveProdServ'), o('NoIdentificacion'), r('Cantidad'), o('Unidad'), r('Descripcion'), o('ValorUnitario'),
      o('Importe'), { apply: path(C, 'InformacionAduanera') },
    ],
  ],
  [`${C}|Complemento`, [{ applyChildren: true }]],
  [
    `${C}|Impuestos`,
    [
      { each: path(C, 'Retenciones', 'Retencion'), steps: [r('Impuesto'), r('Importe')] },
      o('TotalImpuestosRetenidos'),
      {
        each: path(C, 'Traslados', 'Traslado'),
        steps: [r('Base'), r('Impuesto'), r('TipoFactor'), o('TasaOCuota'), o('Importe')],
      },
      o('TotalImpuestosTrasladados'),
    ],
  ],
  // Pagos 2.0 (Pagos20.xslt)
  [`${P}|Pagos`, [r('Version'), { apply: path(P, 'Totales') }, { apply: path(P, 'Pago') }]],
  [
    `${P}|Totales`,
    [
      o('TotalRetencionesIVA'), o('TotalRetencionesISR'), o('TotalRetencionesIEPS'), o('TotalTrasladosBaseIVA16'),
      o('TotalTrasladosImpuestoIVA16'), o('TotalTrasladosBaseIVA8'), o('TotalTrasladosImpuestoIVA8'),
      o('TotalTrasladosBaseIVA0'), o('TotalTrasladosImpuestoIVA0'), o('TotalTrasladosBaseIVAExento'),
      r('MontoTotalPagos'),
    ],
  ],
  [
    `${P}|Pago`,
    [
      r('FechaPago'), r('FormaDePagoP'), r('MonedaP'), o('TipoCambioP'), r('Monto'), o('NumOperacion'),
      o('RfcEmisorCtaOrd'), o('NomBancoOrdExt'), o('CtaOrdenante'), o('RfcEmisorCtaBen'), o('CtaBeneficiario'),
      o('TipoCadPago'), o('CertPago'), o('CadPago'), o('SelloPago'),
      { apply: path(P, 'DoctoRelacionado') },
      { apply: path(P, 'ImpuestosP') },
    ],
  ],
  [
    `${P}|DoctoRelacionado`,
    [
      r('IdDocumento'), o('Serie'), o('Folio'), r('MonedaDR'), o('EquivalenciaDR'), r('NumParcialidad'),
      r('ImpSaldoAnt'), r('ImpPagado'), r('ImpSaldoInsoluto'), r('ObjetoImpDR'),
      {
        each: path(P, 'ImpuestosDR', 'RetencionesDR', 'RetencionDR'),
        steps: [r('BaseDR'), r('ImpuestoDR'), r('TipoFactorDR'), r('TasaOCuotaDR'), r('ImporteDR')],
      },
      {
        each: path(P, 'ImpuestosDR', 'TrasladosDR', 'TrasladoDR'),
        steps: [r('BaseDR'), r('ImpuestoDR'), r('TipoFactorDR'), o('TasaOCuotaDR'), o('ImporteDR')],
      },
    ],
  ],
  [`${P}|ImpuestosP`, [{ apply: path(P, 'RetencionesP') }, { apply: path(P, 'TrasladosP') }]],
  [`${P}|RetencionesP`, [{ apply: path(P, 'RetencionP') }]],
  [`${P}|TrasladosP`, [{ apply: path(P, 'TrasladoP') }]],
  [`${P}|RetencionP`, [r('ImpuestoP'), r('ImporteP')]],
  [`${P}|TrasladoP`, [r('BaseP'), r('ImpuestoP'), r('TipoFactorP'), o('TasaOCuotaP'), o('ImporteP')]],
]);

/**
 * Templates of `cadenaoriginal_TFD_1_1.xslt`. Kept apart from the CFDI's: the CFDI XSLT has no
 * template for the TFD, so inside a stamped CFDI's Complemento the TFD contributes nothing.
 */
// prettier-ignore
export const TFD_TEMPLATES: ReadonlyMap<string, readonly Step[]> = new Map<string, readonly Step[]>([
  [
    `${NS.tfd}|TimbreFiscalDigital`,
    [r('Version'), r('UUID'), r('FechaTimbrado'), r('RfcProvCertif'), o('Leyenda'), r('SelloCFD'), r('NoCertificadoSAT')],
  ],
]);
