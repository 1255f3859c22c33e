/**
 * Every route of the spec, walked with hostile input: each path id, each query filter and each body
 * field gets characters no column or CFDI can hold, SQL, arrays, objects and oversized text; the
 * headers get control characters and garbage. Whatever the input, the answer is a 4xx with a stable
 * code (never a 5xx), and nothing is written.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { parse } from 'yaml';
import { KEYS, startApi, writtenRows, type TestApi } from './helpers.ts';

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  $ref?: string;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: { $ref?: string } }> };
}
interface Schema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  allOf?: Schema[];
}

const spec = parse(readFileSync(new URL('../openapi.yaml', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, Operation>>;
  components: { parameters: Record<string, Parameter>; schemas: Record<string, Schema> };
};
const refName = (ref: string) => ref.split('/').at(-1) ?? '';
const param = (p: Parameter) => (p.$ref ? (spec.components.parameters[refName(p.$ref)] ?? p) : p);
const schema = (s: Schema): Schema => (s.$ref ? schema(spec.components.schemas[refName(s.$ref)] ?? {}) : s);
/** A body schema's top-level properties (through `$ref` and `allOf`). */
function propertiesOf(s: Schema | undefined): string[] {
  if (!s) return [];
  const resolved = schema(s);
  return [...Object.keys(resolved.properties ?? {}), ...(resolved.allOf ?? []).flatMap((part) => propertiesOf(part))];
}

const METHODS = ['get', 'post', 'patch', 'delete'] as const;
const operations = Object.entries(spec.paths)
  .filter(([path]) => path.startsWith('/v1/'))
  .flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({ path, method, operation: item[method] as Operation })),
  );

const A_UUID = '00000000-0000-4000-8000-000000000000';
/** Path ids, URL-encoded as a client would send them. */
const HOSTILE_IDS = [
  '%00',
  `${A_UUID.slice(0, -1)}%00`,
  '%01',
  '%EF%BF%BF',
  '%ED%A0%80',
  "1'%20OR%20'1'='1",
  'x'.repeat(2000),
  '..%2F..%2Fetc%2Fpasswd',
  '%E2%80%AE',
  '-1',
];
/** Query values, URL-encoded, and the forms qs turns into arrays and objects. */
const HOSTILE_QUERIES = (name: string) => [
  `${name}=%00`,
  `${name}=a%00b`,
  `${name}=%0B`,
  `${name}=%EF%BF%BE`,
  `${name}=%ED%A0%80`,
  `${name}=%FF`,
  `${name}='%3B--`,
  `${name}=${'y'.repeat(5000)}`,
  `${name}[]=a&${name}[]=b`,
  `${name}[a]=b`,
  `${name}[%00]=b`,
  `${name}=`,
];
/** Body field values, as JSON. */
const HOSTILE_VALUES: unknown[] = ['\u0000', 'a\u0000b', '\u0007', '\uffff', '\ud800', { '\u0000': 1 }, ['\u0001']];

interface Case {
  name: string;
  method: string;
  path: string;
  body?: string;
  headers?: Record<string, string>;
}

const headers = { authorization: `Bearer ${KEYS.admin}`, 'content-type': 'application/json' };
const concrete = (path: string) => path.replace(/\{[^}]+\}/g, A_UUID);

const cases: Case[] = operations.flatMap(({ path, method, operation }) => {
  const params = (operation.parameters ?? []).map(param);
  const ids = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] ?? '');
  const body = operation.requestBody?.content['application/json']?.schema;
  const hasBody = method === 'post' || method === 'patch';
  const base = { method: method.toUpperCase(), ...(hasBody ? { body: '{}' } : {}) };
  return [
    ...ids.flatMap((id) =>
      HOSTILE_IDS.map((value) => ({
        ...base,
        name: `${method} ${path}: ${id}=${value.slice(0, 24)}`,
        path: concrete(path.replace(`{${id}}`, value)),
      })),
    ),
    ...params
      .filter((p) => p.in === 'query')
      .flatMap((p) =>
        HOSTILE_QUERIES(p.name).map((query) => ({
          ...base,
          name: `${method} ${path}?${query.slice(0, 30)}`,
          path: `${concrete(path)}?${query}`,
        })),
      ),
    ...(hasBody ? propertiesOf(body) : []).flatMap((field) =>
      HOSTILE_VALUES.map((value) => ({
        ...base,
        name: `${method} ${path} body.${field}=${JSON.stringify(value)}`,
        path: concrete(path),
        body: JSON.stringify({ [field]: value }),
      })),
    ),
    ...[
      { 'idempotency-key': 'k\u0001y' },
      { 'idempotency-key': 'x'.repeat(300) },
      { 'x-request-id': '\u0000'.repeat(3) },
      { 'content-type': 'application/json; charset=utf-7' },
      { 'content-type': 'application/json; charset=latin1' },
      { authorization: `Bearer ${KEYS.admin}\u0000` },
    ].map((extra) => ({
      ...base,
      name: `${method} ${path} with ${JSON.stringify(extra).slice(0, 40)}`,
      path: concrete(path),
      headers: { ...headers, ...extra },
    })),
  ];
});

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

describe('every route with hostile input', () => {
  it('covers every /v1 operation of the spec', () => {
    expect(operations.length).toBeGreaterThanOrEqual(40);
    expect(cases.length).toBeGreaterThanOrEqual(500);
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s → no 5xx; a refusal has a code', async (_name, c) => {
    const res = await got(`${api.url}${c.path}`, {
      method: c.method as 'GET',
      ...(c.body !== undefined ? { body: c.body } : {}),
      headers: c.headers ?? headers,
      throwHttpErrors: false,
      retry: { limit: 0 },
    }).catch((error: Error & { code?: string }) => {
      // got refuses to send a header with a control character itself: nothing reached the API.
      if (error.code === 'ERR_INVALID_CHAR') return undefined;
      throw error;
    });
    if (!res) return;
    expect(res.statusCode).toBeLessThan(500);
    // A filter that matches nothing is a page of nothing (200); a refusal says why.
    if (res.statusCode < 400) return expect(c.method).toBe('GET');
    const error = (JSON.parse(res.body) as { error: { code: string; requestId: string } }).error;
    expect(typeof error.code).toBe('string');
    expect(error.requestId).toBeTruthy();
  });

  it('wrote no row for any of them', async () => {
    const rows = await writtenRows(api.prisma);
    expect(rows).toEqual(Object.fromEntries(Object.keys(rows).map((table) => [table, 0])));
  });
});
