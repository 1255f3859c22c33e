/** Invoice requests and frozen documents for tests and benchmarks. */
import { createSign, createVerify } from 'node:crypto';
import { freezeComprobante, sellar, type Csd, type FrozenCfdi, type InvoiceRequestInput } from '@timbra/cfdi-core';
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

let pacCsd: Csd | undefined;
/** Stands in for a PAC's certificate: a SAT test CSD that is not the emisor's. */
export function testPac(): Csd {
  return (pacCsd ??= loadTestCsd('CACX7605101P8'));
}

/**
 * A TimbreFiscalDigital for `selloCFD`, sealed with the stand-in PAC certificate — what a PAC adds,
 * for tests that need a stamped document without a PAC (insert it with cfdi-core's `insertTfd`).
 */
export function testTfd(selloCFD: string, uuid = 'A1B2C3D4-E5F6-4A7B-8C9D-0E1F2A3B4C5D'): string {
  const pac = testPac();
  const fields = ['1.1', uuid, '2026-11-30T10:00:05', 'SPR190613I52', selloCFD, pac.noCertificado];
  const selloSAT = sellar(`||${fields.join('|')}||`, pac.privateKey);
  return `<tfd:TimbreFiscalDigital xmlns:tfd="http://www.sat.gob.mx/TimbreFiscalDigital" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://www.sat.gob.mx/TimbreFiscalDigital http://www.sat.gob.mx/sitio_internet/cfd/TimbreFiscalDigital/TimbreFiscalDigitalv11.xsd" Version="1.1" UUID="${fields[1]}" FechaTimbrado="${fields[2]}" RfcProvCertif="${fields[3]}" SelloCFD="${selloCFD}" NoCertificadoSAT="${fields[5]}" SelloSAT="${selloSAT}"/>`;
}

/** A real 3×2 PNG (orange): the smallest logo an organization uploads in the tests; pdfimages lists it as 3×2. */
export const TINY_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAYAAACddGYaAAAAE0lEQVR4AWN8ViHynwEKmBiQAAA5ugJ1ZOTsxwAAAABJRU5ErkJggg==',
  'base64',
);
