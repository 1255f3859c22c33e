import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import {
  cadenaOriginal,
  cadenaOriginalTfd,
  CfdiErrorCode,
  freezeComprobante,
  parseStampedCfdi,
  parseXml,
  serializeXml,
  verificarSello,
  type FrozenCfdi,
  type InvoiceRequestInput,
} from '../src/index.ts';
import { ingresoArbitrary } from './helpers/arbitraries.ts';
import { egresoRequest, ingresoRequest, pagoRequest, publicoGeneralRequest } from './helpers/requests.ts';
import { CFDI_XSLT, loadTestCsd, SAT_DIR, TFD_XSLT, satXslt } from './helpers/sat.ts';

const csd = loadTestCsd('EKU9003173C9');
const realSample = readFileSync(join(SAT_DIR, 'samples/cfdi40-real.xml'), 'utf8');
const README_CADENA =
  '||4.0|2022-01-12T12:39:08|01|00001000000414077598|396.00|MXN|459.36|I|01|PUE|54680|CSM190311AH6|CREATIVITY AND SOMETHING MORE SAS DE CV|626|MCI7306249Y1|MUNICIPIO DE CUAUTITLAN IZCALLI|54700|603|G03|95121514|1200.00|H87|Pieza|BOLETOS USO DE VIAS Y AREAS PUBLICAS CON FOLIO Y PLECA DE CORTE|0.33|396.00|02|396.00|002|Tasa|0.160000|63.36|396.00|002|Tasa|0.160000|63.36|63.36||';

/** Asserts our cadenas equal, byte for byte, what the SAT XSLT prints for the same documents. */
function expectOracleAgrees(frozen: readonly FrozenCfdi[]): void {
  const expected = satXslt(
    CFDI_XSLT,
    frozen.map((f) => f.xml),
  );
  const ours = frozen.map((f) => f.cadenaOriginal).join('');
  if (ours !== expected) {
    // Find the first document that differs, for a readable failure.
    for (const f of frozen) expect(f.cadenaOriginal).toBe(satXslt(CFDI_XSLT, [f.xml]));
  }
  expect(ours).toBe(expected);
}

describe('cadena original against the SAT XSLT (SaxonJS)', () => {
  it('gives the published cadena for the real stamped CFDI, and its Sello verifies', () => {
    const stamped = parseStampedCfdi(realSample);
    expect(stamped.cadenaOriginal).toBe(README_CADENA);
    expect(satXslt(CFDI_XSLT, [realSample])).toBe(README_CADENA);
    const certificado = parseXml(realSample).attrs.find(([k]) => k === 'Certificado')?.[1] ?? '';
    const cert = new X509Certificate(Buffer.from(certificado, 'base64'));
    expect(verificarSello(stamped.cadenaOriginal, stamped.sello, cert.publicKey)).toBe(true);
    expect(verificarSello(stamped.cadenaOriginal.replace('396.00', '396.01'), stamped.sello, cert.publicKey)).toBe(
      false,
    );
  });

  it("computes the real CFDI's TFD cadena as the SAT TFD XSLT does", () => {
    const stamped = parseStampedCfdi(realSample);
    // The TFD element out of its document: it uses the xsi prefix its root declares, so the
    // standalone copy declares it too (a namespace-conformant parser refuses an unbound prefix).
    const element = serializeXml(stamped.tfdElement);
    const tfdDocument = element.includes('xmlns:xsi=')
      ? element
      : element.replace(
          '<tfd:TimbreFiscalDigital ',
          '<tfd:TimbreFiscalDigital xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ',
        );
    expect(stamped.tfdCadenaOriginal).toBe(satXslt(TFD_XSLT, [tfdDocument]));
    expect(stamped.tfdCadenaOriginal).toBe(
      `||1.1|04BF2854-FE7D-4377-9196-71248F060ABB|2022-01-12T12:39:34|SAT970701NN3|${stamped.sello}|00001000000504465028||`,
    );
    expect(cadenaOriginalTfd(stamped.tfdElement)).toBe(stamped.tfdCadenaOriginal);
  });

  it('agrees on every kind Timbra issues: Ingreso, público en general, Egreso, Pago 2.0', () => {
    const docs = [ingresoRequest(), publicoGeneralRequest(), egresoRequest(), pagoRequest()].map((r) =>
      freezeComprobante(r, csd),
    );
    expectOracleAgrees(docs);
    expect(docs[3]?.cadenaOriginal).toContain('|2.0|');
  });

  it('agrees on generated invoices with hostile text, 1–100 conceptos, exentos, retenciones, descuentos', () => {
    let batches = 0;
    fc.assert(
      fc.property(fc.array(ingresoArbitrary(100), { minLength: 8, maxLength: 8 }), (requests) => {
        batches++;
        expectOracleAgrees(requests.map((r) => freezeComprobante(r, csd)));
      }),
      { numRuns: 25 },
    );
    expect(batches).toBe(25);
  });

  it('agrees when optional attributes are present but empty and on unknown complements (parsed input)', () => {
    const xml = freezeComprobante(ingresoRequest(), csd)
      .xml.replace('Serie="A"', 'Serie=""')
      .replace(
        '</cfdi:Comprobante>',
        '<cfdi:Complemento><x:Otro xmlns:x="urn:x">  texto\tcrudo <x:Y/> mas</x:Otro></cfdi:Complemento></cfdi:Comprobante>',
      );
    expect(cadenaOriginal(parseXml(xml))).toBe(satXslt(CFDI_XSLT, [xml]));
  });

  it("rejects '|' in any free text instead of producing a cadena the SAT would split differently", () => {
    const request = ingresoRequest() as InvoiceRequestInput & { conceptos: { descripcion: string }[] };
    request.conceptos[0]!.descripcion = 'Servicio | con barra';
    expect(() => freezeComprobante(request, csd)).toThrow(
      expect.objectContaining({ code: CfdiErrorCode.InvalidRequest }),
    );
  });
});
