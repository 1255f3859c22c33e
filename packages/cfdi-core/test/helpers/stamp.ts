import { sellar } from '../../src/index.ts';
import { loadTestCsd } from './sat.ts';

// Stands in for a PAC certificate: a test CSD that is not the emisor's.
export const pac = loadTestCsd('CACX7605101P8');

/** A TFD for `selloCFD`, sealed with the stand-in PAC certificate (UUID A1B2C3D4-…). */
export function tfdFor(selloCFD: string): string {
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
