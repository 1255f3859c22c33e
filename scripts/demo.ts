/**
 * `npm run demo [-- --exit] [--check-secrets] [--verbose] [--timeout S]` — the whole system on this
 * machine (as `npm run dev`: migrations, pac-sandbox, provider sandbox, API, worker), then a handful
 * of sample payments through the real entrances: made to happen at the provider sandbox's Stripe
 * (a card payment with the customer's RFC, one of its events delivered again, an OXXO payment to
 * público en general, an authorization captured for less, a Checkout Session with two products — a
 * product and a customer entered through the API first —, dollars settled in pesos) and Mercado Pago (a debit card payment,
 * fetched by the API), a REST payment with Idempotency-Key sent twice, a Stripe refund (an Egreso,
 * read from Stripe's API), and a sale in installments with its
 * first installment (a Pago). It waits until every invoice is stamped, cancels the REST one through
 * the API (motivo 03) and waits for the cancellation, then prints payment → serie-folio → UUID →
 * status, and the dashboard URL. Before the samples it registers a webhook endpoint (all events) at a
 * receiver of its own; after them it waits until every email (to the sample customer's address, kept
 * by the local SMTP server in .local/mail/) and every webhook of those invoices is delivered, checks
 * each webhook's signature as docs/outbound.md tells a receiver to, and saves each invoice's PDF in
 * .local/demo/, printing where to see all three. Then a second organization (platform mode): made
 * through /v1/organizations with its CSD, key, serie, sender, logo and colour, and a payment of its own
 * stamped as its emisor by the same worker (scripts/demo/organization-demo.ts).
 *
 * Then it keeps running (Ctrl-C stops it), or with `--exit` stops everything and exits: 0 when every
 * invoice was stamped (and the one cancelled) in time, 1 otherwise. `--check-secrets` runs the apps at LOG_LEVEL=debug and
 * fails when any configured secret (API key, webhook secrets, CSD password, PAC and dashboard
 * passwords, sandbox admin token) appears in their logs. `.ci/run` runs it with both flags.
 */
import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { verifyWebhook, WebhookSignatureError } from '@timbra/client';
import { demoTable, runDemo, runGlobalDemo, waitForDeliveries } from './demo/demo-client.ts';
import { runOrganizationDemo } from './demo/organization-demo.ts';
import { freePort, SAT_DIR } from '@timbra/test-support';
import { LOCAL_DIR, localEnv, startLocalSystem, stopOnSignals } from './local-system.ts';

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
// The operator's key registers the demo's webhook endpoint (admin); without one, no webhooks.
const adminKey = env
  .API_KEYS!.split(',')
  .map((entry) => entry.split(':'))
  .find(([, , scopes]) => scopes === 'admin' || scopes?.split('+').includes('admin'))?.[1];
const deadline = Date.now() + Number(values.timeout) * 1000;

let failed = false;
// The merchant's receiver: a local HTTP server that keeps every webhook as it arrived (verified below).
// Bound before the second API's port is chosen, so port 0 cannot hand it that port once let go.
const received: { body: string; signature: string; eventId: string; type: string }[] = [];
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    received.push({
      body: Buffer.concat(chunks).toString('utf8'),
      signature: String(req.headers['timbra-signature'] ?? ''),
      eventId: String(req.headers['timbra-event-id'] ?? ''),
      type: String(req.headers['timbra-event-type'] ?? ''),
    });
    res.end('ok');
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
receiver.unref();
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/timbra-webhooks`;

// Público en general in global mode (tickets, the self-invoicing page, the factura global) is shown on a
// second API over the same database with PUBLICO_GENERAL_MODE=global: the first keeps per-payment mode.
const globalPort = await freePort();
const globalApi = `http://127.0.0.1:${globalPort}`;
const extra = [
  {
    name: 'api-global',
    workspace: '@timbra/api',
    env: { PORT: String(globalPort), METRICS_PORT: '0', PUBLICO_GENERAL_MODE: 'global' },
  },
];
const system = await startLocalSystem(
  env,
  values.verbose ? out : () => undefined,
  (name, code) => {
    out(`[demo] ${name} exited (${code}); its last lines:`);
    system.lines
      .filter((l) => l.startsWith(`[${name}]`))
      .slice(-15)
      .forEach(out);
    failed = true;
  },
  extra,
);
const stop = stopOnSignals(system, out);

/** The receiver's check, as an integrator writes it with @timbra/client. */
function verifiedBy(body: string, header: string, secret: string): boolean {
  try {
    verifyWebhook(body, header, secret);
    return true;
  } catch (error) {
    if (error instanceof WebhookSignatureError) return false;
    throw error;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let ok = false;
/** The webhook endpoint's signing secret, once registered: checked against the logs like the rest. */
let endpointSecret: string | undefined;
/** The second organization's API keys (live and test), once made: checked against the logs like the rest. */
let organizationKeys: string[] = [];
try {
  out('[demo] starting the sandbox PAC, the provider sandbox, the API and the worker…');
  const { rows, endpoint } = await runDemo({
    apiUrl: api,
    apiKey,
    providersUrl: env.STRIPE_API_URL!,
    timeoutMs: Math.max(1000, deadline - Date.now()),
    log: out,
    ...(adminKey ? { webhooks: { url: receiverUrl, adminKey } } : {}),
  });
  const board = await fetch(`${api}/admin/queues/api/queues`, {
    headers: {
      authorization: `Basic ${Buffer.from(`${env.DASHBOARD_USER}:${env.DASHBOARD_PASSWORD}`).toString('base64')}`,
    },
  });
  if (!board.ok) throw new Error(`queue dashboard: HTTP ${board.status}`);
  out('');
  demoTable(rows).forEach(out);
  out('');

  endpointSecret = endpoint?.secret;
  // The customer's copy and the merchant's signal: every email and webhook of these invoices delivered.
  const deliveries = await waitForDeliveries(
    { apiUrl: api, apiKey, deadline, ...(endpoint ? { endpointId: endpoint.id } : {}) },
    rows.map((r) => r.id),
    [...(system.mailbox ? (['email'] as const) : []), ...(endpoint ? (['webhook'] as const) : [])],
  );
  const emails = deliveries.filter((d) => d.channel === 'email');
  if (system.mailbox) {
    const arrived = system.mailbox.received.filter((m) => emails.some((e) => m.messageId?.startsWith(`<${e.id}@`)));
    if (arrived.length !== emails.length)
      throw new Error(`${emails.length} emails delivered, ${arrived.length} found in the local mailbox`);
    const first = arrived[0];
    out(
      `[demo] emails: ${arrived.length} to ${[...new Set(emails.map((e) => e.recipient))].join(', ')} (stamped and cancelled), each with its XML and PDF, kept in ${join(LOCAL_DIR, 'mail')}/ — open a .eml with any mail client${first ? `; e.g. “${first.parsed.subject}”: ${first.parsed.attachments.map((a) => a.filename).join(', ')}` : ''}`,
    );
  }
  if (endpoint) {
    const stampedIds = new Set(
      received
        .filter((r) => r.type === 'invoice.stamped')
        .map((r) => (JSON.parse(r.body) as { data: { object: { id: string } } }).data.object.id),
    );
    const missing = rows.filter((r) => !stampedIds.has(r.id));
    if (missing.length > 0)
      throw new Error(`no invoice.stamped webhook for ${missing.map((r) => r.serieFolio).join(', ')}`);
    const forged = received.filter((r) => !verifiedBy(r.body, r.signature, endpoint.secret));
    if (forged.length > 0) throw new Error(`${forged.length} webhook(s) whose Timbra-Signature does not verify`);
    const types = [...new Set(received.map((r) => r.type))].sort();
    out(
      `[demo] webhooks: ${received.length} events received at ${receiverUrl}, every Timbra-Signature verified (${types.join(', ')}); the delivery log: curl -H 'authorization: Bearer ${adminKey}' ${api}/v1/webhook-endpoints/${endpoint.id}/deliveries`,
    );
  }
  // The printed representation of each: saved here, and where the API serves it.
  const pdfDir = join(LOCAL_DIR, 'demo');
  mkdirSync(pdfDir, { recursive: true });
  out(`[demo] the PDF of each invoice (GET /v1/invoices/:id/pdf, also /xml and /zip), saved in ${pdfDir}/:`);
  for (const row of rows) {
    const pdf = await fetch(`${api}/v1/invoices/${row.id}/pdf`, { headers: { authorization: `Bearer ${apiKey}` } });
    if (!pdf.ok) throw new Error(`GET /v1/invoices/${row.id}/pdf: HTTP ${pdf.status}`);
    const file = join(pdfDir, `${row.serieFolio}-${row.uuid}.pdf`);
    writeFileSync(file, Buffer.from(await pdf.arrayBuffer()));
    out(`[demo]   ${row.serieFolio.padEnd(8)} ${api}/v1/invoices/${row.id}/pdf → ${file}`);
  }
  // Platform mode: a second organization, made and served by the same API and worker.
  const org = await runOrganizationDemo({
    apiUrl: api,
    platformKey: env.PLATFORM_KEY!,
    timeoutMs: Math.max(1000, deadline - Date.now()),
    log: out,
  });
  organizationKeys = [org.key, org.test.key];
  demoTable([org.row, org.test.row]).forEach(out);
  const orgFile = join(pdfDir, `${org.row.serieFolio}-${org.row.uuid}.pdf`);
  writeFileSync(orgFile, org.pdf);
  out(`[demo]   its PDF, with its logo and colour → ${orgFile}; its self-invoicing page: ${org.page}`);
  out(`[demo]   curl -H 'authorization: Bearer ${env.PLATFORM_KEY}' ${api}/v1/organizations/${org.id}`);
  out(`[demo]   its test twin ${org.test.id}: a tk_test_ key's sale, its own folios, stamped at the test PAC`);
  if (adminKey) {
    const g = await runGlobalDemo({
      apiUrl: globalApi,
      apiKey,
      adminKey,
      timeoutMs: Math.max(1000, deadline - Date.now()),
      log: out,
    });
    const selfFile = join(pdfDir, `${g.selfInvoiced.serieFolio}-${g.selfInvoiced.uuid}.pdf`);
    writeFileSync(selfFile, g.selfInvoiced.pdf);
    out(
      `[demo]   its CFDI ${g.selfInvoiced.serieFolio} ${g.selfInvoiced.uuid}, stamped; PDF downloaded from the page → ${selfFile}`,
    );
    out(`[demo] the period ${g.global.label} closed (POST /v1/globals) → its factura global, stamped:`);
    for (const i of g.global.invoices)
      out(`[demo]   ${i.serieFolio.padEnd(8)} ${i.uuid}  total ${i.total}  tickets ${i.codes.join(', ')}`);
    // Each ticket in exactly one document: the self-invoiced one in its own CFDI, the others in the global.
    const inGlobal = new Set(g.global.invoices.flatMap((i) => i.codes));
    const wrong = g.tickets.filter((t) => inGlobal.has(t.code) === (t.code === g.selfInvoiced.code));
    if (wrong.length > 0) throw new Error(`tickets in the wrong document: ${wrong.map((t) => t.code).join(', ')}`);
    const globalFile = join(pdfDir, `${g.global.invoices[0]!.serieFolio}-${g.global.invoices[0]!.uuid}-global.pdf`);
    writeFileSync(globalFile, g.global.pdf);
    out(
      `[demo]   its PDF → ${globalFile}; the period: curl -H 'authorization: Bearer ${apiKey}' ${globalApi}/v1/globals/${g.global.id}`,
    );
    out(`[demo]   self-invoicing page (global mode): ${globalApi}/facturar`);
  }
  out(`[demo] queue dashboard: ${api}/admin/queues (user ${env.DASHBOARD_USER}, password in DASHBOARD_PASSWORD)`);
  if (rows[0]) await consoleShows(rows[0]);
  out(`[demo] merchant console: ${api}/console (sign in with ${apiKey})`);
  // The operator's command, run here as printed (so it is known to work), with the demo's database.
  const target = rows[0]?.uuid ?? '<uuid>';
  const shown = new URL(env.DATABASE_URL!).password ? '' : `DATABASE_URL=${env.DATABASE_URL} `;
  out(`[demo] an invoice's history: ${shown}npm run ops -- invoice:show ${target}`);
  const history = await runCommand('npm', ['run', '--silent', 'ops', '--', 'invoice:show', target], {
    ...(process.env as Record<string, string>),
    DATABASE_URL: env.DATABASE_URL!,
  });
  if (history.code !== 0)
    throw new Error(`npm run ops -- invoice:show exited ${history.code}: ${history.stderr.trim()}`);
  out(`[demo]   ${history.stdout.split('\n')[0]}`);
  ok = true;
} catch (error) {
  out(`[demo] FAILED: ${(error as Error).message}`);
}

// A process that exited on its own makes the run a failure, whatever the table says.
if (failed) ok = false;

if (values['check-secrets']) {
  const csdPassword = readFileSync(join(env.SAT_DIR ?? SAT_DIR, 'csd', 'EKU9003173C9.password.txt'), 'utf8').trim();
  const secrets = {
    'API key': apiKey,
    'Stripe webhook secret': env.STRIPE_WEBHOOK_SECRET!,
    'Mercado Pago webhook secret': env.MERCADOPAGO_WEBHOOK_SECRET!,
    'Stripe API key': env.STRIPE_API_KEY!,
    'Mercado Pago access token': env.MERCADOPAGO_ACCESS_TOKEN!,
    'Banxico token': env.BANXICO_TOKEN!,
    'CSD password': env.CSD_PASSWORD ?? csdPassword,
    'PAC password': pacPassword,
    'dashboard password': env.DASHBOARD_PASSWORD!,
    'dashboard Basic credentials': Buffer.from(`${env.DASHBOARD_USER}:${env.DASHBOARD_PASSWORD}`).toString('base64'),
    'sandbox admin token': env.SANDBOX_ADMIN_TOKEN!,
    ...(adminKey ? { 'admin API key': adminKey } : {}),
    ...(endpointSecret ? { 'webhook endpoint secret': endpointSecret } : {}),
    'platform key': env.PLATFORM_KEY!,
    'vault master key': env.VAULT_KEYS!.split(':')[1]!,
    ...Object.fromEntries(organizationKeys.map((k, i) => [`second organization's API key ${i + 1}`, k])),
  };
  await sleep(500);
  const logs = system.lines.join('\n');
  const leaked = Object.entries(secrets).filter(([, value]) => value && logs.includes(value));
  out(
    `[demo] secrets in ${system.lines.length} log lines at LOG_LEVEL=debug: ${leaked.length === 0 ? 'none found' : `FOUND ${leaked.map(([k]) => k).join(', ')}`}`,
  );
  if (leaked.length > 0) ok = false;
}

if (values.exit || !ok) await stop(ok ? 0 : 1);
out('[demo] still running — Ctrl-C stops it');

/** A command's exit code and output. */
function runCommand(command: string, args: string[], env: Record<string, string>) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) =>
    execFile(command, args, { env, encoding: 'utf8' }, (error, stdout, stderr) =>
      done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

/** The console, signed in with the store's key as a person would, opens the demo's first invoice. */
async function consoleShows(row: { id: string; serieFolio: string }): Promise<void> {
  const login = await fetch(`${api}/console/login`, {
    method: 'POST',
    body: new URLSearchParams({ key: apiKey }),
    redirect: 'manual',
  });
  const cookie = login.headers.get('set-cookie')?.split(';')[0];
  if (login.status !== 303 || !cookie) throw new Error(`console sign-in: HTTP ${login.status}`);
  const page = await fetch(`${api}/console/invoices/${row.id}`, { headers: { cookie } });
  const html = await page.text();
  if (!page.ok || !html.includes(`<h1>${row.serieFolio}</h1>`))
    throw new Error(`console: HTTP ${page.status}, ${row.serieFolio} not shown`);
}
