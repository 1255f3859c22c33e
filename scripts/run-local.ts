/**
 * `npm run dev` — the whole system on this machine, with the sandbox as the PAC (no accounts needed):
 * creates and migrates the database, then runs the pac-sandbox, the API and the worker, prefixing
 * their logs. Ctrl-C stops all three. Needs local Postgres and Redis (see README).
 *
 * Settings come from the environment (each app's variables, see README); the defaults here make a
 * fresh checkout work: DATABASE_URL=postgresql://postgres@127.0.0.1:5432/timbra, API key
 * `demo:demo-key-change-me-0000`, Stripe webhook secret `whsec_dev_local_only`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { ensureDatabase, migrate, MIGRATIONS_DIR } from '@timbra/db';

const env = {
  DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/timbra',
  REDIS_URL: 'redis://127.0.0.1:6379',
  API_KEYS: 'demo:demo-key-change-me-0000',
  STRIPE_WEBHOOK_SECRET: 'whsec_dev_local_only',
  MERCADOPAGO_WEBHOOK_SECRET: 'mp_dev_local_only',
  SANDBOX_ADMIN_TOKEN: 'dev-admin-token',
  DASHBOARD_USER: 'admin',
  DASHBOARD_PASSWORD: 'dev-dashboard-local-only',
  ...process.env,
};

const out = (line: string) => process.stdout.write(`${line}\n`);
if (await ensureDatabase(env.DATABASE_URL)) out('[dev] created the database');
const applied = await migrate(env.DATABASE_URL, MIGRATIONS_DIR, (m) => out(`[dev] ${m}`));
out(`[dev] migrations: ${applied.length} applied, database up to date`);

const children: ChildProcess[] = [];
function start(name: string, workspace: string): void {
  const child = spawn('npm', ['run', '--silent', 'dev', '-w', workspace], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const prefix = (chunk: Buffer) =>
    chunk
      .toString()
      .split('\n')
      .filter(Boolean)
      .forEach((l) => out(`[${name}] ${l}`));
  child.stdout?.on('data', prefix);
  child.stderr?.on('data', prefix);
  child.on('exit', (code) => {
    out(`[dev] ${name} exited (${code})`);
    stop();
  });
  children.push(child);
}

let stopping = false;
function stop(): void {
  if (stopping) return;
  stopping = true;
  for (const c of children) c.kill('SIGTERM');
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);

start('sandbox', '@timbra/pac-sandbox');
start('api', '@timbra/api');
start('worker', '@timbra/worker');
out(`[dev] queue dashboard: http://localhost:3000/admin/queues (user ${env.DASHBOARD_USER})`);
out('[dev] API on http://localhost:3000 — try:');
out(
  `[dev]   curl -X POST localhost:3000/v1/payments -H 'authorization: Bearer ${env.API_KEYS.split(':')[1] ?? ''}' -H 'content-type: application/json' -d '{"externalId":"demo-1","amount":"1160.00","currency":"MXN","occurredAt":"'$(date -u +%FT%TZ)'"}'`,
);
