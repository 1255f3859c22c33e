import { describe, expect, it } from '@jest/globals';
import {
  cadenaOriginal,
  freezeComprobante,
  insertTfd,
  parseStampedCfdi,
  parseXml,
  sellar,
  verifyTfd,
} from '../src/index.ts';
import { ingresoRequest, pagoRequest } from './helpers/requests.ts';
import { loadTestCsd, TFD_XSLT, satXslt } from './helpers/sat.ts';

const emisor = loadTestCsd('EKU9003173C9');
// Stands in for a PAC certificate: a test CSD that is not the emisor's.
const pac = loadTestCsd('CACX7605101P8');

function tfdFor(selloCFD: string): string {
  const fields = [
    '1.1',
    'A1B2C3D4-E5F6-4A7B-8C9D-0E1F2A3B4C5D',
    '2026-11-30T10:00:05',
    'SPR190613I52',
    selloCFD,
    pac.noCertificado,
  ];
  const selloSAT = sellar(`||${fields.join('|')}||`, pac.privateKey);
  return `<tfd:TimbreFiscalDigital xmlns:tfd="http://www.sat.gob.mx/TimbreFiscalDigital" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://www.sat.gob.mx/TimbreFiscalDigital http://www.sat.gob.mx/sitio_internet/cfd/TimbreFiscalDigital/TimbreFiscalDigitalv11.xsd" Version="1.1" UUID="${fields[1]}" FechaTimbrado="${fields[2]}" RfcProvCertif="${fields[3]}" SelloCFD="${selloCFD}" NoCertificadoSAT="${fields[5]}" SelloSAT="${selloSAT}"/>`;
}

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
});
