/** @clock reconcile's window starts at the PAC's FechaTimbrado */
import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { deadLetterAlert } from '../src/operations/alerts.ts';
import { privateRedisArgs, realClockEnv, tsEntryArgs } from '@timbra/test-support';
import { eventually, freePort } from './helpers.ts';

const here = dirname(fileURLToPath(import.meta.url));

const letter = {
  outboxId: 'o',
  stampKey: 'I-abc',
  invoiceId: 'i',
  reason: 'RFC no en LCO',
  code: '402',
  pac: 'primary',
  failedAt: '2026-11-30T00:00:00.000Z',
};

describe('dead-letter alerts', () => {
  it('POSTs the letter to the configured URL', async () => {
    const received: unknown[] = [];
    const server = createHttpServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push(JSON.parse(body));
        res.end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      await deadLetterAlert(
        `http://127.0.0.1:${(server.address() as AddressInfo).port}/alerts`,
        pino({ level: 'silent' }),
      )(letter);
      expect(received).toEqual([{ alert: 'stamp_dead_letter', ...letter }]);
    } finally {
      server.close();
    }
  });

  it('never throws when the alert endpoint is down (the letter is already recorded)', async () => {
    await expect(
      deadLetterAlert(`http://127.0.0.1:${await freePort()}/`, pino({ level: 'silent' }))(letter),
    ).resolves.toBeUndefined();
  });
});

describe('start-up checks', () => {
  it('refuses to start on a Redis that may evict keys, unless told to', async () => {
    const port = await freePort();
    const redisServer = spawn('redis-server', privateRedisArgs(port, 'allkeys-lru'), {
      stdio: 'ignore',
      env: realClockEnv(),
    });
    const redis = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => 50 });
    try {
      await eventually(async () => (await redis.ping().catch(() => '')) === 'PONG', 10_000);
      const worker = spawn(process.execPath, tsEntryArgs(resolve(here, '../src/main.ts')), {
        env: {
          ...process.env,
          NODE_OPTIONS: '',
          TIMBRA_PROFILE: 'sandbox',
          DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/postgres',
          REDIS_URL: `redis://127.0.0.1:${port}`,
          WORKER_HTTP_PORT: '0',
          LOG_LEVEL: 'fatal',
        },
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      let output = '';
      worker.stdout?.on('data', (c: Buffer) => (output += c.toString()));
      const code = await new Promise((r) => worker.once('exit', r));
      expect(code).toBe(1);
      expect(output).toMatch(/noeviction/);
    } finally {
      await redis.quit();
      redisServer.kill('SIGTERM');
    }
  });
});

describe('reconcile (pure)', () => {
  it('finds orphans, cross-PAC duplicates by cadena, and two stamps under one stamp key', async () => {
    const { reconcile } = await import('../src/operations/reconcile.ts');
    const ledger = [
      { uuid: 'A', instance: 'primary', customid: 'I-1', cadenaHash: 'h1' },
      { uuid: 'B', instance: 'backup', customid: 'I-1', cadenaHash: 'h1' },
      { uuid: 'C', instance: 'primary', customid: 'I-2', cadenaHash: 'h2' },
      { uuid: 'd', instance: 'primary', customid: 'I-3', cadenaHash: 'h3' },
    ];
    const result = reconcile(ledger, new Set(['A', 'C', 'D']));
    expect(result.orphans.map((o) => o.uuid)).toEqual(['B']);
    expect(result.duplicates).toEqual([
      { by: 'cadena', key: 'h1', uuids: ['A', 'B'] },
      { by: 'stamp_key', key: 'I-1', uuids: ['A', 'B'] },
    ]);
    expect(reconcile(ledger.slice(2), new Set(['C', 'D']))).toEqual({ stamps: 2, orphans: [], duplicates: [] });
  });

  it('proposes to keep the UUID our database holds and cancel the others; never both, never a guess', async () => {
    const { proposeFixes } = await import('../src/operations/reconcile.ts');
    const invoiceOf = new Map([
      ['A', 'inv-a'],
      ['E', 'inv-e'],
      ['F', 'inv-f'],
    ]);
    expect(
      proposeFixes(
        [
          { by: 'cadena', key: 'h1', uuids: ['A', 'B'] },
          { by: 'stamp_key', key: 'I-1', uuids: ['a', 'b'] },
          { by: 'cadena', key: 'h2', uuids: ['C', 'D'] },
          { by: 'cadena', key: 'h3', uuids: ['E', 'F'] },
        ],
        invoiceOf,
      ),
    ).toEqual([
      { keep: 'A', invoiceId: 'inv-a', cancel: ['B'] },
      { skipped: ['C', 'D'], reason: 'none of these UUIDs is in our database' },
      { skipped: ['E', 'F'], reason: 'more than one is in our database' },
    ]);
  });
});
