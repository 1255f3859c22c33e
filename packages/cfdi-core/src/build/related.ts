import type { DoctoRelacionadoRequest, InvoiceRequestInput } from '../validate/request-schema.ts';
import { parseXml } from '../xml/parse-xml.ts';
import { attr, childElements, NS, type XmlElement } from '../xml/xml-node.ts';
import { Dec, fixed } from './money.ts';

/**
 * The request of a dependent document with the invoice it depends on: an Egreso relates its UUID
 * (CfdiRelacionados, TipoRelacion 01 unless the request says another); a Pago pays it
 * (DoctoRelacionado IdDocumento) and, given that invoice's XML, reports that invoice's own taxes
 * (`relatedTaxes`) — never a setting's. Such a document is frozen only once that UUID exists.
 */
export function withRelatedUuid(request: InvoiceRequestInput, uuid: string, relatedXml?: string): InvoiceRequestInput {
  if (request.tipoDeComprobante === 'P' && request.pago) {
    const taxes = relatedXml ? relatedTaxes(relatedXml) : undefined;
    return {
      ...request,
      pago: {
        ...request.pago,
        doctosRelacionados: request.pago.doctosRelacionados.map((d) => ({
          ...d,
          idDocumento: uuid,
          ...(taxes ?? {}),
        })),
      },
    };
  }
  const tipoRelacion = request.cfdiRelacionados?.[0]?.tipoRelacion ?? '01';
  return { ...request, cfdiRelacionados: [{ tipoRelacion, uuids: [uuid] }] };
}

type DoctoTaxes = Pick<DoctoRelacionadoRequest, 'objetoImpDR' | 'trasladosDR' | 'retencionesDR'>;

/**
 * What a Pago's DoctoRelacionado says of the taxes of the invoice it pays, read from that invoice's
 * XML: each traslado group (impuesto, TipoFactor, tasa — 16%, 8%, 0%, exento, IEPS) and each
 * retención (by impuesto and tasa, from its conceptos), with the invoice's own Base, Importe and
 * Total, so that each Pago reports its share and the Pagos of an invoice add up to its taxes.
 * ObjetoImpDR is 02 when the invoice has any tax, else 01.
 */
export function relatedTaxes(xml: string): DoctoTaxes {
  const root = parseXml(xml);
  const total = attr(root, 'Total') ?? '0';
  const impuestos = childElements(root, NS.cfdi, 'Impuestos')[0];
  const trasladosDR = (impuestos ? group(impuestos, 'Traslados', 'Traslado') : []).map((t) => {
    const tasaOCuota = attr(t, 'TasaOCuota');
    return {
      impuesto: attr(t, 'Impuesto') ?? '',
      tipoFactor: attr(t, 'TipoFactor') ?? '',
      ...(tasaOCuota !== undefined ? { tasaOCuota } : {}),
      documento: { base: attr(t, 'Base') ?? '0', importe: attr(t, 'Importe') ?? '0', total },
    };
  });
  // The comprobante's Retenciones carry no Base or tasa: the conceptos' do.
  const retenciones = new Map<string, { impuesto: string; tasa: string; base: Dec; importe: Dec }>();
  const conceptos = childElements(root, NS.cfdi, 'Conceptos')[0];
  for (const concepto of conceptos ? childElements(conceptos, NS.cfdi, 'Concepto') : []) {
    const own = childElements(concepto, NS.cfdi, 'Impuestos')[0];
    for (const r of own ? group(own, 'Retenciones', 'Retencion') : []) {
      const key = `${attr(r, 'Impuesto')}|${attr(r, 'TasaOCuota')}`;
      const g = retenciones.get(key) ?? {
        impuesto: attr(r, 'Impuesto') ?? '',
        tasa: attr(r, 'TasaOCuota') ?? '',
        base: new Dec(0),
        importe: new Dec(0),
      };
      g.base = g.base.plus(attr(r, 'Base') ?? 0);
      g.importe = g.importe.plus(attr(r, 'Importe') ?? 0);
      retenciones.set(key, g);
    }
  }
  const decimals = (total.split('.')[1] ?? '').length;
  const retencionesDR = [...retenciones.values()].map((r) => ({
    impuesto: r.impuesto,
    tipoFactor: 'Tasa',
    tasaOCuota: r.tasa,
    documento: { base: fixed(r.base, decimals), importe: fixed(r.importe, decimals), total },
  }));
  return {
    objetoImpDR: trasladosDR.length + retencionesDR.length > 0 ? '02' : '01',
    trasladosDR,
    retencionesDR,
  };
}

function group(parent: XmlElement, name: string, child: string): XmlElement[] {
  const g = childElements(parent, NS.cfdi, name)[0];
  return g ? childElements(g, NS.cfdi, child) : [];
}
