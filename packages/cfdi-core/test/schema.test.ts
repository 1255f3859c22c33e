import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { freezeComprobante } from '../src/index.ts';
import { ingresoArbitrary } from './helpers/arbitraries.ts';
import { egresoRequest, ingresoRequest, pagoRequest, publicoGeneralRequest } from './helpers/requests.ts';
import { loadTestCsd, SchemaValidator } from './helpers/sat.ts';

const csd = loadTestCsd('EKU9003173C9');
const schema = new SchemaValidator();

describe('frozen documents validate against cfdv40.xsd (libxml2, xmllint-wasm)', () => {
  it('validates every kind: Ingreso, público en general, Egreso, Pago 2.0', async () => {
    const docs = [ingresoRequest(), publicoGeneralRequest(), egresoRequest(), pagoRequest()].map(
      (r) => freezeComprobante(r, csd).xml,
    );
    expect(await schema.validate(docs)).toEqual([]);
  });

  it('validates generated invoices with hostile text and many conceptos', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(ingresoArbitrary(100), { minLength: 8, maxLength: 8 }), async (requests) => {
        expect(await schema.validate(requests.map((r) => freezeComprobante(r, csd).xml))).toEqual([]);
      }),
      { numRuns: 10 },
    );
  });

  it('is a real check: a document that breaks the schema is reported', async () => {
    const broken = freezeComprobante(ingresoRequest(), csd).xml.replace(
      'ObjetoImp="02"',
      'ObjetoImp="02" Inventado="1"',
    );
    const result = await schema.validate([broken]);
    expect(result).toHaveLength(1);
    expect(result[0]?.errors).toMatch(/Inventado/);
  });
});
