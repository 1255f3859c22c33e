import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SAT_DIR } from '@timbra/test-support';
import { parseStampedCfdi } from '../src/tfd.ts';
import { attr, childElements, NS } from '../src/xml/xml-node.ts';
import { amountInWords } from '../src/print/amount-in-words.ts';
import { satVerificationUrl, verificationTotal } from '../src/print/verification-url.ts';

describe('amountInWords (importe con letra)', () => {
  it.each([
    ['0.50', 'MXN', 'CERO PESOS 50/100 M.N.'],
    ['1.00', 'MXN', 'UN PESO 00/100 M.N.'],
    ['21.00', 'MXN', 'VEINTIÚN PESOS 00/100 M.N.'],
    ['31', 'MXN', 'TREINTA Y UN PESOS 00/100 M.N.'],
    ['100.00', 'MXN', 'CIEN PESOS 00/100 M.N.'],
    ['101.00', 'MXN', 'CIENTO UN PESOS 00/100 M.N.'],
    ['116.00', 'MXN', 'CIENTO DIECISÉIS PESOS 00/100 M.N.'],
    ['1160.00', 'MXN', 'MIL CIENTO SESENTA PESOS 00/100 M.N.'],
    ['1001.10', 'MXN', 'MIL UN PESOS 10/100 M.N.'],
    ['21000', 'MXN', 'VEINTIÚN MIL PESOS 00/100 M.N.'],
    ['100000', 'MXN', 'CIEN MIL PESOS 00/100 M.N.'],
    ['999999.99', 'MXN', 'NOVECIENTOS NOVENTA Y NUEVE MIL NOVECIENTOS NOVENTA Y NUEVE PESOS 99/100 M.N.'],
    ['1000000', 'MXN', 'UN MILLÓN DE PESOS 00/100 M.N.'],
    ['2500000.00', 'MXN', 'DOS MILLONES QUINIENTOS MIL PESOS 00/100 M.N.'],
    ['21000000', 'MXN', 'VEINTIÚN MILLONES DE PESOS 00/100 M.N.'],
    ['1500000000', 'MXN', 'MIL QUINIENTOS MILLONES DE PESOS 00/100 M.N.'],
    [
      '999999999999.99',
      'MXN',
      'NOVECIENTOS NOVENTA Y NUEVE MIL NOVECIENTOS NOVENTA Y NUEVE MILLONES NOVECIENTOS NOVENTA Y NUEVE MIL NOVECIENTOS NOVENTA Y NUEVE PESOS 99/100 M.N.',
    ],
    ['1.00', 'USD', 'UN DÓLAR 00/100 USD'],
    ['21.50', 'USD', 'VEINTIÚN DÓLARES 50/100 USD'],
    ['10.00', 'EUR', 'DIEZ EUROS 00/100 EUR'],
    ['10.00', 'CHF', 'DIEZ CHF 00/100 CHF'],
    // Cents rounded half up from a finer amount; .995 carries into the pesos.
    ['10.005', 'MXN', 'DIEZ PESOS 01/100 M.N.'],
    ['10.995', 'MXN', 'ONCE PESOS 00/100 M.N.'],
  ])('%s %s → %s', (amount, moneda, words) => {
    expect(amountInWords(amount, moneda)).toBe(words);
  });

  it('writes every amount up to the CFDI maximum as words only, with one space between them', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 99_999_999_999_999n }), (centavos) => {
        const amount = `${centavos / 100n}.${String(centavos % 100n).padStart(2, '0')}`;
        const words = amountInWords(amount, 'MXN');
        expect(words).toMatch(/^[A-ZÁÉÍÓÚÑ]+( [A-ZÁÉÍÓÚÑ]+)* \d{2}\/100 M\.N\.$/);
        // "uno" is cut before a noun, and "cien" never counts more than a hundred.
        expect(words).not.toMatch(/UNO (PESOS|MIL|MILLON)|\bCIEN (?!MIL\b|PESOS\b|MILLONES\b)/);
        expect(words.endsWith(`${String(centavos % 100n).padStart(2, '0')}/100 M.N.`)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses what is not a decimal amount', () => {
    for (const bad of ['', '-1', '1e3', '1,000.00', 'NaN']) expect(() => amountInWords(bad, 'MXN')).toThrow(RangeError);
  });
});

describe('the SAT verification URL (the QR)', () => {
  it.each([
    ['1000.00', '1000.0'],
    ['1160.50', '1160.5'],
    ['0.01', '0.01'],
    ['007.100000', '7.1'],
    ['12.345678', '12.345678'],
    ['5', '5.0'],
  ])('total %s → tt=%s', (total, tt) => {
    expect(verificationTotal(total)).toBe(tt);
  });

  it('refuses a total the QR cannot carry', () => {
    for (const bad of ['1234567890123456789.00', '1.1234567', '-1.00', '1,00'])
      expect(() => verificationTotal(bad)).toThrow(RangeError);
  });

  it('is built from the stamped CFDI: UUID, both RFCs, the total and the last 8 of the Sello, as the SAT writes it', () => {
    const xml = readFileSync(join(SAT_DIR, 'samples', 'cfdi40-real.xml'), 'utf8');
    const stamped = parseStampedCfdi(xml);
    const rfc = (name: string) => attr(childElements(stamped.comprobante, NS.cfdi, name)[0]!, 'Rfc')!;
    const total = attr(stamped.comprobante, 'Total')!;
    const url = satVerificationUrl({
      uuid: stamped.tfd.uuid,
      rfcEmisor: rfc('Emisor'),
      rfcReceptor: rfc('Receptor'),
      total,
      sello: stamped.sello,
    });
    const parsed = new URL(url);
    expect(`${parsed.origin}${parsed.pathname}`).toBe(
      'https://verificacfdi.facturaelectronica.sat.gob.mx/default.aspx',
    );
    expect(url).toBe(
      `https://verificacfdi.facturaelectronica.sat.gob.mx/default.aspx?id=${stamped.tfd.uuid.toUpperCase()}&re=${rfc('Emisor')}&rr=${rfc('Receptor')}&tt=${verificationTotal(total)}&fe=${stamped.sello.slice(-8)}`,
    );
    expect(stamped.sello.slice(-8)).toMatch(/^[A-Za-z0-9+/=]{8}$/);
  });

  it('escapes only an RFC’s & (which would end the value); the Sello’s + / = stay as the SAT prints them', () => {
    const url = satVerificationUrl({
      uuid: '5803eb8d-81cd-4557-8719-26632d2fa434',
      rfcEmisor: 'M&A010101AB1',
      rfcReceptor: 'XAXX010101000',
      total: '1000.00',
      sello: 'AAAA+H8/bw==',
    });
    expect(url).toBe(
      'https://verificacfdi.facturaelectronica.sat.gob.mx/default.aspx?id=5803EB8D-81CD-4557-8719-26632D2FA434&re=M%26A010101AB1&rr=XAXX010101000&tt=1000.0&fe=+H8/bw==',
    );
  });
});
