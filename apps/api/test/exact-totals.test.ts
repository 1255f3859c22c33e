/**
 * The CFDI's Total is the money received — for every amount, at every IVA rate Timbra invoices with
 * (IVA_TASA): the Ingreso's and a refund's Egreso's, through cfdi-core's own arithmetic.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { freezeComprobante, totalsOf } from '@timbra/cfdi-core';
import { loadTestCsd } from '@timbra/test-support';
import { cents, ingresoFor as request } from '../scripts/check-totals.ts';

const RATES = ['0.160000', '0.080000', '0.000000'] as const;

describe('Total = the amount received', () => {
  it.each(RATES)(
    'for every amount 0.01 … 100,000.00 at IVA %s (fast-check, 3,000 amounts; exhaustive: npm run check:totals)',
    (tasa) => {
      fc.assert(
        fc.property(fc.bigInt({ min: 1n, max: 10_000_000n }), (n) => {
          expect(totalsOf(request(cents(n), tasa)).total).toBe(cents(n));
        }),
        { numRuns: 3_000 },
      );
    },
  );

  it.each([
    ['10.04', '10.04'], // 2-decimal bases give 10.03 or 10.05: a 6-decimal ValorUnitario is needed
    ['5000.00', '5000.00'],
    ['0.01', '0.01'],
    ['99999.99', '99999.99'],
  ])('the frozen, sealed document of %s says Total="%s"', (amount, total) => {
    const frozen = freezeComprobante(request(amount, '0.160000'), loadTestCsd('EKU9003173C9'));
    expect(frozen.total).toBe(total);
    expect(frozen.xml).toContain(`Total="${total}"`);
  });

  it('every amount 0.01 … 100.00 at 16% (exhaustive)', () => {
    const wrong: string[] = [];
    for (let n = 1n; n <= 10_000n; n++) {
      const amount = cents(n);
      if (totalsOf(request(amount, '0.160000')).total !== amount) wrong.push(amount);
    }
    expect(wrong).toEqual([]);
  });
});
