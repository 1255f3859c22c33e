import { describe, expect, it } from '@jest/globals';
import {
  cadenaOriginal,
  freezeComprobante,
  insertTfd,
  parseStampedCfdi,
  parseXml,
  stampedXmlOf,
  stampResultFromTfd,
  verifyTfd,
} from '../src/index.ts';
import { ingresoRequest, pagoRequest } from './helpers/requests.ts';
import { loadTestCsd, TFD_XSLT, satXslt } from './helpers/sat.ts';
import { pac, tfdFor } from './helpers/stamp.ts';

const emisor = loadTestCsd('EKU9003173C9');
describe('TFD', () => {
  it.each([
    ['an Ingreso (new Complemento)', ingresoRequest()],
    ['a Pago (existing Complemento)', pagoRequest()],
  ])('inserts a TFD into %s without touching the sealed bytes', (_name, request) => {
    const frozen = freezeComprobante(request, emisor);
    const stamped = insertTfd(frozen.xml, tfdFor(frozen.sello));
    // Removing the inserted TFD gives back the frozen bytes exactly (modulo the Complemento wrapper).
    const tfdStart = stamped.indexOf('<tfd:TimbreFiscalDigital');
    const tfdEnd = stamped.indexOf('/>', tfdStart) + 2;
    const withoutTfd = stamped.slice(0, tfdStart) + stamped.slice(tfdEnd);
    expect([
      frozen.xml,
      frozen.xml.replace('</cfdi:Comprobante>', '<cfdi:Complemento></cfdi:Complemento></cfdi:Comprobante>'),
    ]).toContain(withoutTfd);

    const parsed = parseStampedCfdi(stamped);
    expect(parsed.sello).toBe(frozen.sello);
    expect(parsed.cadenaOriginal).toBe(frozen.cadenaOriginal);
    expect(parsed.tfd.uuid).toBe('A1B2C3D4-E5F6-4A7B-8C9D-0E1F2A3B4C5D');
    expect(parsed.tfd.selloCFD).toBe(frozen.sello);
    expect(verifyTfd(parsed.tfdElement, pac.certificate.publicKey)).toBe(true);
    expect(verifyTfd(parsed.tfdElement, emisor.certificate.publicKey)).toBe(false);
  });

  it('computes the TFD cadena as the SAT TFD XSLT does', () => {
    const frozen = freezeComprobante(ingresoRequest(), emisor);
    const tfdXml = tfdFor(frozen.sello);
    const parsed = parseStampedCfdi(insertTfd(frozen.xml, tfdXml));
    expect(parsed.tfdCadenaOriginal).toBe(satXslt(TFD_XSLT, [`<?xml version="1.0" encoding="UTF-8"?>${tfdXml}`]));
  });

  it('leaves the CFDI cadena unchanged by the TFD (the CFDI XSLT has no template for it)', () => {
    const frozen = freezeComprobante(ingresoRequest(), emisor);
    expect(cadenaOriginal(parseXml(insertTfd(frozen.xml, tfdFor(frozen.sello))))).toBe(frozen.cadenaOriginal);
  });

  it("rebuilds an invoice's stamped CFDI from its frozen bytes and TFD, as the PAC's answer was built", () => {
    for (const request of [ingresoRequest(), pagoRequest()]) {
      const frozen = freezeComprobante(request, emisor);
      // What a PAC client hands the stamper; the invoice keeps frozen_xml and tfd_xml only.
      const result = stampResultFromTfd('primary', frozen.xml, tfdFor(frozen.sello));
      expect(stampedXmlOf({ frozenXml: frozen.xml, tfdXml: result.tfdXml, stampedXml: null })).toBe(result.stampedXml);
    }
    // Not stamped: no stamped CFDI. Bytes stored whole (documents stamped before) are read as they are.
    const frozen = freezeComprobante(ingresoRequest(), emisor);
    expect(stampedXmlOf({ frozenXml: frozen.xml, tfdXml: null, stampedXml: null })).toBeNull();
    expect(stampedXmlOf({ frozenXml: null, tfdXml: null })).toBeNull();
    expect(stampedXmlOf({ frozenXml: frozen.xml, tfdXml: tfdFor(frozen.sello), stampedXml: '<kept/>' })).toBe(
      '<kept/>',
    );
  });
});
