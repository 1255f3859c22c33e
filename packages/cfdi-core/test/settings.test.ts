import { describe, expect, it } from '@jest/globals';
import { fiscalSettingsProblems, type FiscalSettings } from '../src/index.ts';

const names = {
  emisorRfc: 'RFC',
  regimenFiscal: 'REGIMEN',
  lugarExpedicion: 'CP',
  claveProdServ: 'PROD',
  claveUnidad: 'UNIDAD',
  periodicidad: 'PERIODICIDAD',
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
    ['a régimen not in the catalogue', { regimenFiscal: '600' }, /^REGIMEN: '600' is not in c_RegimenFiscal/],
    ['a régimen of personas físicas for a persona moral', { regimenFiscal: '605' }, /^REGIMEN: .*persona moral/],
    [
      'a régimen of personas morales for a persona física',
      { emisorRfc: 'CACX7605101P8' },
      /^REGIMEN: .*persona física/,
    ],
    ['a postal code of 4 digits', { lugarExpedicion: '4250' }, /^CP: /],
    ['a ClaveProdServ of 6 digits', { claveProdServ: '010101' }, /^PROD: /],
    ['a unit not in c_ClaveUnidad', { claveUnidad: 'act' }, /^UNIDAD: 'act' is not in c_ClaveUnidad/],
    ['bimestral outside régimen 621', { periodicidad: '05' }, /^PERIODICIDAD: Periodicidad 05/],
    ['a Periodicidad not in the catalogue', { periodicidad: '09' }, /^PERIODICIDAD: '09' is not in c_Periodicidad/],
    [
      'régimen 621 invoicing daily',
      { emisorRfc: 'CACX7605101P8', regimenFiscal: '621', periodicidad: '01' },
      /^PERIODICIDAD: Periodicidad 05/,
    ],
  ])('refuses %s', (_name, change, message) => {
    expect(fiscalSettingsProblems({ ...good, ...change }, names)).toEqual([expect.stringMatching(message)]);
  });
});
