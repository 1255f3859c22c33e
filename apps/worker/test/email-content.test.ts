/** What the customer's email says of each kind of CFDI: the amount it documents, in its currency. */
import { describe, expect, it } from '@jest/globals';
import { customerCopy, freezeComprobante, insertTfd } from '@timbra/cfdi-core';
import { dejavuFonts } from '@timbra/cfdi-node';
import { freezeSample, loadTestCsd, TEST_EMISOR, TEST_RECEPTOR, testTfd } from '@timbra/test-support';
import { emailContent } from '../src/deliveries/email.ts';

const UUID = '6F1D3C7E-2B4A-4C8D-9E0F-1A2B3C4D5E6F';
const pdf = { fonts: dejavuFonts() };

function stampedPago(): string {
  const frozen = freezeComprobante(
    {
      tipoDeComprobante: 'P',
      sourceId: 'email-pago',
      issuedAt: new Date(Date.now() - 60_000).toISOString(),
      serie: 'P',
      folio: '7',
      lugarExpedicion: '42501',
      moneda: 'XXX',
      emisor: { ...TEST_EMISOR },
      receptor: { ...TEST_RECEPTOR, usoCFDI: 'CP01' },
      pago: {
        fechaPago: new Date(Date.now() - 3_600_000).toISOString(),
        formaDePagoP: '03',
        monedaP: 'MXN',
        monto: '5800.00',
        doctosRelacionados: [
          {
            idDocumento: UUID,
            monedaDR: 'MXN',
            numParcialidad: 1,
            impSaldoAnt: '11600.00',
            impPagado: '5800.00',
            objetoImpDR: '02',
            trasladosDR: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.160000' }],
          },
        ],
      },
    },
    loadTestCsd('EKU9003173C9'),
  );
  return insertTfd(frozen.xml, testTfd(frozen.sello));
}

describe('the customer’s email', () => {
  it('a Pago says the payment and its currency, not its Total of 0 XXX', async () => {
    const copy = await customerCopy(
      { serie: 'P', folio: 7, uuid: UUID, stampedXml: stampedPago(), cancelled: false },
      pdf,
    );
    const { text } = emailContent(copy, 'P', false);
    expect(text).toContain('por el pago de 5800.00 MXN (CINCO MIL OCHOCIENTOS PESOS 00/100 M.N.)');
    expect(text).not.toContain('XXX');
    expect(emailContent(copy, 'P', true).text).toContain('por el pago de 5800.00 MXN.');
  });

  it('an Ingreso says its Total', async () => {
    const frozen = freezeSample();
    const copy = await customerCopy(
      {
        serie: 'A',
        folio: 1,
        uuid: UUID,
        stampedXml: insertTfd(frozen.xml, testTfd(frozen.sello)),
        cancelled: false,
      },
      pdf,
    );
    expect(emailContent(copy, 'I', false).text).toContain(`por ${frozen.total} MXN (`);
  });
});
