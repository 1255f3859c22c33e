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
 * status, and the dashboard URL.
 *
 * Then it keeps running (Ctrl-C stops it), or with `--exit` stops everything and exits: 0 when every
 * invoice was stamped (and the one cancelled) in time, 1 otherwise. `--check-secrets` runs the apps at LOG_LEVEL=debug and
 * fails when any configured secret (API key, webhook secrets, CSD password, PAC and dashboard
 * passwords, sandbox admin token) appears in their logs. `.ci/run` runs it with both flags.
 */
import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { demoTable, runDemo } from '@timbra/api/demo';
import { SAT_DIR } from '@timbra/test-support';
import { localEnv, startLocalSystem, stopOnSignals } from './local-system.ts';

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

let failed = false;
const system = await startLocalSystem(env, values.verbose ? out : () => undefined, (name, code) => {
  out(`[demo] ${name} exited (${code}); its last lines:`);
  system.lines
    .filter((l) => l.startsWith(`[${name}]`))
    .slice(-15)
    .forEach(out);
  failed = true;
});
const stop = stopOnSignals(system, out);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let ok = false;
try {
  out('[demo] starting the sandbox PAC, the provider sandbox, the API and the worker…');
  const rows = await runDemo({
    apiUrl: api,
    apiKey,
    providersUrl: env.STRIPE_API_URL!,
    timeoutMs: Math.max(1000, deadline - Date.now()),
    log: out,
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
  out(`[demo] queue dashboard: ${api}/admin/queues (user ${env.DASHBOARD_USER}, password in DASHBOARD_PASSWORD)`);
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
