import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { tsEntryArgs } from '@timbra/test-support';
import { DEMO_ENDPOINT, runDemo } from '../../../scripts/demo/demo-client.ts';
import { KEYS, startApi, type TestApi } from './helpers.ts';

const run = promisify(execFile);
const cli = fileURLToPath(new URL('../../../scripts/demo/demo-cli.ts', import.meta.url));

let api: TestApi;
beforeAll(async () => {
  api = await startApi({ providers: true, webhookAllowHttp: true });
});
afterAll(() => api.close());

const demo = (env: Record<string, string>) =>
  run(process.execPath, tsEntryArgs(cli), {
    env: { PATH: process.env.PATH ?? '', ...env },
  }).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
  );

// The full run (payments stamped by a worker) is `npm run demo -- --exit`, in .ci/run. Here: an API
// without a worker, so the client records everything and then reports the stamps it did not see.
describe('demo client (compose demo profile)', () => {
  it('sends the samples through every entrance, then fails clearly when nothing stamps them', async () => {
    const { code, stdout } = await demo({
      DEMO_API_URL: api.url,
      DEMO_API_KEY: KEYS.pos,
      DEMO_PROVIDERS_URL: api.providers.url,
      DEMO_TIMEOUT_S: '3',
    });
    expect(code).toBe(1);
    expect(stdout).toMatch(/the same Stripe event delivered again → HTTP 200/);
    expect(stdout).toMatch(/captured for 1200.00/);
    expect(stdout).toMatch(/Idempotent-Replayed: true/);
    expect(stdout).toMatch(/breaks CFDI40161 → recorded, \S+ needs data/);
    expect(stdout).toMatch(/PATCH \/v1\/invoices\/\S+ with the customer's régimen → 200/);
    expect(stdout).toMatch(/FAILED: not every invoice was stamped in time/);
    const payments = await api.prisma.payment.findMany({ include: { invoices: true, refunds: true } });
    expect(payments.map((p) => p.provider).sort()).toEqual([
      'api:pos',
      'api:pos',
      'mercadopago',
      'stripe',
      'stripe',
      'stripe',
      'stripe',
      'stripe',
      'stripe',
    ]);
    expect(payments.find((p) => p.amount.toFixed(2) === '1200.00')?.provider).toBe('stripe');
    const ingresos = payments.flatMap((p) => p.invoices.filter((i) => i.kind === 'I'));
    // The corrected one too: frozen by the PATCH, waiting for a worker like the others.
    expect(ingresos.map((i) => i.status)).toEqual(Array(9).fill('pending'));
    // The Checkout Session: one invoice with one concepto per product; the dollars: USD at Stripe's rate.
    expect(stdout).toMatch(/two products → one invoice, conceptos: Audífonos inalámbricos \+ Libro de cocina/);
    const usd = payments.find((p) => p.currency === 'USD')!;
    expect(usd.invoices[0]!.frozenXml).toContain('Moneda="USD" TipoCambio="17.3125"');
    expect(payments.flatMap((p) => p.refunds)).toHaveLength(1);
    // The refund's Egreso and the installment's Pago wait for their Ingresos, which nothing stamps here.
    const dependents = payments.flatMap((p) => p.invoices.filter((i) => i.kind !== 'I'));
    expect(dependents.map((i) => `${i.kind} ${i.status}`).sort()).toEqual(['E waiting', 'P waiting']);
  }, 30_000);

  it("a second run on the same database disables the earlier run's endpoint, and only that", async () => {
    const register = async (url: string, description: string) => {
      const response = await fetch(`${api.url}/v1/webhook-endpoints`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEYS.admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url, events: ['*'], description }),
      });
      expect(response.status).toBe(201);
      return String(((await response.json()) as { id: string }).id);
    };
    // An earlier run's (its receiver gone) and the merchant's own.
    const earlier = await register('http://127.0.0.1:9/timbra-webhooks', DEMO_ENDPOINT);
    const merchant = await register('https://erp.example.com/timbra', 'ERP');
    const lines: string[] = [];
    // Nothing stamps here (no worker): the run ends at its deadline, after the endpoints were settled.
    await expect(
      runDemo({
        apiUrl: api.url,
        apiKey: KEYS.pos,
        providersUrl: api.providers.url,
        timeoutMs: 3000,
        log: (line) => lines.push(line),
        webhooks: { url: 'http://127.0.0.1:9/this-run', adminKey: KEYS.admin },
      }),
    ).rejects.toThrow(/not every invoice was stamped in time/);
    const endpoints = await api.prisma.webhookEndpoint.findMany({ orderBy: { createdAt: 'asc' } });
    expect(
      endpoints.map((e) => [e.id === earlier ? 'earlier' : e.id === merchant ? 'merchant' : e.url, e.status]),
    ).toEqual([
      ['earlier', 'disabled'],
      ['merchant', 'enabled'],
      ['http://127.0.0.1:9/this-run', 'enabled'],
    ]);
    expect(lines.filter((l) => l.includes(`PATCH /v1/webhook-endpoints/${earlier} → disabled`))).toHaveLength(1);
  }, 30_000);

  it('refuses to start without the API key (exit 64)', async () => {
    const { code, stdout } = await demo({ DEMO_API_URL: api.url });
    expect(code).toBe(64);
    expect(stdout).toMatch(/set DEMO_API_KEY/);
  });
});
