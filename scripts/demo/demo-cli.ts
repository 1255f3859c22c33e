/**
 * `node scripts/demo/dist/demo-cli.js` — the demo client against a running API (the compose `demo`
 * profile): sample payments in, the table of their invoices out (all stamped, one of them then
 * cancelled). Exit 0 when that happened in time, 1 otherwise.
 *
 * Environment: DEMO_API_URL (default http://127.0.0.1:3000), DEMO_API_KEY (default: the first key of
 * API_KEYS), DEMO_PROVIDERS_URL (the provider sandbox, default http://127.0.0.1:4020), DEMO_TIMEOUT_S (120).
 */
import { demoTable, runDemo } from './demo-client.ts';

const env = process.env;
const out = (line: string) => process.stdout.write(`${line}\n`);
const apiUrl = env.DEMO_API_URL ?? 'http://127.0.0.1:3000';
const apiKey = env.DEMO_API_KEY ?? (env.API_KEYS ?? '').split(',')[0]?.split(':')[1];
const timeoutMs = Number(env.DEMO_TIMEOUT_S ?? 120) * 1000;
if (!apiKey) {
  out('demo: set DEMO_API_KEY (or API_KEYS)');
  process.exit(64);
}

try {
  const { rows } = await runDemo({
    apiUrl,
    apiKey,
    providersUrl: env.DEMO_PROVIDERS_URL ?? 'http://127.0.0.1:4020',
    timeoutMs,
    log: out,
  });
  out('');
  demoTable(rows).forEach(out);
  out('');
  out(`[demo] queue dashboard: ${apiUrl}/admin/queues`);
} catch (error) {
  out(`[demo] FAILED: ${(error as Error).message}`);
  process.exit(1);
}
