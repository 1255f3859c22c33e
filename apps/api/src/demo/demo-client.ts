/**
 * The demo client: sends a handful of sample payments to a running Timbra API through its real
 * entrances, the way providers and stores do — with a refund and a sale in installments — waits until
 * their invoices are stamped (asking the REST API, like any client), cancels one, and returns the
 * table to print. Used by `npm run demo` (local
 * processes) and by the compose `demo` profile (containers).
 */
import { createHmac, randomUUID } from 'node:crypto';

export interface DemoOptions {
  /** The API, e.g. http://127.0.0.1:3000. */
  apiUrl: string;
  /** An API key the API accepts (REST payments and reading invoices). */
  apiKey: string;
  stripeSecret: string;
  mercadoPagoSecret: string;
  /** Give up waiting for stamps after this long. */
  timeoutMs: number;
  /** Progress lines. */
  log: (line: string) => void;
}

export interface DemoRow {
  note: string;
  externalId: string;
  amount: string;
  serieFolio: string;
  uuid: string | null;
  status: string;
}

/** `Stripe-Signature` for a body, as Stripe computes it: `t=<unix s>,v1=<HMAC-SHA256(secret, "t.body")>`. */
export function stripeSignatureHeader(body: string, secret: string, t = Math.floor(Date.now() / 1000)): string {
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
}

/** Mercado Pago's `x-signature`: HMAC-SHA256 of `id:<data.id>;request-id:<x-request-id>;ts:<ts>;`. */
export function mercadoPagoSignatureHeader(
  dataId: string,
  requestId: string,
  secret: string,
  ts = Math.floor(Date.now() / 1000),
): string {
  const manifest = `id:${dataId.toLowerCase()};request-id:${requestId};ts:${ts};`;
  return `ts=${ts},v1=${createHmac('sha256', secret).update(manifest).digest('hex')}`;
}

/** A customer with fiscal data: the SAT's test persona física. */
const CUSTOMER = {
  rfc: 'CACX7605101P8',
  razon_social: 'XOCHILT CASAS CHAVEZ',
  regimen_fiscal: '612',
  codigo_postal: '36257',
  uso_cfdi: 'G03',
};

interface PaymentView {
  id: string;
  provider: string;
  externalId: string;
  amount: string;
  invoices: { id: string; kind: string; serieFolio: string; total: string; uuid: string | null; status: string }[];
}

/** Waits for the API to be ready, sends the samples, waits for every invoice to be stamped, and returns one row per invoice. */
export async function runDemo(options: DemoOptions): Promise<DemoRow[]> {
  const { apiUrl, log } = options;
  const run = Date.now().toString(36);
  const deadline = Date.now() + options.timeoutMs;
  const auth = { authorization: `Bearer ${options.apiKey}` };
  while (
    !(await fetch(`${apiUrl}/readyz`).then(
      (r) => r.ok,
      () => false,
    ))
  ) {
    if (Date.now() > deadline) throw new Error(`${apiUrl} did not become ready`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }

  const post = async (path: string, body: string, headers: Record<string, string>, expected: number) => {
    const response = await fetch(`${apiUrl}${path}`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...headers },
    });
    if (response.status !== expected) {
      throw new Error(`POST ${path}: HTTP ${response.status}, expected ${expected}: ${await response.text()}`);
    }
    return { headers: response.headers, body: (await response.json()) as Record<string, unknown> };
  };
  const stripe = (type: string, object: object) => {
    const body = JSON.stringify({
      id: `evt_demo_${run}_${randomUUID().slice(0, 8)}`,
      object: 'event',
      type,
      created: Math.floor(Date.now() / 1000) - 5,
      data: { object },
    });
    return { body, headers: { 'stripe-signature': stripeSignatureHeader(body, options.stripeSecret) } };
  };

  const sent: { externalId: string; note: string }[] = [];

  const withRfc = `pi_demo_${run}_1`;
  const first = stripe('payment_intent.succeeded', {
    id: withRfc,
    object: 'payment_intent',
    amount: 116000,
    amount_received: 116000,
    currency: 'mxn',
    description: 'Colegiatura de diciembre',
    metadata: CUSTOMER,
  });
  await post('/webhooks/stripe', first.body, first.headers, 200);
  sent.push({ externalId: withRfc, note: 'Stripe, customer RFC in metadata' });
  const again = await post('/webhooks/stripe', first.body, first.headers, 200);
  log(`[demo] the same Stripe event again → 200, duplicate: ${String(again.body.duplicate)} (nothing new written)`);

  const general = `pi_demo_${run}_2`;
  const second = stripe('payment_intent.succeeded', {
    id: general,
    object: 'payment_intent',
    amount: 49900,
    amount_received: 49900,
    currency: 'mxn',
    metadata: {},
  });
  await post('/webhooks/stripe', second.body, second.headers, 200);
  sent.push({ externalId: general, note: 'Stripe, público en general' });

  const mpId = String(Date.now());
  const requestId = randomUUID();
  await post(
    `/webhooks/mercadopago?data.id=${mpId}&type=payment`,
    JSON.stringify({
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
    {
      'x-request-id': requestId,
      'x-signature': mercadoPagoSignatureHeader(mpId, requestId, options.mercadoPagoSecret),
    },
    200,
  );
  sent.push({ externalId: mpId, note: 'Mercado Pago, debit card' });

  const pos = JSON.stringify({
    externalId: `pos-${run}`,
    amount: '250.00',
    currency: 'MXN',
    occurredAt: new Date().toISOString(),
    description: 'Venta de mostrador',
  });
  const restHeaders = { ...auth, 'idempotency-key': `demo-${run}` };
  await post('/v1/payments', pos, restHeaders, 201);
  const replay = await post('/v1/payments', pos, restHeaders, 201);
  log(
    `[demo] the same POST /v1/payments with the same Idempotency-Key → 201 again, Idempotent-Replayed: ${replay.headers.get('idempotent-replayed')}`,
  );
  sent.push({ externalId: `pos-${run}`, note: 'REST, Idempotency-Key' });

  const refund = stripe('charge.refunded', {
    id: `ch_demo_${run}_2`,
    object: 'charge',
    payment_intent: general,
    currency: 'mxn',
    amount: 49900,
    refunds: { data: [{ id: `re_demo_${run}`, amount: 10000, created: Math.floor(Date.now() / 1000) }] },
  });
  await post('/webhooks/stripe', refund.body, refund.headers, 200);
  log(
    `[demo] a Stripe refund of 100.00 on ${general} → 200: its Egreso (nota de crédito) is stamped once the Ingreso is`,
  );

  // A sale in three installments (PPD) and its first installment: a Pago (complemento de pago 2.0).
  const ppd = await post(
    '/v1/payments',
    JSON.stringify({
      externalId: `ppd-${run}`,
      amount: '3480.00',
      currency: 'MXN',
      occurredAt: new Date().toISOString(),
      description: 'Curso de verano, en tres pagos',
      paymentTerms: 'installments',
      receptor: {
        rfc: CUSTOMER.rfc,
        nombre: CUSTOMER.razon_social,
        regimenFiscal: CUSTOMER.regimen_fiscal,
        codigoPostal: CUSTOMER.codigo_postal,
        usoCfdi: CUSTOMER.uso_cfdi,
      },
    }),
    auth,
    201,
  );
  const ppdIngreso = (ppd.body.invoices as { id: string }[])[0]!.id;
  await post(
    `/v1/invoices/${ppdIngreso}/payments`,
    JSON.stringify({
      externalId: `ppd-${run}-1`,
      amount: '1160.00',
      paidAt: new Date().toISOString(),
      formaPago: '03',
    }),
    auth,
    201,
  );
  log(
    '[demo] a sale in three installments (PPD) and its first installment → 201: its Pago is stamped once the Ingreso is',
  );
  sent.push({ externalId: `ppd-${run}`, note: 'REST, sale in installments (PPD)' });

  // Wait for the stamps, reading what any client reads: the newest payments and their invoices.
  const mine = async () => {
    const response = await fetch(`${apiUrl}/v1/payments?limit=50`, { headers: auth });
    if (!response.ok) throw new Error(`GET /v1/payments: HTTP ${response.status}`);
    const { data } = (await response.json()) as { data: PaymentView[] };
    return sent.map((s) => ({ s, p: data.find((p) => p.externalId === s.externalId) }));
  };
  const waitFor = async (what: string, done: (invoices: PaymentView['invoices']) => boolean) => {
    for (;;) {
      const found = await mine();
      if (found.every(({ p }) => p && p.invoices.length > 0 && done(p.invoices))) return found;
      if (Date.now() > deadline) {
        const states = found.map(
          ({ s, p }) => `${s.externalId}: ${p?.invoices.map((i) => i.status).join(',') ?? 'missing'}`,
        );
        throw new Error(`${what} in time (${states.join('; ')})`);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  await waitFor('not every invoice was stamped', (invoices) => invoices.every((i) => i.status === 'stamped'));

  // The REST sale did not happen after all: its invoice is cancelled (motivo 03), through the PAC and the SAT.
  const restInvoice = (await mine()).find(({ s }) => s.externalId === `pos-${run}`)!.p!.invoices[0]!;
  await post(`/v1/invoices/${restInvoice.id}/cancel`, JSON.stringify({ motivo: '03' }), auth, 202);
  log(
    `[demo] POST /v1/invoices/${restInvoice.id}/cancel (motivo 03) → 202: the worker cancels ${restInvoice.serieFolio} at the PAC`,
  );
  const final = await waitFor('the cancellation did not finish', (invoices) =>
    invoices.every((i) => (i.id === restInvoice.id ? i.status === 'cancelled' : i.status === 'stamped')),
  );
  const notes: Record<string, string> = { E: `  └ its refund's Egreso`, P: `  └ its first installment's Pago` };
  return final.flatMap(({ s, p }) =>
    p!.invoices.map((i) => ({
      note: notes[i.kind] ?? s.note,
      externalId: s.externalId,
      amount: i.total,
      serieFolio: i.serieFolio,
      uuid: i.uuid,
      status: i.status,
    })),
  );
}

/** The rows as a table. */
export function demoTable(rows: readonly DemoRow[]): string[] {
  const lines = [
    'payment                               total    serie-folio  UUID                                  status',
  ];
  for (const r of rows) {
    lines.push(
      `${r.note.padEnd(36)} ${r.amount.padStart(8)}  ${r.serieFolio.padEnd(11)}  ${(r.uuid ?? '—').padEnd(36)}  ${r.status}`,
    );
  }
  return lines;
}
