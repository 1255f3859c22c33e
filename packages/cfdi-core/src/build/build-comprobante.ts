import type { InvoiceRequest } from '../validate/request-schema.ts';
import { el, NS, SCHEMA_LOCATION, type XmlElement } from '../xml/xml-node.ts';
import type { ComprobanteAmounts, TrasladoAmounts } from './compute-totals.ts';
import type { PagoAmounts } from './compute-pagos.ts';
import { conceptoPago, pagos } from './build-pagos.ts';

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
