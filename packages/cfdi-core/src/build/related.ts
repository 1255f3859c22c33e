import type { InvoiceRequestInput } from '../validate/request-schema.ts';

/**
 * The request of a dependent document with the UUID of the invoice it depends on: an Egreso relates
 * it (CfdiRelacionados, TipoRelacion 01 unless the request says another); a Pago pays it
 * (DoctoRelacionado IdDocumento). Such a document is frozen only once that UUID exists.
 */
export function withRelatedUuid(request: InvoiceRequestInput, uuid: string): InvoiceRequestInput {
  if (request.tipoDeComprobante === 'P' && request.pago) {
    return {
      ...request,
      pago: {
        ...request.pago,
        doctosRelacionados: request.pago.doctosRelacionados.map((d) => ({ ...d, idDocumento: uuid })),
      },
    };
  }
  const tipoRelacion = request.cfdiRelacionados?.[0]?.tipoRelacion ?? '01';
  return { ...request, cfdiRelacionados: [{ tipoRelacion, uuids: [uuid] }] };
}
