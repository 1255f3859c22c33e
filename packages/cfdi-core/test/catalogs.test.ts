import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { CATALOGS_FILE, DEFAULT_CATALOGS_DIR, renderCatalogs } from '../scripts/generate-catalogs.ts';
import { catalogs } from '../src/index.ts';

describe('SAT catalogues as data (sat/catalogos → src/validate/sat-catalogs.ts)', () => {
  it('the generated module is what the CSVs give (run npm run catalogs:generate -w @timbra/cfdi-core after changing them)', () => {
    expect(readFileSync(CATALOGS_FILE, 'utf8')).toBe(renderCatalogs(DEFAULT_CATALOGS_DIR));
  });

  it('carries what the rules use: personas and régimenes per UsoCFDI, decimals per currency, unit keys', () => {
    expect(catalogs.C_USO_CFDI.G02).toMatchObject({ fisica: true, moral: true });
    expect(catalogs.C_USO_CFDI.G02!.regimenes).toContain('616');
    expect(catalogs.C_USO_CFDI.D10).toMatchObject({ fisica: true, moral: false });
    expect(catalogs.C_USO_CFDI.CN01!.regimenes).toEqual(['605']);
    expect(catalogs.C_REGIMEN_FISCAL['605']).toMatchObject({ fisica: true, moral: false, validTo: null });
    expect(catalogs.MONEDA.CLP).toEqual({ decimals: 0, variation: 5 });
    expect(catalogs.MONEDA.MXN).toEqual({ decimals: 2, variation: 5 });
    expect(catalogs.FORMA_PAGO['28']).toBe('Tarjeta de débito');
    expect(catalogs.C_CLAVE_UNIDAD.has('ACT')).toBe(true);
    expect(catalogs.C_CLAVE_UNIDAD.has('ACTT')).toBe(false);
    expect(catalogs.C_CLAVE_UNIDAD.size).toBeGreaterThan(2000);
  });
});
