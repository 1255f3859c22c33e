import { readFileSync } from 'node:fs';
import type { InvoiceRequestInput } from '../../src/index.ts';
import { TEST_EMISOR, TEST_RECEPTOR } from '@timbra/test-support';

const fixture = (name: string): InvoiceRequestInput =>
  JSON.parse(readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8')) as InvoiceRequestInput;

/** A typical Ingreso: three conceptos, IVA 16% and 0%, a descuento, ISR and IVA retenciones. */
export function ingresoRequest(): InvoiceRequestInput {
  return fixture('ingreso-request.json');
}

/** A sale to público en general (RFC XAXX010101000) with InformacionGlobal. */
export function publicoGeneralRequest(): InvoiceRequestInput {
  return {
    tipoDeComprobante: 'I',
    sourceId: 'ch_public_0001',
    issuedAt: '2026-11-30T02:15:00Z',
    serie: 'PG',
    folio: '77',
    lugarExpedicion: '06600',
    formaPago: '01',
    metodoPago: 'PUE',
    emisor: { ...TEST_EMISOR },
    receptor: {
      rfc: 'XAXX010101000',
      nombre: 'PUBLICO EN GENERAL',
      domicilioFiscalReceptor: '06600',
      regimenFiscalReceptor: '616',
      usoCFDI: 'S01',
    },
    informacionGlobal: { periodicidad: '01', meses: '11', año: 2026 },
    conceptos: [
      {
        claveProdServ: '01010101',
        cantidad: '1',
        claveUnidad: 'ACT',
        descripcion: 'Venta',
        valorUnitario: '862.07',
        objetoImp: '02',
        traslados: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.160000' }],
      },
    ],
  };
}

/** An Egreso (refund) related to an original CFDI with TipoRelacion 01. */
export function egresoRequest(originalUuid = '6F1D3C7E-2B4A-4C8D-9E0F-1A2B3C4D5E6F'): InvoiceRequestInput {
  return {
    tipoDeComprobante: 'E',
    sourceId: 're_3OqL2mJ9xYz',
    issuedAt: '2026-11-30T16:00:00Z',
    serie: 'NC',
    folio: '12',
    lugarExpedicion: '42501',
    formaPago: '04',
    metodoPago: 'PUE',
    emisor: { ...TEST_EMISOR },
    receptor: { ...TEST_RECEPTOR, usoCFDI: 'G02' },
    cfdiRelacionados: [{ tipoRelacion: '01', uuids: [originalUuid] }],
    conceptos: [
      {
        claveProdServ: '84111506',
        cantidad: '1',
        claveUnidad: 'ACT',
        descripcion: 'Devolución parcial de la venta A-1024',
        valorUnitario: '500.00',
        objetoImp: '02',
        traslados: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.160000' }],
      },
    ],
  };
}

/** A Pago (REP, Pagos 2.0): the second installment against a PPD invoice. */
export function pagoRequest(originalUuid = '6F1D3C7E-2B4A-4C8D-9E0F-1A2B3C4D5E6F'): InvoiceRequestInput {
  return {
    tipoDeComprobante: 'P',
    sourceId: 'pay_2nd_installment_42',
    issuedAt: '2026-11-30T17:45:10Z',
    serie: 'P',
    folio: '5',
    lugarExpedicion: '42501',
    moneda: 'XXX',
    emisor: { ...TEST_EMISOR },
    receptor: { ...TEST_RECEPTOR, usoCFDI: 'CP01' },
    pago: {
      fechaPago: '2026-11-30T17:40:00Z',
      formaDePagoP: '03',
      monedaP: 'MXN',
      monto: '5800.00',
      numOperacion: 'SPEI-2026113000042',
      doctosRelacionados: [
        {
          idDocumento: originalUuid,
          serie: 'A',
          folio: '1000',
          monedaDR: 'MXN',
          numParcialidad: 2,
          impSaldoAnt: '11600.00',
          impPagado: '5800.00',
          objetoImpDR: '02',
          trasladosDR: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.160000' }],
        },
      ],
    },
  };
}
