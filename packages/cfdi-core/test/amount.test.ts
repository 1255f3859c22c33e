import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { MAX_AMOUNT, parseAmount, parseMinorUnits } from '../src/index.ts';

describe('parseAmount: the one money grammar', () => {
  it.each([
    ['1160.00', 'MXN', '1160.00'],
    ['1160', 'MXN', '1160.00'],
    ['0.01', 'MXN', '0.01'],
    ['100.1', 'USD', '100.10'],
    [100.1, 'MXN', '100.10'],
    [2320, 'MXN', '2320.00'],
    ['1500', 'CLP', '1500'],
    [MAX_AMOUNT, 'MXN', MAX_AMOUNT],
  ])('accepts %j in %s as %s', (value, currency, expected) => {
    expect(parseAmount(value, currency)).toEqual({ ok: true, amount: expected });
  });

  it.each([
    ['NaN', 'not_a_decimal'],
    [Number.NaN, 'not_a_decimal'],
    ['Infinity', 'not_a_decimal'],
    [Number.POSITIVE_INFINITY, 'not_a_decimal'],
    ['1e3', 'not_a_decimal'],
    [1e21, 'not_a_decimal'],
    ['-5.00', 'not_a_decimal'],
    [-5, 'not_a_decimal'],
    ['+5', 'not_a_decimal'],
    [' 5', 'not_a_decimal'],
    ['5.', 'not_a_decimal'],
    ['.5', 'not_a_decimal'],
    ['0x10', 'not_a_decimal'],
    ['1,000.00', 'not_a_decimal'],
    ['', 'not_a_decimal'],
    [null, 'not_a_decimal'],
    [true, 'not_a_decimal'],
    [{}, 'not_a_decimal'],
    ['5\u0000', 'not_a_decimal'],
    ['0', 'not_positive'],
    ['0.00', 'not_positive'],
    [0, 'not_positive'],
    ['1.001', 'too_many_decimals'],
    [0.30000000000000004, 'too_many_decimals'],
    ['1000000000000.00', 'too_large'],
    ['100000000000000000000', 'too_large'],
    ['1'.repeat(41), 'not_a_decimal'],
    [1e20, 'too_large'],
  ])('refuses %j (%s)', (value, code) => {
    const result = parseAmount(value, 'MXN');
    expect(result.ok).toBe(false);
    expect(!result.ok && result.problem.code).toBe(code);
  });

  it('refuses decimals a currency does not have, and unknown currencies', () => {
    expect(parseAmount('10.5', 'JPY')).toMatchObject({ ok: false, problem: { code: 'too_many_decimals' } });
    expect(parseAmount('10', 'ZZZ')).toMatchObject({ ok: false, problem: { code: 'unknown_currency' } });
    expect(parseAmount('10', 'constructor')).toMatchObject({ ok: false, problem: { code: 'unknown_currency' } });
  });

  it('keeps every accepted amount exact: the text read back equals the cents given', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 99_999_999_999_999n }), (cents) => {
        const text = `${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`;
        expect(parseAmount(text, 'MXN')).toEqual({ ok: true, amount: text });
      }),
    );
  });
});

describe('parseMinorUnits (Stripe)', () => {
  it('shifts integers by the currency’s decimals', () => {
    expect(parseMinorUnits(116000, 'MXN')).toEqual({ ok: true, amount: '1160.00' });
    expect(parseMinorUnits(1500, 'JPY')).toEqual({ ok: true, amount: '1500' });
  });

  it.each([[0], [-100], [1.5], [Number.NaN], ['100'], [null], [1e20], [Number.MAX_SAFE_INTEGER]])(
    'refuses %j',
    (value) => {
      expect(parseMinorUnits(value, 'MXN').ok).toBe(false);
    },
  );
});
