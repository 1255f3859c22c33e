import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import got from 'got';
import pg from 'pg';
import { parse } from 'yaml';
import { LocalKeyVault } from '@timbra/cfdi-node';
import { testCsdFiles } from '@timbra/test-support';
import { EMISOR, KEYS, startApi, type TestApi } from './helpers.ts';

// Two organizations in one database — each with its own API process, and both served by one process
// in platform mode (the other made through /v1/organizations) — with their own keys and the same
// names for their own things (key names, a payment's externalId, a product's
// reference). The apps hold no organization filter of their own: what keeps each to its rows is row-level
// security (migration 20261219000000), which these requests meet through every route of the spec.

const OTHER_EMISOR = {
  rfc: 'CACX7605101P8',
  nombre: 'XOCHILT CASAS CHAVEZ',
  regimenFiscal: '612',
  lugarExpedicion: '36257',
} as const;
const OTHER_KEYS = {
  pos: 'b-pos-key-0123456789abcdef',
  other: 'b-other-key-0123456789abcdef',
  admin: 'b-admin-key-0123456789abcdef',
};

let a: TestApi;
/** The other organization's API: its own process, or (platform mode) the same one as `a`'s. */
let b: Pick<TestApi, 'url'> & { payments: { organizationId: string }; close: () => Promise<void> };
/** The other organization's keys (platform mode: made through /v1/organizations). */
let otherKeys: typeof OTHER_KEYS;
/** Each organization's objects, made through its own API: what the other must never reach. */
const made: Record<'a' | 'b', Record<string, string>> = { a: {}, b: {} };

const call = (api: Pick<TestApi, 'url'>, key: string, method: string, path: string, body?: object) =>
  got(`${api.url}${path}`, {
    method: method.toUpperCase() as 'GET',
    headers: { authorization: `Bearer ${key}`, 'idempotency-key': randomUUID() },
    ...(body && method !== 'get' ? { json: body } : {}),
    throwHttpErrors: false,
    responseType: 'text',
  });

async function populate(api: Pick<TestApi, 'url'>, key: string, tag: 'a' | 'b', customerRfc: object): Promise<void> {
  const created = async (path: string, body: object) => {
    const res = await call(api, key, 'post', path, body);
    expect({ path, status: res.statusCode }).toEqual({ path, status: 201 });
    return JSON.parse(res.body) as { id: string; invoices?: { id: string }[] };
  };
  made[tag].customers = (await created('/v1/customers', customerRfc)).id;
  made[tag].products = (
    await created('/v1/products', {
      reference: 'P1',
      descripcion: 'Audífonos',
      claveProdServ: '52161514',
      claveUnidad: 'H87',
      unitPrice: '580',
    })
  ).id;
  made[tag]['webhook-endpoints'] = (
    await created('/v1/webhook-endpoints', { url: `https://${tag}.example.com/hook`, events: ['*'] })
  ).id;
  made[tag].keys = (await created('/v1/keys', { name: 'till-1' })).id;
  const payment = await created('/v1/payments', {
    externalId: 'ORG-1',
    amount: '116.00',
    currency: 'MXN',
    occurredAt: new Date(Date.now() - 60_000).toISOString(),
  });
  made[tag].payments = payment.id;
  made[tag].invoices = payment.invoices![0]!.id;
  const deliveries = JSON.parse((await call(api, key, 'get', '/v1/deliveries')).body) as { data: { id: string }[] };
  made[tag].deliveries = deliveries.data[0]!.id;
}

/** Every row of organization `org`, table by table, as the database's owner reads them. */
async function rowsOf(api: TestApi, org: string): Promise<Record<string, string>> {
  const owner = new pg.Client({ connectionString: api.db.url });
  await owner.connect();
  try {
    const { rows: tables } = await owner.query<{ table: string; column: string }>(
      `SELECT c.relname AS table,
              CASE WHEN c.relname = 'emisores' THEN 'id'
                   WHEN EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'organization_id')
                   THEN 'organization_id' ELSE 'organization_id' END AS column
       FROM pg_class c
       WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'
         AND c.relname NOT IN ('_prisma_migrations', 'invoice_status_transitions')`,
    );
    const out: Record<string, string> = {};
    for (const { table, column } of tables) {
      const { rows } = await owner.query<{ digest: string | null }>(
        `SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS digest FROM "${table}" t WHERE ${column} = $1`,
        [org],
      );
      out[table] = rows[0]!.digest ?? '(none)';
    }
    return out;
  } finally {
    await owner.end();
  }
}

const PLATFORM_KEY = `tk_platform_${randomBytes(24).toString('base64url')}`;

/** Two APIs over one database, each made as its own organization's process. */
async function twoProcesses(): Promise<void> {
  a = await startApi();
  b = await startApi({ database: a.db, organization: { emisor: OTHER_EMISOR, keys: OTHER_KEYS } });
  otherKeys = OTHER_KEYS;
}

/** One API in platform mode; the other organization made, given a CSD and keys by the platform key. */
async function onePlatformProcess(): Promise<void> {
  a = await startApi({
    platform: { key: PLATFORM_KEY, vault: LocalKeyVault.fromFile(`t:${randomBytes(32).toString('base64')}`) },
  });
  const platform = async (path: string, body: object) => {
    const res = await call(a, PLATFORM_KEY, 'post', `/v1/organizations${path}`, body);
    expect({ path, status: res.statusCode }).toEqual({ path, status: 201 });
    return JSON.parse(res.body) as { id: string; key: string };
  };
  const { id } = await platform('', OTHER_EMISOR);
  const files = testCsdFiles(OTHER_EMISOR.rfc);
  await platform(`/${id}/csds`, {
    certificate: Buffer.from(files.cer).toString('base64'),
    privateKey: Buffer.from(files.key).toString('base64'),
    password: files.password,
  });
  const keyOf = async (name: string, scopes: string[]) => (await platform(`/${id}/keys`, { name, scopes })).key;
  otherKeys = {
    pos: await keyOf('pos', ['read', 'write', 'cancel']),
    other: await keyOf('other', ['read', 'write', 'cancel']),
    admin: await keyOf('ops', ['read', 'write', 'cancel', 'admin']),
  };
  b = { url: a.url, payments: { organizationId: id }, close: () => Promise.resolve() };
}

/** The spec's operations: method and path template. */
function operations(): { method: string; path: string }[] {
  const spec = parse(readFileSync(new URL('../openapi.yaml', import.meta.url), 'utf8')) as {
    paths: Record<string, Record<string, unknown>>;
  };
  return Object.entries(spec.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))
      .map((method) => ({ method, path })),
  );
}

/** `path` with its ids taken from `tag`'s objects: `{id}` by the path's resource, others a fresh UUID. */
function withIds(path: string, tag: 'a' | 'b'): string {
  const resource = path.split('/')[2]!;
  return path.replace('{id}', made[tag][resource] ?? randomUUID()).replace(/\{[a-zA-Z]+\}/g, randomUUID());
}

describe.each([
  ['two API processes', twoProcesses],
  ['one API process in platform mode', onePlatformProcess],
] as const)('two organizations in one deployment: %s', (mode, start) => {
  beforeAll(async () => {
    made.a = {};
    made.b = {};
    await start();
    await populate(a, KEYS.admin, 'a', {
      rfc: 'CACX7605101P8',
      nombre: 'XOCHILT CASAS CHAVEZ',
      regimenFiscal: '612',
      codigoPostal: '36257',
      usoCfdi: 'G03',
    });
    await populate(b, otherKeys.admin, 'b', {
      rfc: EMISOR.rfc,
      nombre: EMISOR.nombre,
      regimenFiscal: EMISOR.regimenFiscal,
      codigoPostal: EMISOR.lugarExpedicion,
      usoCfdi: 'G03',
    });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('every operation of the spec, called with one organization’s admin key, shows and changes nothing of the other’s', async () => {
    const before = await rowsOf(a, b.payments.organizationId);
    const secrets = Object.values(made.b);
    let reached = 0;
    for (const { method, path } of operations()) {
      const ownIds = path.includes('{') ? withIds(path, 'a') : path;
      const res = await call(a, KEYS.admin, method, path.includes('{') ? withIds(path, 'b') : path, {});
      const leaked = secrets.filter((s) => res.body.includes(s));
      expect({ method, path, leaked }).toEqual({ method, path, leaked: [] });
      if (path.includes('{id}') && made.b[path.split('/')[2]!]) {
        // Another's object is not found, whatever the operation, where the same call on one's own is.
        const succeeded = res.statusCode >= 200 && res.statusCode < 300;
        expect({ method, path, succeeded }).toEqual({ method, path, succeeded: false });
        if (method === 'get' && (await call(a, KEYS.admin, method, ownIds)).statusCode === 200) reached++;
      }
    }
    // Not vacuous: the reads that miss the other's objects find one's own.
    expect(reached).toBeGreaterThanOrEqual(6);
    expect(await rowsOf(a, b.payments.organizationId)).toEqual(before);
  });

  it('each list shows its own organization’s objects only', async () => {
    for (const resource of [
      'payments',
      'invoices',
      'customers',
      'products',
      'webhook-endpoints',
      'keys',
      'deliveries',
    ]) {
      for (const [api, key, own, other] of [
        [a, KEYS.admin, 'a', 'b'],
        [b, otherKeys.admin, 'b', 'a'],
      ] as const) {
        const res = await call(api, key, 'get', `/v1/${resource}`);
        expect({ resource, status: res.statusCode }).toEqual({ resource, status: 200 });
        expect({ resource, own: res.body.includes(made[own][resource]!) }).toEqual({ resource, own: true });
        expect({ resource, other: res.body.includes(made[other][resource]!) }).toEqual({ resource, other: false });
      }
    }
  });

  // Two processes: each knows its own keys only.
  if (mode === 'two API processes')
    it('a key of one organization is unknown to the other’s API', async () => {
      expect((await call(a, KEYS.admin, 'get', '/v1/payments')).statusCode).toBe(200);
      expect((await call(b, KEYS.admin, 'get', '/v1/payments')).statusCode).toBe(401);
      expect((await call(a, OTHER_KEYS.pos, 'get', '/v1/payments')).statusCode).toBe(401);
    });
  // One process: the platform key reaches no organization's rows, and no organization's key manages organizations.
  else
    it('the platform key and the organizations’ keys each reach only their own', async () => {
      expect((await call(a, PLATFORM_KEY, 'get', '/v1/payments')).statusCode).toBe(401);
      for (const key of [KEYS.admin, otherKeys.admin])
        expect((await call(a, key, 'get', '/v1/organizations')).statusCode).toBe(401);
      expect((await call(a, PLATFORM_KEY, 'get', '/v1/organizations')).statusCode).toBe(200);
    });
});
