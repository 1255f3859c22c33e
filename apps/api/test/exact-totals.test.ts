/**
 * The CFDI's Total is the money received — for every amount, at every IVA rate Timbra invoices with
 * (IVA_TASA): the Ingreso's and a refund's Egreso's, through cfdi-core's own arithmetic.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { freezeComprobante, parseXml, checkSatRules, attr, totalsOf, type XmlElement } from '@timbra/cfdi-core';
import { loadTestCsd } from '@timbra/test-support';
import { cents, ingresoFor as request, settingsFor } from '../scripts/check-totals.ts';
import { buildPagoRequest } from '../src/refunds-installments/build-pago.ts';

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

  it('exento (IVA Exento, e.g. colegiaturas): the Total is the amount for every amount (fast-check, 3,000 amounts)', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10_000_000n }), (n) => {
        const r = request(cents(n), '0.160000');
        const [concepto] = r.conceptos!;
        const exento = {
          ...r,
          conceptos: [
            { ...concepto!, valorUnitario: cents(n), traslados: [{ impuesto: '002', tipoFactor: 'Exento' }] },
          ],
        };
        expect(totalsOf(exento).total).toBe(cents(n));
      }),
      { numRuns: 3_000 },
    );
  });

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

/** Every TrasladoDR ImporteDR (and BaseDR) of a frozen Pago. */
function trasladosDR(xml: string): { base: string; importe: string }[] {
  const find = (el: XmlElement, path: string[]): XmlElement[] =>
    path.length === 0
      ? [el]
      : el.children.flatMap((c) => (c.kind === 'element' && c.local === path[0] ? find(c, path.slice(1)) : []));
  return find(parseXml(xml), [
    'Complemento',
    'Pagos',
    'Pago',
    'DoctoRelacionado',
    'ImpuestosDR',
    'TrasladosDR',
    'TrasladoDR',
  ]).map((t) => ({ base: attr(t, 'BaseDR')!, importe: attr(t, 'ImporteDR')! }));
}

describe('a sale in installments: the Pagos add up to the Ingreso’s IVA', () => {
  const csd = loadTestCsd('EKU9003173C9');
  const receptor = {
    rfc: 'CACX7605101P8',
    nombre: 'XOCHILT CASAS CHAVEZ',
    regimenFiscal: '612',
    codigoPostal: '36257',
    usoCfdi: 'G03',
  };

  /** Freezes the Ingreso of `total` and one Pago per installment; returns Σ ImporteDR/BaseDR and the Ingreso's. */
  function pay(total: string, installments: string[], tasa = '0.160000') {
    const ingreso = freezeComprobante(request(total, tasa), csd);
    let saldo = Number(total) * 100;
    let iva = 0;
    let base = 0;
    for (const [n, amount] of installments.entries()) {
      const pago = freezeComprobante(
        buildPagoRequest(
          {
            serie: 'A',
            folio: 1,
            moneda: 'MXN',
            receptor,
            subTotal: ingreso.subTotal,
            total: ingreso.total,
            frozenXml: ingreso.xml,
          },
          {
            provider: 'check',
            externalId: `inst-${n}`,
            amount,
            paidAt: new Date(Date.now() - 60_000),
            formaPago: '03',
            numParcialidad: n + 1,
            saldoAnterior: cents(BigInt(Math.round(saldo))),
          },
          'P',
          n + 1,
          new Date(),
          settingsFor(tasa),
        ),
        csd,
      );
      expect(checkSatRules(parseXml(pago.xml))).toEqual([]);
      for (const t of trasladosDR(pago.xml)) {
        iva += Math.round(Number(t.importe) * 100);
        base += Math.round(Number(t.base) * 100);
      }
      saldo -= Math.round(Number(amount) * 100);
    }
    return {
      iva,
      base,
      ingresoIva: Math.round((Number(ingreso.total) - Number(ingreso.subTotal)) * 100),
      ingresoBase: Math.round(Number(ingreso.subTotal) * 100),
    };
  }

  it('100.00 in two halves: IVA 6.90 + 6.89 = 13.79, as on the Ingreso (not 13.80)', () => {
    const r = pay('100.00', ['50.00', '50.00']);
    expect(r).toMatchObject({ iva: 1379, ingresoIva: 1379, base: r.ingresoBase });
  });

  it('for any total and 2–4 installments, the IVA exactly (fast-check, 300 sales)', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 400n, max: 10_000_000n }),
        fc.array(fc.integer({ min: 1, max: 100 }), { minLength: 1, maxLength: 3 }),
        (n, weights) => {
          // Split the total by the weights; the last installment settles it.
          const shares = [...weights, 1];
          const sum = shares.reduce((a, b) => a + b, 0);
          let left = n;
          const parts = shares.map((w, i) => {
            const part = i === shares.length - 1 ? left : (n * BigInt(w)) / BigInt(sum);
            left -= part;
            return part;
          });
          if (parts.some((p) => p <= 0n)) return;
          const r = pay(cents(n), parts.map(cents));
          expect(r.iva).toBe(r.ingresoIva);
          // The bases add up too unless Anexo 20's limits forbid a share: then that BaseDR is
          // ImporteDR / rate (six decimals), a few centavos from its share of the base.
          expect(Math.abs(r.base - r.ingresoBase)).toBeLessThanOrEqual(10);
        },
      ),
      { numRuns: 300 },
    );
  });
});
