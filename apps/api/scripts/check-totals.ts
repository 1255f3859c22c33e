/**
 * `npm run check:totals -- [--max 100000.00] [--tasa all|0.160000|0.080000|0.000000]` — every amount
 * from 0.01 to --max (default 100,000.00: ten million amounts per rate, ~13 minutes each on the 2-core machine, ~75 µs an amount) through
 * the Ingreso Timbra builds and cfdi-core's arithmetic, at each IVA rate (default: every rate
 * IVA_TASA allows): prints how many Totals differ from the amount received (must be 0), with
 * progress. Exit 1 on any. The test suite (test/exact-totals.test.ts) runs a sample with the same
 * functions.
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { totalsOf, type InvoiceRequestInput } from '@timbra/cfdi-core';
import { buildIngresoRequest, type InvoiceSettings } from '../src/payments/build-ingreso.ts';

/** `n` centavos as a decimal string (12345n → "123.45"). */
export const cents = (n: bigint) => `${n / 100n}.${String(n % 100n).padStart(2, '0')}`;

/** The settings of these checks: the SAT test emisor, IVA at `tasa`. */
export function settingsFor(tasa: string): InvoiceSettings {
  return {
    emisor: { rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', regimenFiscal: '601', lugarExpedicion: '42501' },
    concepto: { claveProdServ: '01010101', claveUnidad: 'ACT', descripcion: 'Venta' },
    ivaTasa: tasa,
    periodicidad: '01',
  };
}

/** The Ingreso Timbra builds for `amount` received, IVA `tasa` included (the SAT test emisor). */
export function ingresoFor(amount: string, tasa: string): InvoiceRequestInput {
  const built = buildIngresoRequest(
    {
      provider: 'check',
      externalId: 'pi_exact',
      amount,
      currency: 'MXN',
      occurredAt: new Date(),
      receptor: null,
      description: null,
      formaPago: '04',
    },
    'A',
    1,
    settingsFor(tasa),
    new Date(),
  );
  if (!built.request) throw new Error(`no Ingreso for ${amount}: ${JSON.stringify(built.problems)}`);
  return built.request;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: { max: { type: 'string', default: '100000.00' }, tasa: { type: 'string', default: 'all' } },
  });
  const RATES = ['0.160000', '0.080000', '0.000000'];
  if (!/^\d+\.\d{2}$/.test(values.max) || !['all', ...RATES].includes(values.tasa)) {
    process.stderr.write('usage: npm run check:totals -- [--max 100000.00] [--tasa all|0.160000|0.080000|0.000000]\n');
    process.exit(64);
  }
  const last = BigInt(values.max.replace('.', ''));
  let failed = false;
  for (const tasa of values.tasa === 'all' ? RATES : [values.tasa]) {
    const started = Date.now();
    const wrong: string[] = [];
    for (let n = 1n; n <= last; n++) {
      const amount = cents(n);
      if (totalsOf(ingresoFor(amount, tasa)).total !== amount) wrong.push(amount);
      if (n % 1_000_000n === 0n)
        process.stdout.write(
          `  … ${amount} (${((Date.now() - started) / 1000).toFixed(0)} s, ${wrong.length} wrong)\n`,
        );
    }
    process.stdout.write(
      `${last} amounts 0.01 … ${values.max} at IVA ${tasa}: ${wrong.length} with Total ≠ amount${wrong.length ? ` (first: ${wrong.slice(0, 10).join(', ')})` : ''} — ${((Date.now() - started) / 1000).toFixed(0)} s\n`,
    );
    failed ||= wrong.length > 0;
  }
  process.exit(failed ? 1 : 0);
}
