import { describe, expect, it } from '@jest/globals';
import { fiscalSettingsProblems, type FiscalSettings } from '../src/index.ts';

const names = {
  emisorRfc: 'RFC',
  regimenFiscal: 'REGIMEN',
  lugarExpedicion: 'CP',
  claveProdServ: 'PROD',
  claveUnidad: 'UNIDAD',
  periodicidad: 'PERIODICIDAD',
  series: 'SERIES',
} as const;
const good: FiscalSettings = {
  emisorRfc: 'EKU9003173C9',
  regimenFiscal: '601',
  lugarExpedicion: '42501',
  claveProdServ: '01010101',
  claveUnidad: 'ACT',
  periodicidad: undefined,
};

describe('fiscal settings', () => {
  it('accepts a persona moral in 601 and a persona física in 621 (bimestral by default) or 612', () => {
    expect(fiscalSettingsProblems(good, names)).toEqual([]);
    const fisica = { ...good, emisorRfc: 'CACX7605101P8' };
    expect(fiscalSettingsProblems({ ...fisica, regimenFiscal: '621' }, names)).toEqual([]);
    expect(fiscalSettingsProblems({ ...fisica, regimenFiscal: '612', periodicidad: '04' }, names)).toEqual([]);
  });

  it.each([
    ['a régimen not in the catalogue', { regimenFiscal: '600' }, /^REGIMEN '600': CFDI40140: /],
    [
      'a régimen of personas físicas for a persona moral',
      { regimenFiscal: '605' },
      /^REGIMEN '605': CFDI40141: .*persona/,
    ],
    [
      'a régimen of personas morales for a persona física',
      { emisorRfc: 'CACX7605101P8' },
      /^REGIMEN '601': CFDI40141: /,
    ],
    ['a postal code of 4 digits', { lugarExpedicion: '4250' }, /^CP '4250': /],
    ['a ClaveProdServ of 6 digits', { claveProdServ: '010101' }, /^PROD '010101': /],
    ['the ClaveProdServ 00000000', { claveProdServ: '00000000' }, /^PROD '00000000': CFDI40162: /],
    [
      'a unit not in c_ClaveUnidad',
      { claveUnidad: 'QQQ' },
      /^UNIDAD 'QQQ': CFDI40165: ClaveUnidad is not a c_ClaveUnidad value/,
    ],
    ['bimestral outside régimen 621', { periodicidad: '05' }, /^PERIODICIDAD '05': CFDI40132: /],
    ['a Periodicidad not in the catalogue', { periodicidad: '09' }, /^PERIODICIDAD '09': CFDI40131: /],
    [
      'régimen 621 invoicing daily',
      { emisorRfc: 'CACX7605101P8', regimenFiscal: '621', periodicidad: '01' },
      /^PERIODICIDAD '01': régimen 621 .* Periodicidad 05/,
    ],
    ['a serie with a |', { series: ['A', 'N|C'] }, /^SERIES: serie 'N\|C' must not contain '\|'/],
    ['a serie of 26 characters', { series: ['X'.repeat(26)] }, /^SERIES: serie 'X+' must have 1 to 25 characters/],
  ])('refuses %s', (_name, change, message) => {
    expect(fiscalSettingsProblems({ ...good, ...change }, names)).toEqual([expect.stringMatching(message)]);
  });
});
