/**
 * The whole system as local processes — pac-sandbox, provider-sandbox, API, worker — on Postgres and
 * Redis from the environment, with the sandbox as the PAC and the provider sandbox as Stripe and
 * Mercado Pago. Used by `npm run dev` (scripts/run-local.ts) and
 * `npm run demo` (scripts/demo.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDatabase, migrate, MIGRATIONS_DIR } from '@timbra/db';
import { startMailbox, testCaFile, testCsdPaths, type Mailbox } from '@timbra/test-support';

/** Where the local system keeps what it makes for people to look at: emails (`mail/`), the demo's PDFs. */
export const LOCAL_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '.local');

/** CSD_* and SANDBOX_TRUSTED_CA_FILE for the sandbox profile's emisor (unless a CSD is configured). */
function sandboxCsdEnv(): Record<string, string> {
  if (process.env.CSD_CER_PATH) return {};
  const csd = testCsdPaths('EKU9003173C9');
  return {
    CSD_CER_PATH: csd.cer,
    CSD_KEY_PATH: csd.key,
    CSD_PASSWORD_FILE: csd.passwordFile,
    SANDBOX_TRUSTED_CA_FILE: testCaFile(),
  };
}

/** The keys of the local system's API_KEYS default (docs/development.md, "Running the system"). */
export const DEV_KEYS = { demo: 'demo-key-change-me-0000', ops: 'ops-key-change-me-0000' } as const;

/** The key of the first `name:key[:admin]` entry of API_KEYS (what a printed example can use). */
export function firstApiKey(apiKeys: string): string {
  return apiKeys.split(',')[0]?.split(':')[1]?.trim() ?? '';
}

/** Defaults that make a fresh checkout work; every app variable from the environment wins. */
export function localEnv(): Record<string, string> {
  const base: Record<string, string> = {
    // The sandbox profile: the local sandbox PAC and the SAT's test emisor and CSD (no accounts needed).
    TIMBRA_PROFILE: 'sandbox',
    DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/timbra',
    REDIS_URL: 'redis://127.0.0.1:6379',
    // A store's key (read, write, cancel) and an operator's (admin: webhook endpoints, keys, re-drives).
    API_KEYS: `demo:${DEV_KEYS.demo},ops:${DEV_KEYS.ops}:admin`,
    STRIPE_WEBHOOK_SECRET: 'whsec_dev_local_only',
    MERCADOPAGO_WEBHOOK_SECRET: 'mp_dev_local_only',
    SANDBOX_ADMIN_TOKEN: 'dev-admin-token',
    DASHBOARD_USER: 'admin',
    DASHBOARD_PASSWORD: 'dev-dashboard-local-only',
    // Platform mode: the platform key makes organizations (/v1/organizations); their CSDs and provider
    // secrets are sealed by this master key (local only: a real one comes from a secret file).
    PLATFORM_KEY: 'tk_platform_dev_local_only_0123456789',
    VAULT_KEYS: 'dev:mexk/ONG2/BpOrEaRqWP13Cs9Bv7V0UD8/OjdtBOUFQ=',
    // An organization's CSD must chain to these CAs: here the tests' CA, which issued the demo's.
    CSD_TRUSTED_CAS_FILE: testCaFile(),
    // The provider sandbox (local Stripe and Mercado Pago) on :4020, and the API's keys for it.
    STRIPE_API_KEY: 'sk_test_timbra_sandbox',
    STRIPE_API_URL: 'http://127.0.0.1:4020',
    MERCADOPAGO_ACCESS_TOKEN: 'TEST-timbra-sandbox-token',
    MERCADOPAGO_API_URL: 'http://127.0.0.1:4020/mercadopago',
    // Exchange rates from the provider sandbox's copy of Banxico's SIE API.
    EXCHANGE_RATE_SOURCE: 'banxico',
    BANXICO_API_URL: 'http://127.0.0.1:4020',
    BANXICO_TOKEN: 'banxico-sandbox-token',
    // The SAT's test CSD with its certificate re-issued by the tests' CA (valid until 2099, same
    // NoCertificado and key), which the sandbox PAC trusts: the local system outlives the SAT's test
    // certificates (they expire in May 2027). A real CSD set in the environment wins.
    ...sandboxCsdEnv(),
    ...(process.env as Record<string, string>),
  };
  // The provider sandbox follows the API's settings (its port, secrets and keys), whatever they are.
  const api = `http://127.0.0.1:${base.PORT ?? '3000'}`;
  return {
    PROVIDER_SANDBOX_PORT: new URL(base.STRIPE_API_URL!).port || '4020',
    PROVIDER_SANDBOX_STRIPE_SECRET_KEY: base.STRIPE_API_KEY!,
    PROVIDER_SANDBOX_STRIPE_WEBHOOK_URL: `${api}/webhooks/stripe`,
    PROVIDER_SANDBOX_STRIPE_WEBHOOK_SECRET: base.STRIPE_WEBHOOK_SECRET!,
    PROVIDER_SANDBOX_MP_ACCESS_TOKEN: base.MERCADOPAGO_ACCESS_TOKEN!,
    PROVIDER_SANDBOX_MP_WEBHOOK_URL: `${api}/webhooks/mercadopago`,
    PROVIDER_SANDBOX_MP_WEBHOOK_SECRET: base.MERCADOPAGO_WEBHOOK_SECRET!,
    PROVIDER_SANDBOX_BANXICO_TOKEN: base.BANXICO_TOKEN!,
    ...base,
  };
}

export interface LocalSystem {
  /** Every line the three processes printed so far, prefixed with their name. */
  readonly lines: string[];
  /** The local SMTP server the worker sends the customers' emails to (absent when SMTP_URL was given). */
  readonly mailbox: Mailbox | undefined;
  stop: () => Promise<void>;
}

/**
 * Creates and migrates the database, then starts the three processes, echoing their output with a
 * `[name]` prefix through `print`. If one exits, the others are stopped and `onExit` is called.
 */
export async function startLocalSystem(
  env: Record<string, string>,
  print: (line: string) => void,
  onExit: (name: string, code: number | null) => void,
  /** More processes of a workspace with their own settings over `env` (the demo's second API, in global mode). */
  extra: readonly { name: string; workspace: string; env: Record<string, string> }[] = [],
): Promise<LocalSystem> {
  if (await ensureDatabase(env.DATABASE_URL!)) print('[timbra] created the database');
  const applied = await migrate(env.DATABASE_URL!, MIGRATIONS_DIR, (m) => print(`[timbra] ${m}`));
  print(`[timbra] migrations: ${applied.length} applied, database up to date`);
  // The customers' emails go to a real SMTP server on this machine, which keeps each as an .eml file
  // (LOCAL_SMTP_PORT, default 2525; 0: any free port) — unless SMTP_URL points elsewhere.
  let mailbox: Mailbox | undefined;
  if (!env.SMTP_URL) {
    mailbox = await startMailbox({ port: Number(env.LOCAL_SMTP_PORT ?? 2525), dir: join(LOCAL_DIR, 'mail') });
    env.SMTP_URL = mailbox.url;
    print(`[timbra] customers' emails: SMTP on ${mailbox.url}, each kept in ${join(LOCAL_DIR, 'mail')}/`);
  }

  const lines: string[] = [];
  const children = new Map<string, ChildProcess>();
  let stopping = false;
  const start = (name: string, workspace: string, own: Record<string, string> = {}) => {
    // Its own process group, so stopping reaches the app itself and not only the npm in front of it.
    const child = spawn('npm', ['run', '--silent', 'dev', '-w', workspace], {
      env: { ...env, ...own },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const echo = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        lines.push(`[${name}] ${line}`);
        print(`[${name}] ${line}`);
      }
    };
    child.stdout?.on('data', echo);
    child.stderr?.on('data', echo);
    child.on('exit', (code) => {
      children.delete(name);
      if (!stopping) onExit(name, code);
    });
    children.set(name, child);
  };
  start('sandbox', '@timbra/pac-sandbox');
  start('providers', '@timbra/provider-sandbox');
  start('api', '@timbra/api');
  start('worker', '@timbra/worker');
  for (const e of extra) start(e.name, e.workspace, e.env);

  return {
    lines,
    mailbox,
    stop: async () => {
      stopping = true;
      const running = [...children.values()];
      const exits = running.map((c) => new Promise((resolve) => c.once('exit', resolve)));
      const signal = (name: NodeJS.Signals) => {
        for (const c of running) {
          try {
            process.kill(-c.pid!, name);
          } catch {
            // already gone
          }
        }
      };
      // Each app drains in-flight work on SIGTERM; what is still running after 15 s is killed.
      signal('SIGTERM');
      const timer = new Promise((resolve) => setTimeout(resolve, 15_000).unref());
      if ((await Promise.race([Promise.all(exits).then(() => 'exited'), timer])) !== 'exited') signal('SIGKILL');
      // The process groups too: an npm or tsx left behind by an app that exited first.
      for (const c of running) {
        try {
          process.kill(-c.pid!, 'SIGKILL');
        } catch {
          // gone, as it should be
        }
      }
      await mailbox?.close();
    },
  };
}

/**
 * SIGINT, SIGTERM and SIGHUP stop every process of `system` (and wait for them) before this one
 * exits 0. Returns the same stop for the caller's own endings (`stop(1)` when an app died). Used by
 * `npm run dev` and `npm run demo`.
 */
export function stopOnSignals(system: LocalSystem, log: (line: string) => void): (code: number) => Promise<never> {
  let stopping: Promise<never> | undefined;
  const stop = (code: number): Promise<never> => (stopping ??= system.stop().then(() => process.exit(code)));
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.on(signal, () => {
      log(`[timbra] ${signal}: stopping every process`);
      void stop(0);
    });
  return stop;
}
