import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import { randomBytes } from 'node:crypto';
import got from 'got';
import { Redis } from 'ioredis';
import { deadLetterOutboxRow, STAMP_DLQ, STAMP_QUEUE } from '@timbra/db/outbox';
import { dashboard, dashboardJobName, redactForDashboard } from '../src/operations/dashboard.ts';
import { LocalKeyVault } from '@timbra/cfdi-node';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { OrganizationClients } from '@timbra/db/organizations';
import { testCsdFiles } from '@timbra/test-support';
import { jsonPoster, KEYS, startApi, type TestApi } from './helpers.ts';

const prefix = `{timbra-dashboard-test-${process.pid}}`;
const USER = 'ops';
const PASSWORD = 'dashboard-secret-0123';
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

let redis: Redis;
let board: ReturnType<typeof dashboard>;
let readOnlyBoard: ReturnType<typeof dashboard>;
let api: TestApi;
let readOnly: TestApi;
let plain: TestApi;
let dlq: Queue;

beforeAll(async () => {
  redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
  dlq = new Queue(STAMP_DLQ, { connection: redis, prefix });
  plain = await startApi();
  // Two dashboards over one database: Retry allowed, and Retry off (the default).
  const options = { prisma: plain.prisma, redis, dlq, prefix, user: USER, password: PASSWORD };
  board = dashboard({ ...options, allowDlqRetry: true });
  readOnlyBoard = dashboard({ ...options, allowDlqRetry: false });
  [api, readOnly] = await Promise.all([
    startApi({ dashboard: board.router, database: plain.db }),
    startApi({ dashboard: readOnlyBoard.router, database: plain.db }),
  ]);
  await dlq.add('dead-letter', {
    outboxId: '00000000-0000-4000-8000-000000000001',
    stampKey: 'I-abc',
    invoiceId: '00000000-0000-4000-8000-000000000002',
    serieFolio: 'A-999',
    reason: '402. RFC del emisor EKU9003173C9 no se encuentra en el régimen',
    code: '402',
    failedAt: new Date().toISOString(),
    note: '<cfdi:Comprobante Rfc="EKU9003173C9"/>',
  });
});
afterAll(async () => {
  await dlq.obliterate({ force: true });
  await dlq.close();
  await Promise.all([board.close(), readOnlyBoard.close()]);
  await Promise.all([api.close(), readOnly.close()]);
  await plain.close();
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

/** A payment recorded through the API whose stamp then failed for good: a real dead letter in Postgres. */
async function deadLetter(externalId: string): Promise<{ outboxId: string; serieFolio: string }> {
  const { body } = (await jsonPoster(() => plain)('/v1/payments', {
    externalId,
    amount: '116.00',
    currency: 'MXN',
    occurredAt: new Date().toISOString(),
  })) as { body: { invoices: { id: string; serieFolio: string }[] } };
  const invoice = body.invoices[0]!;
  const row = await plain.prisma.outboxRow.findFirstOrThrow({ where: { invoiceId: invoice.id } });
  await deadLetterOutboxRow(plain.prisma, { outboxId: row.id, invoiceId: invoice.id }, '402: RFC EKU9003173C9 refused');
  return { outboxId: row.id, serieFolio: invoice.serieFolio };
}

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
    // Read-only both, whatever DASHBOARD_ALLOW_DLQ_RETRY says: bull-board has no Retry without
    // Delete, Edit, Add, Empty and Obliterate; re-drives happen on the dead-letters page.
    expect(byName.get(STAMP_QUEUE)).toMatchObject({ readOnlyMode: true });
    expect(byName.get(STAMP_DLQ)).toMatchObject({ readOnlyMode: true, allowRetries: false });
    const jobs = byName.get(STAMP_DLQ)!.jobs as { name: string; data: unknown; externalUrl?: { href: string } }[];
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.name).toBe('dead-letter A-999');
    expect(jobs[0]!.externalUrl?.href).toBe('/admin/queues/dead-letters/00000000-0000-4000-8000-000000000001');
    expect(jobs[0]!.data).toMatchObject({
      invoiceId: '00000000-0000-4000-8000-000000000002',
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

describe('the dead-letters page (/admin/queues/dead-letters)', () => {
  const page = (base: TestApi, path = '') => get(base, `/admin/queues/dead-letters${path}`, basic(USER, PASSWORD));
  const post = (base: TestApi, path: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
    got.post(`${base.url}/admin/queues/dead-letters${path}`, {
      form,
      headers: { authorization: basic(USER, PASSWORD), ...headers },
      throwHttpErrors: false,
      followRedirect: false,
    });
  const tokenOf = (html: string) => /name="token" value="([^"]+)"/.exec(html)?.[1];

  it('lists the dead letters from Postgres by serie-folio, behind the same credentials, RFCs redacted', async () => {
    const letter = await deadLetter('DLQ-PAGE-1');
    expect((await get(api, '/admin/queues/dead-letters')).statusCode).toBe(401);
    const res = await page(api);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(`data-outbox-id="${letter.outboxId}"`);
    expect(res.body).toContain(`>${letter.serieFolio}<`);
    expect(res.body).toContain('402: RFC [rfc] refused');
    expect(res.body).not.toContain('EKU9003173C9');
  });

  it('refuses a forged retry (no token, another site, a token for another row) and changes nothing', async () => {
    const letter = await deadLetter('DLQ-PAGE-2');
    const other = await deadLetter('DLQ-PAGE-3');
    const token = tokenOf((await page(api, `/${letter.outboxId}`)).body)!;
    expect(token).toBeDefined();
    for (const [form, headers] of [
      [{}, {}],
      [{ token }, { 'sec-fetch-site': 'cross-site' }],
      [{ token }, { origin: 'https://evil.example' }],
      [{ token: tokenOf((await page(api, `/${other.outboxId}`)).body)! }, {}],
    ] as [Record<string, string>, Record<string, string>][]) {
      const res = await post(api, `/${letter.outboxId}/retry`, form, headers);
      expect(res.statusCode).toBe(403);
    }
    const row = await api.prisma.outboxRow.findUniqueOrThrow({ where: { id: letter.outboxId } });
    expect(row.status).toBe('failed');
    expect(await api.prisma.outboxRedrive.count({ where: { outboxId: letter.outboxId } })).toBe(0);
  });

  it('re-drives with the form: the row pending, the re-drive on record (who, why, the failure)', async () => {
    const letter = await deadLetter('DLQ-PAGE-4');
    const token = tokenOf((await page(api, `/${letter.outboxId}`)).body)!;
    const res = await post(api, `/${letter.outboxId}/retry`, { token, reason: 'PAC fixed' });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/admin/queues/dead-letters/${letter.outboxId}?redriven=1`);
    expect((await api.prisma.outboxRow.findUniqueOrThrow({ where: { id: letter.outboxId } })).status).toBe('pending');
    expect(await api.prisma.outboxRedrive.findMany({ where: { outboxId: letter.outboxId } })).toEqual([
      expect.objectContaining({
        by: `dashboard:${USER}`,
        reason: 'PAC fixed',
        lastError: '402: RFC EKU9003173C9 refused',
      }),
    ]);
    // Twice is not a second re-drive: it is not a dead letter any more.
    expect((await post(api, `/${letter.outboxId}/retry`, { token })).statusCode).toBe(409);
    expect((await page(api, `/${letter.outboxId}`)).body).toContain('Not a dead letter now (status pending)');
  });

  it('offers no Retry, and refuses one, when DASHBOARD_ALLOW_DLQ_RETRY is off', async () => {
    const letter = await deadLetter('DLQ-PAGE-5');
    const res = await page(readOnly, `/${letter.outboxId}`);
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain('<form');
    expect(res.body).toContain('npm run ops -- dlq:retry');
    const token = tokenOf((await page(api, `/${letter.outboxId}`)).body)!;
    expect((await post(readOnly, `/${letter.outboxId}/retry`, { token })).statusCode).toBe(403);
    expect((await readOnly.prisma.outboxRow.findUniqueOrThrow({ where: { id: letter.outboxId } })).status).toBe(
      'failed',
    );
  });
});

describe('the dead-letters page in platform mode', () => {
  const PLATFORM_KEY = `tk_platform_${randomBytes(24).toString('base64url')}`;
  let platform: TestApi;
  let withBoard: TestApi;
  let clients: OrganizationClients;
  let owner: PrismaClient;
  let platformBoard: ReturnType<typeof dashboard>;
  beforeAll(async () => {
    platform = await startApi({
      platform: { key: PLATFORM_KEY, vault: LocalKeyVault.fromFile(`test:${randomBytes(32).toString('base64')}`) },
    });
    clients = new OrganizationClients(platform.db.url, { poolSize: 2 });
    owner = createPrisma(platform.db.url, { poolSize: 2 });
    platformBoard = dashboard({
      prisma: platform.prisma,
      redis,
      dlq,
      prefix,
      user: USER,
      password: PASSWORD,
      allowDlqRetry: true,
      organizations: { owner, clientFor: (id) => clients.for(id) },
    });
    withBoard = await startApi({ dashboard: platformBoard.router, database: platform.db });
  });
  afterAll(async () => {
    await platformBoard.close();
    await withBoard.close();
    await clients.close();
    await owner.$disconnect();
    await platform.close();
  });

  it("lists every organization's letters, each naming its organization, and re-drives one in its name", async () => {
    const call = (key: string, path: string, json: object) =>
      got
        .post(`${platform.url}${path}`, { json, headers: { authorization: `Bearer ${key}` } })
        .json<{ id: string; key?: string }>();
    const org = await call(PLATFORM_KEY, '/v1/organizations', {
      rfc: 'CACX7605101P8',
      nombre: 'XOCHILT CASAS CHAVEZ',
      regimenFiscal: '612',
      lugarExpedicion: '36257',
    });
    const f = testCsdFiles('CACX7605101P8');
    await call(PLATFORM_KEY, `/v1/organizations/${org.id}/csds`, {
      certificate: Buffer.from(f.cer).toString('base64'),
      privateKey: Buffer.from(f.key).toString('base64'),
      password: f.password,
    });
    const { key } = await call(PLATFORM_KEY, `/v1/organizations/${org.id}/keys`, { name: 'pos' });
    const letterOf = async (apiKey: string, prisma: PrismaClient, externalId: string) => {
      const paid = await call(apiKey, '/v1/payments', {
        externalId,
        amount: '116.00',
        currency: 'MXN',
        occurredAt: new Date().toISOString(),
      });
      const row = await prisma.outboxRow.findFirstOrThrow({ where: { invoice: { paymentId: paid.id } } });
      await deadLetterOutboxRow(prisma, { outboxId: row.id, invoiceId: row.invoiceId }, '402: refused');
      return row.id;
    };
    const theirs = await letterOf(key!, clients.for(org.id), 'DLQ-ORG-1');
    const ours = await letterOf(KEYS.pos, platform.prisma, 'DLQ-ORG-1');

    const list = await get(withBoard, '/admin/queues/dead-letters', basic(USER, PASSWORD));
    expect(list.body).toContain(`<tr data-outbox-id="${theirs}"><td data-organization="${org.id}">`);
    expect(list.body).toContain(
      `<tr data-outbox-id="${ours}"><td data-organization="${platform.payments.organizationId}">`,
    );

    const letterPage = (await get(withBoard, `/admin/queues/dead-letters/${theirs}`, basic(USER, PASSWORD))).body;
    expect(letterPage).toContain(org.id);
    const token = /name="token" value="([^"]+)"/.exec(letterPage)![1]!;
    const res = await got.post(`${withBoard.url}/admin/queues/dead-letters/${theirs}/retry`, {
      form: { token, reason: 'PAC fixed' },
      headers: { authorization: basic(USER, PASSWORD) },
      throwHttpErrors: false,
      followRedirect: false,
    });
    expect(res.statusCode).toBe(303);
    // In its organization's name: its history, its row pending again; nothing in the home organization's.
    expect(await clients.for(org.id).outboxRedrive.findMany({ where: { outboxId: theirs } })).toEqual([
      expect.objectContaining({ by: `dashboard:${USER}`, reason: 'PAC fixed' }),
    ]);
    expect((await clients.for(org.id).outboxRow.findUniqueOrThrow({ where: { id: theirs } })).status).toBe('pending');
    expect(await platform.prisma.outboxRedrive.count({ where: { outboxId: theirs } })).toBe(0);
  });
});

describe('dashboardJobName', () => {
  it.each([
    [{ name: 'stamp', data: { serieFolio: 'A-7' } }, 'stamp A-7'],
    [
      { name: 'cancel', data: { serieFolio: 'A-7' }, returnvalue: { status: 'rejected' } },
      'cancel A-7 → REJECTED by the receptor (the invoice stays valid)',
    ],
    [
      { name: 'cancel', data: { serieFolio: 'A-7' }, returnvalue: { status: 'failed', code: 'x' } },
      'cancel A-7 → NOT cancelled: the PAC refused it',
    ],
    [
      {
        name: 'dead-letter',
        data: { serieFolio: 'A-7' },
        returnvalue: { dead: false, settled: 'redriven', redrivenBy: 'ops:ana' },
      },
      'dead-letter A-7 → re-driven by ops:ana',
    ],
    [{ name: 'stamp', data: {} }, 'stamp'],
    [
      { name: 'stamp-group', data: { rows: [{ serieFolio: 'A-7' }, { serieFolio: 'A-8' }, { serieFolio: 'A-9' }] } },
      'stamp-group A-7 … A-9 (3)',
    ],
    [{ name: 'stamp-group', data: { rows: [{ serieFolio: 'A-7' }] } }, 'stamp-group A-7'],
    [{ name: 'stamp-group', data: { rows: [{}, { serieFolio: 'A-8' }] } }, 'stamp-group ? … A-8 (2)'],
  ])('%j → %s', (job, name) => {
    expect(dashboardJobName(job)).toBe(name);
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
