/**
 * `npm run dev` — the whole system on this machine, with the sandbox as the PAC (no accounts needed):
 * creates and migrates the database, then runs the pac-sandbox, the provider sandbox (a local Stripe
 * and Mercado Pago), the API and the worker, prefixing their logs. Ctrl-C stops them all. Needs local Postgres and Redis (see README).
 *
 * Settings come from the environment (each app's variables, see README); the defaults (localEnv in
 * scripts/local-system.ts) make a fresh checkout work: DATABASE_URL=postgresql://postgres@127.0.0.1:5432/timbra,
 * API key `demo:demo-key-change-me-0000`, Stripe webhook secret `whsec_dev_local_only`.
 */
import { firstApiKey, localEnv, startLocalSystem, stopOnSignals } from './local-system.ts';

const env = localEnv();
const out = (line: string) => process.stdout.write(`${line}\n`);
// An app that exits on its own (it could not start, or crashed) stops the rest: exit 1.
const system = await startLocalSystem(env, out, (name, code) => {
  out(`[timbra] ${name} exited (${code}): stopping the others`);
  void stop(1);
});
const stop = stopOnSignals(system, out);

out(`[timbra] queue dashboard: http://localhost:${env.PORT ?? 3000}/admin/queues (user ${env.DASHBOARD_USER})`);
out(
  `[timbra] API on http://localhost:${env.PORT ?? 3000} — try a Stripe payment at the provider sandbox (its webhooks go to the API):`,
);
out(
  `[timbra]   curl -X POST localhost:${env.PROVIDER_SANDBOX_PORT}/_sandbox/stripe/payments -H 'content-type: application/json' -d '{"amount":116000,"method":"card_debit"}'`,
);
out(`[timbra] customers' emails (XML + PDF) land in .local/mail/ when a payment has an address ("email": "…").`);
out('[timbra] or a REST payment:');
out(
  `[timbra]   curl -X POST localhost:${env.PORT ?? 3000}/v1/payments -H 'authorization: Bearer ${firstApiKey(env.API_KEYS ?? '')}' -H 'content-type: application/json' -d '{"externalId":"demo-1","amount":"1160.00","currency":"MXN","occurredAt":"'$(date -u +%FT%TZ)'"}'`,
);
