import type { InvoiceRequest } from '../validate/request-schema.ts';
import { el, NS, SCHEMA_LOCATION, type XmlElement } from '../xml/xml-node.ts';
import type { ComprobanteAmounts, TrasladoAmounts } from './compute-totals.ts';
import type { PagoAmounts } from './compute-pagos.ts';

/** What the builder needs besides the request: computed values and the certificate. */
export interface BuildInput {
  request: InvoiceRequest;
  fecha: string;
  noCertificado: string;
  /** Base64 DER of the CSD certificate. */
  certificado: string;
  amounts: ComprobanteAmounts;
  /** Present for tipo P. */
  pago?: { amounts: PagoAmounts; fechaPago: string };
}

const C = NS.cfdi;
const P = NS.pago20;

/**
 * Builds the CFDI 4.0 tree with `Sello` empty; the caller computes the cadena from this tree, signs
 * it and sets `Sello`. Attribute and element order follow cfdv40.xsd (which is also the order of the
 * SAT XSLT), so the bytes depend only on the input.
 */
export function buildComprobante(input: BuildInput): XmlElement {
  const { request: r, amounts: a } = input;
  const isPago = r.tipoDeComprobante === 'P';
  const schemaLocation = isPago ? `${SCHEMA_LOCATION.cfdi} ${SCHEMA_LOCATION.pago20}` : SCHEMA_LOCATION.cfdi;

  const children: XmlElement[] = [];
  if (r.informacionGlobal) {
    children.push(
      el(C, 'cfdi:InformacionGlobal', [
        ['Periodicidad', r.informacionGlobal.periodicidad],
        ['Meses', r.informacionGlobal.meses],
        ['Año', String(r.informacionGlobal.año)],
      ]),
    );
  }
  for (const rel of r.cfdiRelacionados ?? []) {
    children.push(
      el(
        C,
        'cfdi:CfdiRelacionados',
        [['TipoRelacion', rel.tipoRelacion]],
        rel.uuids.map((uuid) => el(C, 'cfdi:CfdiRelacionado', [['UUID', uuid.toUpperCase()]])),
      ),
    );
  }
  children.push(
    el(C, 'cfdi:Emisor', [
      ['Rfc', r.emisor.rfc],
      ['Nombre', r.emisor.nombre],
      ['RegimenFiscal', r.emisor.regimenFiscal],
    ]),
    el(C, 'cfdi:Receptor', [
      ['Rfc', r.receptor.rfc],
      ['Nombre', r.receptor.nombre],
      ['DomicilioFiscalReceptor', r.receptor.domicilioFiscalReceptor],
      ['ResidenciaFiscal', r.receptor.residenciaFiscal],
      ['NumRegIdTrib', r.receptor.numRegIdTrib],
      ['RegimenFiscalReceptor', r.receptor.regimenFiscalReceptor],
      ['UsoCFDI', r.receptor.usoCFDI],
    ]),
    isPago ? conceptoPago() : conceptos(a),
  );
  if (a.impuestos) children.push(impuestos(a.impuestos));
  if (input.pago) children.push(el(C, 'cfdi:Complemento', [], [pagos(input.pago.amounts, input.pago.fechaPago, r)]));

  return el(
    C,
    'cfdi:Comprobante',
    [
      ['xmlns:cfdi', NS.cfdi],
      ['xmlns:xsi', NS.xsi],
      ...(isPago ? ([['xmlns:pago20', NS.pago20]] as const) : []),
      ['xsi:schemaLocation', schemaLocation],
      ['Version', '4.0'],
      ['Serie', r.serie],
      ['Folio', r.folio],
      ['Fecha', input.fecha],
      ['Sello', ''],
      ['FormaPago', r.formaPago],
      ['NoCertificado', input.noCertificado],
      ['Certificado', input.certificado],
      ['CondicionesDePago', r.condicionesDePago],
      ['SubTotal', a.subTotal],
      ['Descuento', a.descuento],
      ['Moneda', r.moneda],
      ['TipoCambio', r.tipoCambio],
      ['Total', a.total],
      ['TipoDeComprobante', r.tipoDeComprobante],
      ['Exportacion', r.exportacion],
      ['MetodoPago', r.metodoPago],
      ['LugarExpedicion', r.lugarExpedicion],
    ],
    children,
  );
}

function conceptos(a: ComprobanteAmounts): XmlElement {
  return el(
    C,
    'cfdi:Conceptos',
    [],
    a.conceptos.map((c) => {
      const taxes: XmlElement[] = [];
      if (c.traslados.length > 0)
        taxes.push(
          el(
            C,
            'cfdi:Traslados',
            [],
            c.traslados.map((t) => traslado(t)),
          ),
        );
      if (c.retenciones.length > 0) {
        taxes.push(
          el(
            C,
            'cfdi:Retenciones',
            [],
            c.retenciones.map((t) =>
              el(C, 'cfdi:Retencion', [
                ['Base', t.base],
                ['Impuesto', t.impuesto],
                ['TipoFactor', t.tipoFactor],
                ['TasaOCuota', t.tasaOCuota],
                ['Importe', t.importe],
              ]),
            ),
          ),
        );
      }
      return el(
        C,
        'cfdi:Concepto',
        [
          ['ClaveProdServ', c.source.claveProdServ],
          ['NoIdentificacion', c.source.noIdentificacion],
          ['Cantidad', c.cantidad],
          ['ClaveUnidad', c.source.claveUnidad],
          ['Unidad', c.source.unidad],
          ['Descripcion', c.source.descripcion],
          ['ValorUnitario', c.valorUnitario],
          ['Importe', c.importe],
          ['Descuento', c.descuento],
          ['ObjetoImp', c.source.objetoImp],
        ],
        taxes.length > 0 ? [el(C, 'cfdi:Impuestos', [], taxes)] : [],
      );
    }),
  );
}

function traslado(t: TrasladoAmounts): XmlElement {
  return el(C, 'cfdi:Traslado', [
    ['Base', t.base],
    ['Impuesto', t.impuesto],
    ['TipoFactor', t.tipoFactor],
    ['TasaOCuota', t.tasaOCuota],
    ['Importe', t.importe],
  ]);
}

function impuestos(i: NonNullable<ComprobanteAmounts['impuestos']>): XmlElement {
  const children: XmlElement[] = [];
  // cfdv40.xsd orders Retenciones before Traslados at the Comprobante level.
  if (i.retenciones.length > 0) {
    children.push(
      el(
        C,
        'cfdi:Retenciones',
        [],
        i.retenciones.map((r) =>
          el(C, 'cfdi:Retencion', [
            ['Impuesto', r.impuesto],
            ['Importe', r.importe],
          ]),
        ),
      ),
    );
  }
  if (i.traslados.length > 0)
    children.push(
      el(
        C,
        'cfdi:Traslados',
        [],
        i.traslados.map((t) => traslado(t)),
      ),
    );
  return el(
    C,
    'cfdi:Impuestos',
    [
      ['TotalImpuestosRetenidos', i.totalImpuestosRetenidos],
      ['TotalImpuestosTrasladados', i.totalImpuestosTrasladados],
    ],
    children,
  );
}

/** The fixed concepto of a Pago comprobante (Guía de llenado del complemento para recepción de pagos). */
function conceptoPago(): XmlElement {
  return el(
    C,
    'cfdi:Conceptos',
    [],
    [
      el(C, 'cfdi:Concepto', [
        ['ClaveProdServ', '84111506'],
        ['Cantidad', '1'],
        ['ClaveUnidad', 'ACT'],
        ['Descripcion', 'Pago'],
        ['ValorUnitario', '0'],
        ['Importe', '0'],
        ['ObjetoImp', '01'],
      ]),
    ],
  );
}

function pagos(p: PagoAmounts, fechaPago: string, r: InvoiceRequest): XmlElement {
  const pago = r.pago;
  if (!pago) throw new Error('pagos() needs request.pago');
  const doctos = p.doctos.map((d) => {
    const retencionesDR: XmlElement[] =
      d.retencionesDR.length > 0
        ? [
            el(
              P,
              'pago20:RetencionesDR',
              [],
              d.retencionesDR.map((t) =>
                el(P, 'pago20:RetencionDR', [
                  ['BaseDR', t.base],
                  ['ImpuestoDR', t.impuesto],
                  ['TipoFactorDR', t.tipoFactor],
                  ['TasaOCuotaDR', t.tasaOCuota],
                  ['ImporteDR', t.importe],
                ]),
              ),
            ),
          ]
        : [];
    const impuestosDR: XmlElement[] =
      d.trasladosDR.length + d.retencionesDR.length > 0
        ? [
            el(
              P,
              'pago20:ImpuestosDR',
              [],
              [
                ...retencionesDR,
                ...(d.trasladosDR.length > 0
                  ? [
                      el(
                        P,
                        'pago20:TrasladosDR',
                        [],
                        d.trasladosDR.map((t) =>
                          el(P, 'pago20:TrasladoDR', [
                            ['BaseDR', t.base],
                            ['ImpuestoDR', t.impuesto],
                            ['TipoFactorDR', t.tipoFactor],
                            ['TasaOCuotaDR', t.tasaOCuota],
                            ['ImporteDR', t.importe],
                          ]),
                        ),
                      ),
                    ]
                  : []),
              ],
            ),
          ]
        : [];
    return el(
      P,
      'pago20:DoctoRelacionado',
      [
        ['IdDocumento', d.source.idDocumento.toUpperCase()],
        ['Serie', d.source.serie],
        ['Folio', d.source.folio],
        ['MonedaDR', d.source.monedaDR],
        ['EquivalenciaDR', d.equivalenciaDR],
        ['NumParcialidad', String(d.source.numParcialidad)],
        ['ImpSaldoAnt', d.impSaldoAnt],
        ['ImpPagado', d.impPagado],
        ['ImpSaldoInsoluto', d.impSaldoInsoluto],
        ['ObjetoImpDR', d.objetoImpDR],
      ],
      impuestosDR,
    );
  });
  const retencionesP: XmlElement[] =
    p.retencionesP.length > 0
      ? [
          el(
            P,
            'pago20:RetencionesP',
            [],
            p.retencionesP.map((r) =>
              el(P, 'pago20:RetencionP', [
                ['ImpuestoP', r.impuesto],
                ['ImporteP', r.importe],
              ]),
            ),
          ),
        ]
      : [];
  const trasladosP: XmlElement[] =
    p.trasladosP.length > 0
      ? [
          el(
            P,
            'pago20:TrasladosP',
            [],
            p.trasladosP.map((t) =>
              el(P, 'pago20:TrasladoP', [
                ['BaseP', t.base],
                ['ImpuestoP', t.impuesto],
                ['TipoFactorP', t.tipoFactor],
                ['TasaOCuotaP', t.tasaOCuota],
                ['ImporteP', t.importe],
              ]),
            ),
          ),
        ]
      : [];
  const impuestosP: XmlElement[] =
    retencionesP.length + trasladosP.length > 0
      ? [el(P, 'pago20:ImpuestosP', [], [...retencionesP, ...trasladosP])]
      : [];
  return el(
    P,
    'pago20:Pagos',
    [['Version', '2.0']],
    [
      el(P, 'pago20:Totales', p.totales),
      el(
        P,
        'pago20:Pago',
        [
          ['FechaPago', fechaPago],
          ['FormaDePagoP', pago.formaDePagoP],
          ['MonedaP', pago.monedaP],
          ['TipoCambioP', p.tipoCambioP],
          ['Monto', p.monto],
          ['NumOperacion', pago.numOperacion],
        ],
        [...doctos, ...impuestosP],
      ),
    ],
  );
}
