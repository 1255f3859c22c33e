import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { parse } from 'yaml';
import { API_ERRORS } from '../src/http/errors.ts';
import { startApi, type TestApi } from './helpers.ts';

// The reference the API serves at /docs (its browser test is apps/worker/test/reference-browser.test.ts):
// the document, its renderer's files from here, and the error codes every error's docUrl points into.

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const get = (path: string) => got(`${api.url}${path}`, { throwHttpErrors: false });

describe('/docs', () => {
  it('serves the spec, as YAML and as JSON, without a key', async () => {
    const yaml = readFileSync(new URL('../openapi.yaml', import.meta.url), 'utf8');
    expect((await get('/docs/openapi.yaml')).body).toBe(yaml);
    const json = await get('/docs/openapi.json');
    expect(json.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(json.body)).toEqual(parse(yaml));
  });

  it("renders it with Swagger UI's files served from here, under a CSP that allows only those", async () => {
    const page = await get('/docs');
    expect(page.statusCode).toBe(200);
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/script-src[^;]*unsafe/);
    const scripts = [...page.body.matchAll(/<script src="([^"]+)"/g)].map((m) => m[1]!);
    expect(scripts).toEqual(['/docs/assets/swagger-ui-bundle.js', '/docs/init.js']);
    for (const src of [...scripts, '/docs/assets/swagger-ui.css']) expect((await get(src)).statusCode).toBe(200);
    // Only the renderer's own files: nothing else of the package, nothing outside it.
    expect((await get('/docs/assets/package.json')).statusCode).toBe(404);
    expect((await get('/docs/assets/..%2F..%2Fpackage.json')).statusCode).toBe(404);
  });

  it('gives every error code an anchor on /docs/errors, and every error a docUrl that reaches it', async () => {
    const errors = (await get('/docs/errors')).body;
    const missing = Object.keys(API_ERRORS).filter((code) => !errors.includes(`<tr id="${code}">`));
    expect(missing).toEqual([]);

    const refused = await got.post(`${api.url}/v1/payments`, { json: {}, throwHttpErrors: false });
    const { error } = JSON.parse(refused.body) as { error: { code: string; docUrl: string } };
    expect(error.code).toBe('unauthorized');
    expect(error.docUrl).toBe(`${api.url}/docs/errors#unauthorized`);
    const target = new URL(error.docUrl);
    expect((await got(target.href.replace(target.hash, ''))).body).toContain(`<tr id="${error.code}">`);
  });
});
