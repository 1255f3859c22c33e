/** Invoice requests and frozen documents for tests and benchmarks. */
import { createSign, createVerify } from 'node:crypto';
import { freezeComprobante, type Csd, type FrozenCfdi, type InvoiceRequestInput } from '@timbra/cfdi-core';
import { loadTestCsd, TEST_EMISOR, TEST_RECEPTOR } from './sat-files.ts';

let sequence = 0;

/**
 * A one-concepto Ingreso to the test receptor issued a minute ago (PACs refuse documents older than
 * 72 hours), with a unique source id and folio unless overridden.
 */
export function sampleIngreso(overrides: Partial<InvoiceRequestInput> = {}): InvoiceRequestInput {
  sequence++;
  return {
    tipoDeComprobante: 'I',
    sourceId: `sample_${process.pid}_${sequence}_${Date.now()}`,
    issuedAt: new Date(Date.now() - 60_000).toISOString(),
    serie: 'T',
    folio: String(sequence),
    lugarExpedicion: '42501',
    formaPago: '04',
    metodoPago: 'PUE',
    emisor: { ...TEST_EMISOR },
    receptor: { ...TEST_RECEPTOR },
    conceptos: [
      {
        claveProdServ: '86121503',
        cantidad: '1',
        claveUnidad: 'E48',
        descripcion: `Colegiatura ${sequence}`,
        valorUnitario: `${1000 + sequence}.00`,
        objetoImp: '02',
        traslados: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.160000' }],
      },
    ],
    ...overrides,
  };
}

/**
 * Overrides for `sampleIngreso` with one concepto of `valorUnitario` (+ 16% IVA): e.g. '9000.00' for
 * a Total of 10 440.00, above the SAT's threshold where cancelling needs the receptor's acceptance.
 */
export function withConcepto(valorUnitario: string): Partial<InvoiceRequestInput> {
  return {
    conceptos: [
      {
        claveProdServ: '86121503',
        cantidad: '1',
        claveUnidad: 'E48',
        descripcion: 'Inscripción',
        valorUnitario,
        objetoImp: '02',
        traslados: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.160000' }],
      },
    ],
  };
}

let emisorCsd: Csd | undefined;
function defaultCsd(): Csd {
  emisorCsd ??= loadTestCsd('EKU9003173C9');
  return emisorCsd;
}

/** `sampleIngreso` frozen with the test emisor's CSD. */
export function freezeSample(overrides: Partial<InvoiceRequestInput> = {}, csd: Csd = defaultCsd()): FrozenCfdi {
  return freezeComprobante(sampleIngreso(overrides), csd);
}

/**
 * RSA-2048 operations a stamp cannot avoid — verify the emisor's Sello, sign the TFD — per second on
 * one core, measured for `seconds`: the raw reference of the sandbox and end-to-end benchmarks.
 */
export function rawVerifySignRate(seconds = 2): number {
  const sample = freezeSample();
  const emisor = defaultCsd();
  const pac = loadTestCsd('CACX7605101P8');
  const start = process.hrtime.bigint();
  const budget = BigInt(Math.round(seconds * 1e9));
  let ops = 0;
  while (process.hrtime.bigint() - start < budget) {
    createVerify('RSA-SHA256')
      .update(sample.cadenaOriginal, 'utf8')
      .verify(emisor.certificate.publicKey, sample.sello, 'base64');
    createSign('RSA-SHA256').update(sample.cadenaOriginal, 'utf8').sign(pac.privateKey, 'base64');
    ops++;
  }
  return ops / (Number(process.hrtime.bigint() - start) / 1e9);
}
