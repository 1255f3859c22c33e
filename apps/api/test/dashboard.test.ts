import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import got from 'got';
import { Redis } from 'ioredis';
import { STAMP_DLQ, STAMP_QUEUE } from '@timbra/db';
import { dashboard, redactForDashboard } from '../src/http/dashboard.ts';
import { startApi, type TestApi } from './helpers.ts';

const prefix = `{timbra-dashboard-test-${process.pid}}`;
const USER = 'ops';
const PASSWORD = 'dashboard-secret-0123';
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

let redis: Redis;
let board: ReturnType<typeof dashboard>;
let api: TestApi;
let plain: TestApi;
let dlq: Queue;

beforeAll(async () => {
  redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
  board = dashboard({ redis, prefix, user: USER, password: PASSWORD, allowDlqRetry: false });
  [api, plain] = await Promise.all([startApi({ dashboard: board.router }), startApi()]);
  dlq = new Queue(STAMP_DLQ, { connection: redis, prefix });
  await dlq.add('dead-letter', {
    outboxId: 'o-1',
    stampKey: 'I-abc',
    invoiceId: 'i-1',
    reason: '402. RFC del emisor EKU9003173C9 no se encuentra en el régimen',
    code: '402',
    failedAt: new Date().toISOString(),
    note: '<cfdi:Comprobante Rfc="EKU9003173C9"/>',
  });
});
afterAll(async () => {
  await dlq.obliterate({ force: true });
  await dlq.close();
  await board.close();
  await Promise.all([api.close(), plain.close()]);
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

const get = (base: TestApi, path: string, authorization?: string) =>
  got.get(`${base.url}${path}`, {
    throwHttpErrors: false,
    ...(authorization ? { headers: { authorization } } : {}),
  });

describe('queue dashboard (bull-board at /admin/queues)', () => {
  it('does not exist when no admin credentials are configured', async () => {
    const res = await get(plain, '/admin/queues');
    expect(res.statusCode).toBe(404);
    expect(JSON.parse(res.body)).toMatchObject({ error: { code: 'not_found' } });
  });

  it('asks for credentials, and refuses a wrong user or password', async () => {
    for (const authorization of [undefined, basic(USER, 'wrong-password-000'), basic('root', PASSWORD), 'Bearer x']) {
      const res = await get(api, '/admin/queues', authorization);
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^Basic realm="timbra queues"/);
      expect(JSON.parse(res.body)).toMatchObject({ error: { code: 'unauthorized' } });
    }
  });

  it('shows the stamp and dead-letter queues read-only, with RFCs and XML redacted', async () => {
    const page = await get(api, '/admin/queues', basic(USER, PASSWORD));
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);

    const res = await get(
      api,
      `/admin/queues/api/queues?activeQueue=${STAMP_DLQ}&status=latest`,
      basic(USER, PASSWORD),
    );
    expect(res.statusCode).toBe(200);
    const body = JSON.parse(res.body) as {
      queues: { name: string; readOnlyMode: boolean; allowRetries: boolean; jobs: { data: unknown }[] }[];
    };
    const byName = new Map(body.queues.map((q) => [q.name, q]));
    expect(byName.get(STAMP_QUEUE)).toMatchObject({ readOnlyMode: true });
    expect(byName.get(STAMP_DLQ)).toMatchObject({ readOnlyMode: true, allowRetries: false });
    const jobs = byName.get(STAMP_DLQ)!.jobs;
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.data).toMatchObject({
      invoiceId: 'i-1',
      reason: '402. RFC del emisor [rfc] no se encuentra en el régimen',
      note: '[xml redacted]',
    });
    expect(res.body).not.toContain('EKU9003173C9');
  });

  it('refuses actions in read-only mode: the queue is not paused', async () => {
    const res = await got.put(`${api.url}/admin/queues/api/queues/${STAMP_DLQ}/pause`, {
      throwHttpErrors: false,
      headers: { authorization: basic(USER, PASSWORD) },
    });
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    expect(await dlq.isPaused()).toBe(false);
  });
});

describe('redactForDashboard', () => {
  it.each([
    ['EKU9003173C9 paid', '[rfc] paid'],
    ['persona física CACX7605101P8', 'persona física [rfc]'],
    ['<tfd:TimbreFiscalDigital UUID="x"/>', '[xml redacted]'],
    ['no rfc here: 1 < 2 and 3 > 2', 'no rfc here: 1 < 2 and 3 > 2'],
  ])('%s → %s', (input, output) => {
    expect(redactForDashboard(input)).toBe(output);
  });

  it('walks objects and arrays, leaving numbers and booleans alone', () => {
    expect(redactForDashboard({ a: ['EKU9003173C9', 3, true, null], b: { c: '<x/>' } })).toEqual({
      a: ['[rfc]', 3, true, null],
      b: { c: '[xml redacted]' },
    });
  });
});
