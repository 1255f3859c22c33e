import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import got from 'got';
import { parse } from 'yaml';
import { createTimbra, TIMBRA_API_VERSION } from '@timbra/client';
import { API_VERSIONS, CURRENT_API_VERSION, hashApiKey } from '@timbra/db/keys';
import { KEYS, startApi, type TestApi } from './helpers.ts';

// Dated API versions (docs/versioning.md): the version a request names, else its key's, answers and is
// said in Timbra-Version; an unknown one is refused before anything is done.

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(async () => {
  await api.close();
});

const recent = () => new Date(Date.now() - 60_000).toISOString();
const auth = (key: string) => ({ authorization: `Bearer ${key}` });

describe('Timbra-Version', () => {
  it('one current version: the spec describes it, the client sends it, keys are made with it', () => {
    const spec = parse(readFileSync(new URL('../openapi.yaml', import.meta.url), 'utf8')) as {
      info: { version: string };
      components: { schemas: { ApiVersion: { enum: string[] } } };
    };
    expect(spec.info.version).toBe(CURRENT_API_VERSION);
    expect(spec.components.schemas.ApiVersion.enum).toEqual([...API_VERSIONS]);
    expect(TIMBRA_API_VERSION).toBe(CURRENT_API_VERSION);
  });

  it("answers in the key's version when the request names none, and in the one it names", async () => {
    const plain = await got.get(`${api.url}/v1/payments`, { headers: auth(KEYS.pos) });
    expect(plain.headers['timbra-version']).toBe(CURRENT_API_VERSION);
    const named = await got.get(`${api.url}/v1/payments`, {
      headers: { ...auth(KEYS.pos), 'timbra-version': CURRENT_API_VERSION },
    });
    expect(named.headers['timbra-version']).toBe(CURRENT_API_VERSION);
    // A key's version is its own column: a key pinned elsewhere answers in it. Only one exists today,
    // so pin the key to a value the API does not have and see it refused as such, not ignored.
    await api.prisma.apiClient.update({
      where: { keyHash: hashApiKey(KEYS.other) },
      data: { apiVersion: '2026-01-01' },
    });
    const pinned = await got.get(`${api.url}/v1/payments`, { headers: auth(KEYS.other), throwHttpErrors: false });
    expect(pinned.statusCode).toBe(400);
    expect(JSON.parse(pinned.body)).toMatchObject({ error: { code: 'unknown_api_version' } });
  });

  it('refuses a version it does not have before doing anything, naming those it has', async () => {
    const timbra = createTimbra({ baseUrl: api.url, apiKey: KEYS.pos, apiVersion: '2020-01-01' });
    const refused = await timbra.POST('/v1/payments', {
      body: { externalId: 'V-1', amount: '116.00', currency: 'MXN', occurredAt: recent() },
    });
    expect(refused.response.status).toBe(400);
    expect(refused.error!.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'unknown_api_version',
      param: 'Timbra-Version',
      details: [{ path: 'Timbra-Version', message: `one of ${API_VERSIONS.join(', ')}` }],
    });
    expect(await api.prisma.payment.count({ where: { externalId: 'V-1' } })).toBe(0);
  });

  it('makes a key in the version asked, or the current one; refuses one it does not have', async () => {
    const admin = createTimbra({ baseUrl: api.url, apiKey: KEYS.admin });
    const made = await admin.POST('/v1/keys', { body: { name: 'versioned', apiVersion: CURRENT_API_VERSION } });
    expect(made.data!.apiVersion).toBe(CURRENT_API_VERSION);
    const plain = await admin.POST('/v1/keys', { body: { name: 'unversioned' } });
    expect(plain.data!.apiVersion).toBe(CURRENT_API_VERSION);
    const wrong = await got.post(`${api.url}/v1/keys`, {
      headers: auth(KEYS.admin),
      json: { name: 'wrong', apiVersion: '2019-01-01' },
      throwHttpErrors: false,
    });
    expect(wrong.statusCode).toBe(422);
    expect(JSON.parse(wrong.body)).toMatchObject({ error: { code: 'validation_failed', param: 'apiVersion' } });
  });

  it('records on each event the version its object was written in', async () => {
    const timbra = createTimbra({ baseUrl: api.url, apiKey: KEYS.pos });
    const paid = await timbra.POST('/v1/payments', {
      body: { externalId: 'V-ev', amount: '58.00', currency: 'MXN', occurredAt: recent() },
    });
    const events = await timbra.GET('/v1/events', { params: { query: { paymentId: paid.data!.id } } });
    expect(events.data!.data.map((e) => e.apiVersion)).toEqual([CURRENT_API_VERSION]);
    expect(events.response.headers.get('timbra-version')).toBe(CURRENT_API_VERSION);
  });
});
