/**
 * `npm run dev` as a newcomer and a supervisor use it: SIGTERM to the npm process stops every process
 * it started (nothing left running, no port left bound), and an app that cannot start makes it stop
 * the others and exit non-zero. Every port is a free one and the database a fresh one, so this runs
 * beside a real `npm run dev`.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import got from 'got';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import { eventually, freePorts } from './helpers.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());

async function devEnv(): Promise<Record<string, string>> {
  // Every port it opens, the local SMTP server's too: one given as 0 could be handed one of these
  // once let go, before the app it was taken for has bound it.
  const [api, metrics, worker, primary, backup, admin, providers, smtp] = await freePorts(8);
  return {
    ...(process.env as Record<string, string>),
    NODE_OPTIONS: '',
    DATABASE_URL: db.url,
    QUEUE_PREFIX: `{dev${api}}`,
    PORT: String(api),
    METRICS_PORT: String(metrics),
    WORKER_HTTP_PORT: String(worker),
    SANDBOX_PRIMARY_PORT: String(primary),
    SANDBOX_BACKUP_PORT: String(backup),
    SANDBOX_ADMIN_PORT: String(admin),
    PAC_PRIMARY_URL: `http://127.0.0.1:${primary}`,
    SAT_STATUS_URL: `http://127.0.0.1:${primary}/ConsultaCFDIService.svc`,
    STRIPE_API_URL: `http://127.0.0.1:${providers}`,
    MERCADOPAGO_API_URL: `http://127.0.0.1:${providers}/mercadopago`,
    BANXICO_API_URL: `http://127.0.0.1:${providers}`,
    // Not its default, 2525, which may be another run's.
    LOCAL_SMTP_PORT: String(smtp),
  };
}

/** Every process below `pid` now (children, grandchildren…). */
function descendants(pid: number): number[] {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number) as [number, number]);
  const found: number[] = [];
  const walk = (parent: number) => {
    for (const [child, ppid] of rows)
      if (ppid === parent) {
        found.push(child);
        walk(child);
      }
  };
  walk(pid);
  return found;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const exited = (child: ChildProcess) => new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
const dev = (env: Record<string, string>) =>
  spawn('npm', ['run', 'dev'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
const bound = (port: string) =>
  new Promise<boolean>((done) => {
    const probe: Server = createServer()
      .once('error', () => done(true))
      .listen(Number(port), '127.0.0.1', () => probe.close(() => done(false)));
  });

describe('npm run dev', () => {
  it('the REST curl it prints works as printed; SIGTERM to npm stops every process it started, and frees every port', async () => {
    const env = await devEnv();
    const npm = dev(env);
    const exit = exited(npm);
    let output = '';
    npm.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await eventually(
        async () =>
          (
            await got
              .get(`http://127.0.0.1:${env.WORKER_HTTP_PORT}/readyz`, { retry: { limit: 0 } })
              .catch(() => undefined)
          )?.statusCode === 200 &&
          (await got.get(`http://127.0.0.1:${env.PORT}/readyz`, { retry: { limit: 0 } }).catch(() => undefined))
            ?.statusCode === 200,
        90_000,
      );
      // The key the printed curl sends (once `demo-key-change-me-0000,ops`: a 401 to a newcomer).
      const key = /curl -X POST localhost:\d+\/v1\/payments -H 'authorization: Bearer ([^']+)'/.exec(output)?.[1];
      const paid = await got.post(`http://127.0.0.1:${env.PORT}/v1/payments`, {
        headers: { authorization: `Bearer ${key}` },
        json: {
          externalId: `dev-${Date.now()}`,
          amount: '1160.00',
          currency: 'MXN',
          occurredAt: new Date().toISOString(),
        },
        throwHttpErrors: false,
      });
      expect(paid.statusCode).toBe(201);
      const tree = descendants(npm.pid!);
      expect(tree.length).toBeGreaterThanOrEqual(8); // four apps, each behind its npm
      npm.kill('SIGTERM');
      expect(await exit).toBe(0);
      await eventually(() => Promise.resolve(tree.filter(alive).length === 0), 20_000);
      for (const port of [env.PORT!, env.METRICS_PORT!, env.WORKER_HTTP_PORT!, env.SANDBOX_PRIMARY_PORT!])
        expect({ port, bound: await bound(port) }).toEqual({ port, bound: false });
    } finally {
      for (const pid of descendants(npm.pid!)) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  });

  it('an app that cannot start stops the others, and npm run dev exits 1', async () => {
    const env = await devEnv();
    // The API's port is taken: the API exits 1.
    const squatter = createServer().listen(Number(env.PORT), '127.0.0.1');
    const npm = dev(env);
    let output = '';
    npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      let tree: number[] = [];
      const exit = exited(npm);
      const watch = setInterval(() => (tree = [...new Set([...tree, ...descendants(npm.pid!)])]), 200);
      expect(await exit).toBe(1);
      clearInterval(watch);
      expect(output).toMatch(/\[timbra\] api exited \(1\): stopping the others/);
      expect(output).toMatch(/"msg":"the API port \d+ could not be opened"/);
      await eventually(() => Promise.resolve(tree.filter(alive).length === 0), 20_000);
    } finally {
      squatter.close();
      for (const pid of descendants(npm.pid!)) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  });
});
