/**
 * The demo client: makes a handful of sample payments happen — at the provider sandbox's Stripe and
 * Mercado Pago, which send their signed webhooks to the API and answer its API calls, and through
 * the REST API as a store does — with a refund, a sale in installments and an invoice corrected — waits until
 * their invoices are stamped (asking the REST API, like any client), cancels one, and returns the
 * table to print. Used by `npm run demo` (local
 * processes) and by the compose `demo` profile (containers).
 */
import { createTimbra } from '@timbra/client';
import { ProviderSandboxClient } from '@timbra/provider-client';

export interface DemoOptions {
  /** The API, e.g. http://127.0.0.1:3000. */
  apiUrl: string;
  /** An API key the API accepts (REST payments and reading invoices). */
  apiKey: string;
  /** The provider sandbox (apps/provider-sandbox), whose webhooks go to this API. */
  providersUrl: string;
  /** Give up waiting for stamps after this long. */
  timeoutMs: number;
  /** Progress lines. */
  log: (line: string) => void;
  /** With an admin key: a webhook endpoint (all events) is registered at this URL before the samples. */
  webhooks?: { url: string; adminKey: string };
}

/** The endpoint the demo registered, and its signing secret (shown once, at registration). */
export interface DemoEndpoint {
  id: string;
  secret: string;
}

export interface DemoRow {
  /** The invoice's id. */
  id: string;
  note: string;
  externalId: string;
  amount: string;
  serieFolio: string;
  uuid: string | null;
  status: string;
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

/** The description of the webhook endpoint the demo registers: how a later run knows an earlier run's. */
export const DEMO_ENDPOINT = 'npm run demo';

/** The customer's address: its copy of each CFDI is emailed there. */
export const DEMO_EMAIL = 'xochilt.casas@cliente.example';

/**
 * Waits for the API to be ready, registers the webhook endpoint (when asked), sends the samples, waits
 * for every invoice to be stamped, and returns one row per invoice.
 */
export async function runDemo(options: DemoOptions): Promise<{ rows: DemoRow[]; endpoint?: DemoEndpoint }> {
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
  const sandbox = new ProviderSandboxClient(options.providersUrl);
  // Each provider call answers once its webhooks were sent; the API must have taken every one (2xx).
  const accepted = async <T extends { events: string[] }>(made: Promise<T>): Promise<T> => {
    const result = await made;
    for (const id of result.events) {
      const record = await sandbox.delivery(id);
      if (!record.delivered)
        throw new Error(
          `the API did not accept ${record.provider} event ${id}: HTTP ${record.attempts.at(-1)?.status}`,
        );
    }
    return result;
  };
  const providers = {
    stripePayment: (input: Parameters<ProviderSandboxClient['stripePayment']>[0]) =>
      accepted(sandbox.stripePayment(input)),
    capture: (id: string, input: { amount: number }) => accepted(sandbox.capture(id, input)),
    stripeRefund: (input: Parameters<ProviderSandboxClient['stripeRefund']>[0]) =>
      accepted(sandbox.stripeRefund(input)),
    mercadoPagoPayment: (input: Parameters<ProviderSandboxClient['mercadoPagoPayment']>[0]) =>
      accepted(sandbox.mercadoPagoPayment(input)),
    checkoutSession: (input: Parameters<ProviderSandboxClient['checkoutSession']>[0]) =>
      accepted(sandbox.checkoutSession(input)),
    deliver: (id: string) => sandbox.deliver(id),
  };
  const sent: { externalId: string; note: string }[] = [];

  // The merchant's systems: told of every event (signed), from the first payment on.
  let endpoint: DemoEndpoint | undefined;
  if (options.webhooks) {
    // An earlier run on this database left its endpoint enabled, pointing at a receiver that is gone
    // (each run listens on a port of its own): disabled, so the worker stops retrying it. An endpoint
    // the merchant registered (any other description) is left as it is.
    const admin = { authorization: `Bearer ${options.webhooks.adminKey}` };
    for (let cursor: string | null = null, first = true; first || cursor; first = false) {
      const url = `${apiUrl}/v1/webhook-endpoints?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const listed = await fetch(url, { headers: admin });
      if (!listed.ok) throw new Error(`GET /v1/webhook-endpoints: HTTP ${listed.status}: ${await listed.text()}`);
      const page = (await listed.json()) as {
        data: { id: string; url: string; description: string | null; status: string }[];
        nextCursor: string | null;
      };
      for (const old of page.data.filter((e) => e.description === DEMO_ENDPOINT && e.status === 'enabled')) {
        const disabled = await fetch(`${apiUrl}/v1/webhook-endpoints/${old.id}`, {
          method: 'PATCH',
          body: JSON.stringify({ status: 'disabled' }),
          headers: { 'content-type': 'application/json', ...admin },
        });
        if (!disabled.ok)
          throw new Error(`PATCH /v1/webhook-endpoints/${old.id}: HTTP ${disabled.status}: ${await disabled.text()}`);
        log(
          `[demo] PATCH /v1/webhook-endpoints/${old.id} → disabled: an earlier demo run's, its receiver ${old.url} is gone`,
        );
      }
      cursor = page.nextCursor;
    }
    const registered = await post(
      '/v1/webhook-endpoints',
      JSON.stringify({ url: options.webhooks.url, events: ['*'], description: DEMO_ENDPOINT }),
      { authorization: `Bearer ${options.webhooks.adminKey}` },
      201,
    );
    endpoint = { id: String(registered.body.id), secret: String(registered.body.secret) };
    log(`[demo] POST /v1/webhook-endpoints → ${endpoint.id}: every event goes to ${options.webhooks.url}, signed`);
  }

  // Stripe: a card payment with the customer's RFC in its metadata (charge.succeeded and
  // payment_intent.succeeded, one payment), then one of its events delivered again.
  const withRfc = await providers.stripePayment({
    amount: 116000,
    method: 'card_credit',
    description: 'Colegiatura de diciembre',
    metadata: CUSTOMER,
    receiptEmail: DEMO_EMAIL,
  });
  sent.push({ externalId: withRfc.paymentIntent.id, note: 'Stripe card, customer RFC' });
  const again = await providers.deliver(withRfc.events[1]!);
  log(
    `[demo] the same Stripe event delivered again → HTTP ${again.attempts.at(-1)?.status ?? '?'} (nothing new written)`,
  );

  const general = await providers.stripePayment({ amount: 49900, method: 'oxxo' });
  sent.push({ externalId: general.paymentIntent.id, note: 'Stripe OXXO, público en general' });

  // An authorization captured for less: invoiced once, for what was captured.
  const authorized = await providers.stripePayment({ amount: 150000, capture: 'manual', metadata: CUSTOMER });
  await providers.capture(authorized.paymentIntent.id, { amount: 120000 });
  log('[demo] a Stripe authorization of 1500.00 captured for 1200.00 → invoiced once, for 1200.00');
  sent.push({ externalId: authorized.paymentIntent.id, note: 'Stripe, captured for less' });

  // A store's catalogue and a customer entered once, then a Stripe Checkout Session with two products:
  // one invoice, one concepto per product (its SAT keys), the Stripe customer's fiscal data.
  const reference = `demo-audifonos-${run}`;
  await post(
    '/v1/products',
    JSON.stringify({
      reference,
      descripcion: 'Audífonos inalámbricos',
      claveProdServ: '52161514',
      claveUnidad: 'H87',
      taxes: { iva: '16' },
    }),
    auth,
    201,
  );
  const stripeCustomer = `cus_demo${run}`;
  await post(
    '/v1/customers',
    JSON.stringify({
      rfc: CUSTOMER.rfc,
      nombre: CUSTOMER.razon_social,
      codigoPostal: CUSTOMER.codigo_postal,
      regimenFiscal: CUSTOMER.regimen_fiscal,
      usoCfdi: CUSTOMER.uso_cfdi,
      stripeCustomerId: stripeCustomer,
    }),
    auth,
    201,
  );
  const checkout = await providers.checkoutSession({
    customer: stripeCustomer,
    lines: [
      { name: 'Audífonos', quantity: 1, unitAmount: 116000, metadata: { timbra_product: reference } },
      { name: 'Libro de cocina', quantity: 2, unitAmount: 34900, metadata: { sat_product_key: '55101500' } },
    ],
  });
  const sale = await fetch(`${apiUrl}/v1/payments?limit=20`, { headers: auth });
  const lines = (
    (await sale.json()) as { data: (PaymentView & { lines: { descripcion: string }[] | null })[] }
  ).data.find((p) => p.externalId === checkout.paymentIntent.id)?.lines;
  log(
    `[demo] a Stripe Checkout Session with two products → one invoice, conceptos: ${lines?.map((l) => l.descripcion).join(' + ') ?? 'none?'}, to customer ${stripeCustomer}'s RFC`,
  );
  sent.push({ externalId: checkout.paymentIntent.id, note: 'Stripe Checkout, 2 products' });

  // Dollars settled in pesos: the CFDI is in USD with Stripe's own exchange rate as TipoCambio.
  const dollars = await providers.stripePayment({ amount: 5800, currency: 'usd', settlementExchangeRate: 17.3125 });
  sent.push({ externalId: dollars.paymentIntent.id, note: 'Stripe USD, TipoCambio 17.3125' });

  // Mercado Pago: the notification carries ids only; the API fetches the payment.
  const mp = await providers.mercadoPagoPayment({ amount: 580.5, paymentType: 'debit_card', description: 'Libros' });
  sent.push({ externalId: String(mp.payment.id), note: 'Mercado Pago, debit card' });

  // A customer whose data breaks a SAT rule (régimen 605 may not use G03, CFDI40161): the money is
  // recorded, its invoice needs data — then corrected with PATCH, frozen under the folio it holds.
  const wrong = await providers.stripePayment({ amount: 232000, metadata: { ...CUSTOMER, regimen_fiscal: '605' } });
  const needing = await fetch(
    `${apiUrl}/v1/invoices?status=needs_data&externalId=${encodeURIComponent(wrong.paymentIntent.id)}`,
    { headers: auth },
  );
  const [needsData] = (
    (await needing.json()) as { data: { id: string; serieFolio: string; problems?: { rule?: string }[] }[] }
  ).data;
  if (!needsData) throw new Error(`the payment ${wrong.paymentIntent.id} has no invoice in needs_data`);
  log(
    `[demo] a Stripe payment whose customer's régimen breaks ${needsData.problems?.[0]?.rule ?? 'a SAT rule'} → recorded, ${needsData.serieFolio} needs data`,
  );
  const corrected = await fetch(`${apiUrl}/v1/invoices/${needsData.id}`, {
    method: 'PATCH',
    body: JSON.stringify({ receptor: { regimenFiscal: CUSTOMER.regimen_fiscal }, reason: 'régimen as the SAT has it' }),
    headers: { 'content-type': 'application/json', ...auth, 'idempotency-key': `demo-fix-${run}` },
  });
  if (corrected.status !== 200) throw new Error(`PATCH /v1/invoices/${needsData.id}: HTTP ${corrected.status}`);
  log(
    `[demo] PATCH /v1/invoices/${needsData.id} with the customer's régimen → 200: frozen as ${needsData.serieFolio}, stamped next`,
  );
  sent.push({ externalId: wrong.paymentIntent.id, note: 'Stripe, corrected (PATCH)' });

  // The store's own code: @timbra/client, typed from openapi.yaml. Its retries reuse one key a call;
  // here the store sends the same sale twice on purpose, with its own key.
  const timbra = createTimbra({ baseUrl: apiUrl, apiKey: options.apiKey });
  const counterSale = {
    params: { header: { 'Idempotency-Key': `demo-${run}` } },
    body: {
      externalId: `pos-${run}`,
      amount: '250.00',
      currency: 'MXN',
      occurredAt: new Date().toISOString(),
      description: 'Venta de mostrador',
      email: DEMO_EMAIL,
    },
  };
  const first = await timbra.POST('/v1/payments', counterSale);
  const replay = await timbra.POST('/v1/payments', counterSale);
  if (first.response.status !== 201 || replay.response.status !== 201 || replay.data?.id !== first.data?.id) {
    throw new Error(`POST /v1/payments twice: HTTP ${first.response.status}, ${replay.response.status}`);
  }
  log(
    `[demo] the same POST /v1/payments with the same Idempotency-Key (@timbra/client) → 201 again, Idempotent-Replayed: ${replay.response.headers.get('idempotent-replayed')}`,
  );
  sent.push({ externalId: `pos-${run}`, note: 'REST, Idempotency-Key' });

  await providers.stripeRefund({ paymentIntent: general.paymentIntent.id, amount: 10000 });
  log(
    `[demo] a Stripe refund of 100.00 on ${general.paymentIntent.id} (charge.refunded, read from Stripe's API): its Egreso is stamped once the Ingreso is`,
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
      email: DEMO_EMAIL,
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
  const rows = final.flatMap(({ s, p }) =>
    [...p!.invoices]
      .sort((a, b) => Number(b.kind === 'I') - Number(a.kind === 'I'))
      .map((i) => ({
        id: i.id,
        note: notes[i.kind] ?? s.note,
        externalId: s.externalId,
        amount: i.total,
        serieFolio: i.serieFolio,
        uuid: i.uuid,
        status: i.status,
      })),
  );
  return { rows, ...(endpoint ? { endpoint } : {}) };
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

interface DeliveryView {
  id: string;
  channel: 'email' | 'webhook';
  eventType: string;
  invoiceId: string | null;
  endpointId: string | null;
  recipient: string | null;
  status: string;
  lastError: string | null;
}

/**
 * Waits until every email and webhook delivery of `invoiceIds` (of the given channels) is delivered,
 * asking the API's delivery log as an operator does; throws listing what is still pending (and why).
 * With `endpointId`, webhook deliveries to other endpoints (a merchant's own, an earlier run's) are
 * not waited for.
 * @returns the deliveries.
 */
export async function waitForDeliveries(
  options: Pick<DemoOptions, 'apiUrl' | 'apiKey'> & { deadline: number; endpointId?: string },
  invoiceIds: readonly string[],
  channels: readonly ('email' | 'webhook')[],
): Promise<DeliveryView[]> {
  const auth = { authorization: `Bearer ${options.apiKey}` };
  for (;;) {
    const all: DeliveryView[] = [];
    for (const id of invoiceIds) {
      const url = `${options.apiUrl}/v1/deliveries?invoiceId=${id}&limit=100`;
      let response = await fetch(url, { headers: auth });
      // A slow machine keeps this loop asking long enough to meet the API's rate limit: wait as told.
      while (response.status === 429 && Date.now() < options.deadline) {
        const seconds = Number(response.headers.get('retry-after')) || 1;
        await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
        response = await fetch(url, { headers: auth });
      }
      if (!response.ok) throw new Error(`GET /v1/deliveries: HTTP ${response.status}`);
      all.push(
        ...((await response.json()) as { data: DeliveryView[] }).data.filter(
          (d) =>
            channels.includes(d.channel) &&
            (d.channel !== 'webhook' || !options.endpointId || d.endpointId === options.endpointId),
        ),
      );
    }
    const waiting = all.filter((d) => d.status !== 'delivered');
    if (waiting.length === 0) return all;
    if (Date.now() > options.deadline)
      throw new Error(
        `deliveries not done in time: ${waiting.map((d) => `${d.channel} ${d.eventType} ${d.status}${d.lastError ? ` (${d.lastError})` : ''}`).join('; ')}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/** What the global-mode part of the demo made: the tickets, the self-invoiced one and the period's global. */
export interface GlobalDemo {
  tickets: { code: string; total: string; formaPago: string }[];
  selfInvoiced: { code: string; serieFolio: string; uuid: string; pdf: Buffer };
  global: {
    id: string;
    label: string;
    invoices: { id: string; serieFolio: string; uuid: string; total: string; codes: string[] }[];
    total: string;
    pdf: Buffer;
  };
}

/**
 * Público en general in global mode, against an API with PUBLICO_GENERAL_MODE=global: three sales at
 * the till without the customer (tickets, their codes printed), one self-invoiced through the
 * /facturar page as a browser posts it (its CSRF cookie and field, the 303 to the ticket's page,
 * which is read until the invoice is stamped, and the PDF downloaded), then the admin closes the
 * tickets' period (POST /v1/globals) and the global is waited for until stamped.
 */
export async function runGlobalDemo(options: {
  apiUrl: string;
  apiKey: string;
  adminKey: string;
  timeoutMs: number;
  log: (line: string) => void;
}): Promise<GlobalDemo> {
  const { apiUrl, log } = options;
  const deadline = Date.now() + options.timeoutMs;
  const run = Date.now().toString(36);
  const auth = { authorization: `Bearer ${options.apiKey}`, 'content-type': 'application/json' };
  const until = async <T>(what: string, probe: () => Promise<T | undefined>): Promise<T> => {
    for (;;) {
      const found = await probe();
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`${what} in time`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  await until('the global-mode API did not become ready', async () =>
    (await fetch(`${apiUrl}/readyz`).then(
      (r) => r.ok,
      () => false,
    ))
      ? true
      : undefined,
  );

  const sales = [
    { amount: '116.00', formaPago: '01', description: 'Uniforme' },
    { amount: '348.00', formaPago: '04', description: 'Libros' },
    { amount: '58.00', formaPago: '01', description: 'Cuaderno' },
  ];
  const tickets: { code: string; total: string; formaPago: string; period: string }[] = [];
  for (const [n, sale] of sales.entries()) {
    const response = await fetch(`${apiUrl}/v1/payments`, {
      method: 'POST',
      headers: { ...auth, 'idempotency-key': `demo-ticket-${run}-${n}` },
      body: JSON.stringify({
        externalId: `till-${run}-${n + 1}`,
        amount: sale.amount,
        currency: 'MXN',
        occurredAt: new Date().toISOString(),
        formaPago: sale.formaPago,
        description: sale.description,
      }),
    });
    if (response.status !== 201) throw new Error(`POST /v1/payments (ticket): HTTP ${response.status}`);
    const body = (await response.json()) as { ticket?: { code: string; period: string } };
    if (!body.ticket)
      throw new Error('a sale without the customer did not become a ticket: is PUBLICO_GENERAL_MODE=global?');
    tickets.push({ code: body.ticket.code, total: sale.amount, formaPago: sale.formaPago, period: body.ticket.period });
  }
  log(
    `[demo] público en general, global mode (${apiUrl}): 3 sales at the till → tickets ${tickets.map((t) => `${t.code} (${t.total})`).join(', ')}, period ${tickets[0]!.period}`,
  );

  // The customer of the first ticket asks for their own CFDI on the page, as a browser posts the form.
  const mine = tickets[0]!;
  const form = await fetch(`${apiUrl}/facturar`);
  const cookie = /timbra_csrf=([^;]+)/.exec(form.headers.get('set-cookie') ?? '')?.[1];
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
  if (!cookie || !csrf) throw new Error('GET /facturar: no CSRF cookie or field');
  const submitted = await fetch(`${apiUrl}/facturar`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `timbra_csrf=${cookie}` },
    body: new URLSearchParams({
      _csrf: csrf,
      codigo: mine.code,
      total: mine.total,
      rfc: CUSTOMER.rfc,
      nombre: CUSTOMER.razon_social,
      codigoPostal: CUSTOMER.codigo_postal,
      regimenFiscal: CUSTOMER.regimen_fiscal,
      usoCfdi: CUSTOMER.uso_cfdi,
      email: DEMO_EMAIL,
    }).toString(),
  });
  const location = submitted.headers.get('location');
  if (submitted.status !== 303 || !location) throw new Error(`POST /facturar: HTTP ${submitted.status}, expected 303`);
  const page = `${apiUrl}${location}`;
  log(`[demo] ticket ${mine.code} self-invoiced on ${apiUrl}/facturar → 303 ${page}`);
  const stampedPage = await until('the self-invoiced CFDI was not stamped', async () => {
    const html = await (await fetch(page)).text();
    return html.includes('Tu factura está lista') ? html : undefined;
  });
  const uuid = /<strong>([0-9A-F-]{36})<\/strong>/i.exec(stampedPage)?.[1] ?? '?';
  const serieFolio = /Serie y folio: ([^ ]+)/.exec(stampedPage)?.[1] ?? '?';
  const selfPdf = Buffer.from(await (await fetch(`${page}/factura.pdf`)).arrayBuffer());

  // The period closes: the admin issues it now (the close timer would, GLOBAL_CLOSE_DELAY_MINUTES after its end).
  const issued = await fetch(`${apiUrl}/v1/globals`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${options.adminKey}`,
      'content-type': 'application/json',
      'idempotency-key': `demo-global-${run}`,
    },
    body: JSON.stringify({ startsOn: mine.period }),
  });
  if (issued.status !== 201) throw new Error(`POST /v1/globals: HTTP ${issued.status}: ${await issued.text()}`);
  const { periodId } = (await issued.json()) as { periodId: string };
  interface GlobalView {
    label: string;
    total: string;
    invoices: {
      id: string;
      serie: string;
      folio: number;
      status: string;
      uuid: string | null;
      total: string;
      tickets: { code: string }[];
    }[];
  }
  const global = await until('the factura global was not stamped', async () => {
    const view = (await (await fetch(`${apiUrl}/v1/globals/${periodId}`, { headers: auth })).json()) as GlobalView;
    return view.invoices.length > 0 && view.invoices.every((i) => i.status === 'stamped') ? view : undefined;
  });
  const first = global.invoices[0]!;
  const globalPdf = Buffer.from(
    await (await fetch(`${apiUrl}/v1/invoices/${first.id}/pdf`, { headers: auth })).arrayBuffer(),
  );
  return {
    tickets: tickets.map(({ code, total, formaPago }) => ({ code, total, formaPago })),
    selfInvoiced: { code: mine.code, serieFolio, uuid, pdf: selfPdf },
    global: {
      id: periodId,
      label: global.label,
      total: global.total,
      invoices: global.invoices.map((i) => ({
        id: i.id,
        serieFolio: `${i.serie}-${i.folio}`,
        uuid: i.uuid ?? '?',
        total: i.total,
        codes: i.tickets.map((t) => t.code),
      })),
      pdf: globalPdf,
    },
  };
}
