/**
 * `npm run demo [-- --exit] [--check-secrets] [--verbose] [--timeout S]` — the whole system on this
 * machine (as `npm run dev`: migrations, pac-sandbox, API, worker), then a handful of sample payments
 * through the real entrances: two signed Stripe webhooks (one with the customer's RFC, one to público
 * en general), the first one delivered again, a signed Mercado Pago notification, a REST payment
 * with Idempotency-Key sent twice, and a Stripe refund. It waits until every invoice is stamped and
 * prints payment → serie-folio → UUID → status, and the dashboard URL.
 *
 * Then it keeps running (Ctrl-C stops it), or with `--exit` stops everything and exits: 0 when every
 * invoice was stamped in time, 1 otherwise. `--check-secrets` runs the apps at LOG_LEVEL=debug and
 * fails when any configured secret (API key, webhook secrets, CSD password, PAC and dashboard
 * passwords, sandbox admin token) appears in their logs. `.ci/run` runs it with both flags.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createPrisma } from '@timbra/db';
import { SAT_DIR, TEST_RECEPTOR } from '@timbra/cfdi-core/testing';
import { localEnv, startLocalSystem } from './local-system.ts';

const { values } = parseArgs({
  options: {
    exit: { type: 'boolean', default: false },
    'check-secrets': { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
    timeout: { type: 'string', default: '120' },
  },
});
const out = (line: string) => process.stdout.write(`${line}\n`);
const env = localEnv();
if (values['check-secrets']) env.LOG_LEVEL = 'debug';
// The sandbox's SW password and the worker's: one value, distinctive enough to be found if leaked.
const pacPassword = env.PAC_PRIMARY_PASSWORD ?? `demo-pac-${randomUUID()}`;
env.PAC_PRIMARY_PASSWORD = pacPassword;
env.SANDBOX_SW_PASSWORD = pacPassword;
const api = `http://127.0.0.1:${env.PORT ?? '3000'}`;
const apiKey = env.API_KEYS!.split(',')[0]!.split(':')[1]!;
const deadline = Date.now() + Number(values.timeout) * 1000;
const run = Date.now().toString(36);

let failed = false;
const system = await startLocalSystem(env, values.verbose ? out : () => undefined, (name, code) => {
  out(`[demo] ${name} exited (${code}); its last lines:`);
  system.lines
    .filter((l) => l.startsWith(`[${name}]`))
    .slice(-15)
    .forEach(out);
  failed = true;
});
process.on('SIGINT', () => void system.stop().then(() => process.exit(0)));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function waitFor<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    if (failed) throw new Error(`a process exited while waiting for ${what}`);
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

// --- Sample payments, through the real entrances ------------------------------------------------
function stripeEvent(type: string, object: object, id = `evt_demo_${run}_${randomUUID().slice(0, 8)}`) {
  const body = JSON.stringify({
    id,
    object: 'event',
    type,
    created: Math.floor(Date.now() / 1000) - 5,
    data: { object },
  });
  const t = Math.floor(Date.now() / 1000);
  const v1 = createHmac('sha256', env.STRIPE_WEBHOOK_SECRET!).update(`${t}.${body}`).digest('hex');
  return { body, headers: { 'content-type': 'application/json', 'stripe-signature': `t=${t},v1=${v1}` } };
}
async function post(path: string, request: { body: string; headers: Record<string, string> }) {
  const response = await fetch(`${api}${path}`, { method: 'POST', body: request.body, headers: request.headers });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function sendSamples(): Promise<{ provider: string; externalId: string; note: string }[]> {
  const sent: { provider: string; externalId: string; note: string }[] = [];
  const expect = (what: string, status: number, wanted: number) => {
    if (status !== wanted) throw new Error(`${what}: HTTP ${status}, expected ${wanted}`);
  };

  const withRfc = `pi_demo_${run}_1`;
  const first = stripeEvent('payment_intent.succeeded', {
    id: withRfc,
    object: 'payment_intent',
    amount: 116000,
    amount_received: 116000,
    currency: 'mxn',
    description: 'Colegiatura de diciembre',
    metadata: {
      rfc: TEST_RECEPTOR.rfc,
      razon_social: TEST_RECEPTOR.nombre,
      regimen_fiscal: TEST_RECEPTOR.regimenFiscalReceptor,
      codigo_postal: TEST_RECEPTOR.domicilioFiscalReceptor,
      uso_cfdi: TEST_RECEPTOR.usoCFDI,
    },
  });
  expect('Stripe payment', (await post('/webhooks/stripe', first)).status, 200);
  sent.push({ provider: 'stripe', externalId: withRfc, note: 'Stripe, customer RFC in metadata' });
  const again = await post('/webhooks/stripe', first);
  expect('Stripe redelivery', again.status, 200);
  out(`[demo] the same Stripe event again → 200, duplicate: ${String(again.body.duplicate)} (nothing new written)`);

  const general = `pi_demo_${run}_2`;
  const second = stripeEvent('payment_intent.succeeded', {
    id: general,
    object: 'payment_intent',
    amount: 49900,
    amount_received: 49900,
    currency: 'mxn',
    metadata: {},
  });
  expect('Stripe payment', (await post('/webhooks/stripe', second)).status, 200);
  sent.push({ provider: 'stripe', externalId: general, note: 'Stripe, público en general' });

  const mpId = String(Date.now());
  const requestId = randomUUID();
  const ts = Math.floor(Date.now() / 1000);
  const manifest = `id:${mpId};request-id:${requestId};ts:${ts};`;
  const mp = await fetch(`${api}/webhooks/mercadopago?data.id=${mpId}&type=payment`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-request-id': requestId,
      'x-signature': `ts=${ts},v1=${createHmac('sha256', env.MERCADOPAGO_WEBHOOK_SECRET!).update(manifest).digest('hex')}`,
    },
    body: JSON.stringify({
      id: Number(mpId),
      type: 'payment',
      action: 'payment.updated',
      data: {
        id: mpId,
        status: 'approved',
        transaction_amount: 580.5,
        currency_id: 'MXN',
        date_approved: new Date(Date.now() - 5000).toISOString(),
        payment_type_id: 'debit_card',
        description: 'Libros',
        metadata: {},
      },
    }),
  });
  expect('Mercado Pago payment', mp.status, 200);
  sent.push({ provider: 'mercadopago', externalId: mpId, note: 'Mercado Pago, debit card' });

  const rest = {
    body: JSON.stringify({
      externalId: `pos-${run}`,
      amount: '250.00',
      currency: 'MXN',
      occurredAt: new Date().toISOString(),
      description: 'Venta de mostrador',
    }),
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${apiKey}`,
      'idempotency-key': `demo-${run}`,
    },
  };
  expect('REST payment', (await post('/v1/payments', rest)).status, 201);
  const replay = await fetch(`${api}/v1/payments`, { method: 'POST', body: rest.body, headers: rest.headers });
  out(
    `[demo] the same POST /v1/payments with the same Idempotency-Key → ${replay.status}, Idempotent-Replayed: ${replay.headers.get('idempotent-replayed')}`,
  );
  sent.push({
    provider: `api:${env.API_KEYS!.split(':')[0]}`,
    externalId: `pos-${run}`,
    note: 'REST, Idempotency-Key',
  });

  const refund = stripeEvent('charge.refunded', {
    id: `ch_demo_${run}_2`,
    object: 'charge',
    payment_intent: general,
    currency: 'mxn',
    amount: 49900,
    refunds: { data: [{ id: `re_demo_${run}`, amount: 10000, created: Math.floor(Date.now() / 1000) }] },
  });
  expect('Stripe refund', (await post('/webhooks/stripe', refund)).status, 200);
  out(`[demo] a refund of 100.00 on ${general} → recorded`);
  return sent;
}

// --- Run ---------------------------------------------------------------------------------------
const prisma = createPrisma(env.DATABASE_URL!, { poolSize: 2 });
let ok = false;
try {
  out('[demo] starting the sandbox PAC, the API and the worker…');
  await waitFor('the API', async () => ((await fetch(`${api}/readyz`)).ok ? true : undefined));
  const sent = await sendSamples();
  const rows = await waitFor('every invoice to be stamped', async () => {
    const payments = await prisma.payment.findMany({
      where: { OR: sent.map((s) => ({ provider: s.provider, externalId: s.externalId })) },
      include: { invoices: true, refunds: true },
    });
    const done =
      payments.length === sent.length && payments.every((p) => p.invoices.every((i) => i.status === 'stamped'));
    return done ? payments : undefined;
  });
  out('');
  out('payment                              amount    serie-folio  UUID                                  status');
  for (const s of sent) {
    const p = rows.find((r) => r.provider === s.provider && r.externalId === s.externalId)!;
    for (const i of p.invoices) {
      out(
        `${s.note.padEnd(36)} ${p.amount.toFixed(2).padStart(8)}  ${`${i.serie}-${i.folio}`.padEnd(11)}  ${(i.uuid ?? '—').padEnd(36)}  ${i.status}`,
      );
    }
    for (const r of p.refunds) out(`${''.padEnd(36)} ${`-${r.amount.toFixed(2)}`.padStart(8)}  refund ${r.externalId}`);
  }
  const board = await fetch(`${api}/admin/queues/api/queues`, {
    headers: {
      authorization: `Basic ${Buffer.from(`${env.DASHBOARD_USER}:${env.DASHBOARD_PASSWORD}`).toString('base64')}`,
    },
  });
  if (!board.ok) throw new Error(`queue dashboard: HTTP ${board.status}`);
  out('');
  out(
    `[demo] queue dashboard: ${api}/admin/queues (user ${env.DASHBOARD_USER}, password ${'*'.repeat(8)} — see DASHBOARD_PASSWORD)`,
  );
  out(`[demo] an invoice's history: npm run ops -- invoice:show ${rows[0]?.invoices[0]?.uuid ?? '<uuid>'}`);
  ok = true;
} catch (error) {
  out(`[demo] FAILED: ${(error as Error).message}`);
} finally {
  await prisma.$disconnect();
}

if (values['check-secrets']) {
  const csdPassword = readFileSync(join(env.SAT_DIR ?? SAT_DIR, 'csd', 'EKU9003173C9.password.txt'), 'utf8').trim();
  const secrets = {
    'API key': apiKey,
    'Stripe webhook secret': env.STRIPE_WEBHOOK_SECRET!,
    'Mercado Pago webhook secret': env.MERCADOPAGO_WEBHOOK_SECRET!,
    'CSD password': env.CSD_PASSWORD ?? csdPassword,
    'PAC password': pacPassword,
    'dashboard password': env.DASHBOARD_PASSWORD!,
    'dashboard Basic credentials': Buffer.from(`${env.DASHBOARD_USER}:${env.DASHBOARD_PASSWORD}`).toString('base64'),
    'sandbox admin token': env.SANDBOX_ADMIN_TOKEN!,
  };
  await sleep(500);
  const logs = system.lines.join('\n');
  const leaked = Object.entries(secrets).filter(([, value]) => value && logs.includes(value));
  out(
    `[demo] secrets in ${system.lines.length} log lines at LOG_LEVEL=debug: ${leaked.length === 0 ? 'none found' : `FOUND ${leaked.map(([k]) => k).join(', ')}`}`,
  );
  if (leaked.length > 0) ok = false;
}

if (values.exit || !ok) {
  await system.stop();
  process.exit(ok ? 0 : 1);
}
out('[demo] still running — Ctrl-C stops it');
