/**
 * The provider sandbox (apps/provider-sandbox) for tests, the chaos run and benchmarks: a real
 * process on a free port, driven through its control API's client (@timbra/provider-client). Apps
 * never import each other, so it is started, not imported.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ProviderSandboxClient } from '@timbra/provider-client';
import { tsEntryArgs } from './system.ts';

const here = dirname(fileURLToPath(import.meta.url));
const MAIN = resolve(here, '../../../apps/provider-sandbox/src/main.ts');

export interface ProviderSandboxSettings {
  /** Timbra's `/webhooks/stripe` and `/webhooks/mercadopago` URLs; unset: events are held. */
  stripeWebhookUrl?: string;
  mercadoPagoWebhookUrl?: string;
  stripeWebhookSecret: string;
  mercadoPagoWebhookSecret: string;
  stripeSecretKey: string;
  mercadoPagoAccessToken: string;
  /** The live key (live payments read with it only); unset: the secret key reads every payment. */
  stripeLiveSecretKey?: string;
  /** Stripe Connect: where connected accounts' events go, and the endpoint's secret. */
  stripeConnect?: { webhookUrl?: string; webhookSecret: string };
  /** Default 100,300,1000 (ms). */
  retryDelaysMs?: readonly number[];
  /** Default: a free one. */
  port?: number;
  /** The Bmx-Token its Banxico SIE API asks for (default `banxico-sandbox-token`). */
  banxicoToken?: string;
}

/** Settings for a sandbox whose secrets are made up for this run. */
export function providerSecrets(tag = 'test') {
  const suffix = Math.random().toString(36).slice(2, 10);
  return {
    stripeWebhookSecret: `whsec_${tag}_${suffix}`,
    mercadoPagoWebhookSecret: `mp_${tag}_${suffix}`,
    stripeSecretKey: `sk_test_${tag}_${suffix}`,
    mercadoPagoAccessToken: `TEST-${tag}-${suffix}`,
  };
}

/** The environment of the provider sandbox process for `settings`. */
export function providerSandboxEnv(settings: ProviderSandboxSettings & { port: number }): NodeJS.ProcessEnv {
  return {
    PROVIDER_SANDBOX_PORT: String(settings.port),
    PROVIDER_SANDBOX_STRIPE_SECRET_KEY: settings.stripeSecretKey,
    PROVIDER_SANDBOX_STRIPE_WEBHOOK_SECRET: settings.stripeWebhookSecret,
    PROVIDER_SANDBOX_MP_ACCESS_TOKEN: settings.mercadoPagoAccessToken,
    PROVIDER_SANDBOX_MP_WEBHOOK_SECRET: settings.mercadoPagoWebhookSecret,
    PROVIDER_SANDBOX_BANXICO_TOKEN: settings.banxicoToken ?? 'banxico-sandbox-token',
    PROVIDER_SANDBOX_RETRY_DELAYS_MS: (settings.retryDelaysMs ?? [100, 300, 1000]).join(','),
    ...(settings.stripeWebhookUrl ? { PROVIDER_SANDBOX_STRIPE_WEBHOOK_URL: settings.stripeWebhookUrl } : {}),
    ...(settings.stripeLiveSecretKey ? { PROVIDER_SANDBOX_STRIPE_LIVE_SECRET_KEY: settings.stripeLiveSecretKey } : {}),
    ...(settings.stripeConnect
      ? {
          PROVIDER_SANDBOX_STRIPE_CONNECT_WEBHOOK_SECRET: settings.stripeConnect.webhookSecret,
          ...(settings.stripeConnect.webhookUrl
            ? { PROVIDER_SANDBOX_STRIPE_CONNECT_WEBHOOK_URL: settings.stripeConnect.webhookUrl }
            : {}),
        }
      : {}),
    ...(settings.mercadoPagoWebhookUrl ? { PROVIDER_SANDBOX_MP_WEBHOOK_URL: settings.mercadoPagoWebhookUrl } : {}),
  };
}

export interface RunningProviderSandbox {
  url: string;
  client: ProviderSandboxClient;
  stop(): Promise<void>;
}

/**
 * Starts the provider sandbox process and waits until it answers. Without a port of its own it binds
 * port 0 and says which it got (its `ready` line): a port found free beforehand could be taken by
 * another process before the sandbox bound it.
 */
export async function startProviderSandbox(settings: ProviderSandboxSettings): Promise<RunningProviderSandbox> {
  const fixed = settings.port;
  const child: ChildProcess = spawn(process.execPath, tsEntryArgs(MAIN), {
    env: {
      ...process.env,
      ...providerSandboxEnv({ ...settings, port: fixed ?? 0 }),
      // The `ready` line (info) carries the port it bound; the rest of stdout is read and dropped.
      LOG_LEVEL: fixed === undefined ? 'info' : 'error',
      NODE_OPTIONS: '',
    },
    stdio: ['ignore', fixed === undefined ? 'pipe' : 'ignore', 'inherit'],
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`the provider sandbox exited (${code})`))),
  );
  exited.catch(() => undefined); // observed below, or the sandbox was stopped
  const port = fixed ?? (await Promise.race([readyPort(child), exited]));
  const url = `http://127.0.0.1:${port}`;
  const client = new ProviderSandboxClient(url);
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`the provider sandbox exited (${child.exitCode})`);
    if (await client.healthy()) break;
    if (i > 300) throw new Error('the provider sandbox did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    client,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

/** The port in the sandbox's `ready` line; its stdout is drained for the rest of its life. */
function readyPort(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    let pending = '';
    let found = false;
    child.stdout!.on('data', (chunk: Buffer) => {
      if (found) return;
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const entry = (() => {
          try {
            return JSON.parse(line) as { msg?: string; port?: number };
          } catch {
            return undefined;
          }
        })();
        if (entry?.msg === 'ready' && typeof entry.port === 'number') {
          found = true;
          resolve(entry.port);
          return;
        }
      }
    });
  });
}

/**
 * `Stripe-Signature` for a body, as Stripe computes it: `t=<unix s>,v1=<HMAC-SHA256(secret, "t.body")>`
 * — for benchmarks that send hand-built events at rates the sandbox's one-by-one delivery would cap.
 */
export function stripeSignatureHeader(body: string, secret: string, t = Math.floor(Date.now() / 1000)): string {
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
}
