import { createRequire } from 'node:module';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import got from 'got';
import { parseStampedCfdi, parseTfd, printableCfdi } from '@timbra/cfdi-core';
import { SwClient } from '@timbra/cfdi-node';
import { ADMIN_TOKEN, freshInvoice, startSandbox, SW, type Ledger, type RunningSandbox } from './helpers.ts';

// jsqr is CommonJS whose module.exports is the decoder itself.
const jsQR = createRequire(import.meta.url)('jsqr') as (
  data: Uint8ClampedArray,
  width: number,
  height: number,
) => { data: string } | null;

let run: RunningSandbox;
beforeAll(async () => {
  run = await startSandbox();
});
afterAll(() => run.stop());

async function token(base: string): Promise<string> {
  const body = await got
    .post(`${base}/v2/security/authenticate`, { json: SW })
    .json<{ data: { token: string; expires_in: number } }>();
  expect(body.data.expires_in).toBe(7200);
  return body.data.token;
}

function multipart(xml: string): FormData {
  const form = new FormData();
  form.append('xml', new Blob([xml], { type: 'text/xml' }), 'xml');
  return form;
}

describe('SW wire protocol of the sandbox', () => {
  it('authenticates with JSON and with the legacy header form; refuses bad credentials with 401', async () => {
    const base = run.url();
    expect(await token(base)).toMatch(/.{20,}/);
    const legacy = await got
      .post(`${base}/security/authenticate`, { headers: { user: SW.user, password: SW.password } })
      .json<{ status: string }>();
    expect(legacy.status).toBe('success');
    const bad = await got.post(`${base}/v2/security/authenticate`, {
      json: { user: 'x', password: 'y' },
      throwHttpErrors: false,
    });
    expect(bad.statusCode).toBe(401);
  });

  it.each([
    ['v1', ['tfd']],
    ['v2', ['tfd', 'cfdi']],
    ['v3', ['cfdi']],
    [
      'v4',
      [
        'cadenaOriginalSAT',
        'noCertificadoSAT',
        'noCertificadoCFDI',
        'uuid',
        'selloSAT',
        'selloCFDI',
        'fechaTimbrado',
        'qrCode',
        'cfdi',
      ],
    ],
  ])('answers stamp %s with its response shape, with and without the /v4 prefix and /b64', async (version, keys) => {
    const base = run.url();
    const auth = { authorization: `Bearer ${await token(base)}` };
    for (const [prefix, b64] of [
      ['/cfdi33/stamp', false],
      ['/v4/cfdi33/stamp', false],
      ['/cfdi33/stamp', true],
    ] as const) {
      const frozen = freshInvoice();
      const body = b64 ? Buffer.from(frozen.xml).toString('base64') : frozen.xml;
      const res = await got
        .post(`${base}${prefix}/${version}${b64 ? '/b64' : ''}`, { body: multipart(body), headers: auth })
        .json<{ status: string; data: Record<string, string> }>();
      expect(res.status).toBe('success');
      expect(Object.keys(res.data).sort()).toEqual([...keys].sort());
      const decode = (s: string) => (b64 ? Buffer.from(s, 'base64').toString('utf8') : s);
      if (res.data.tfd) expect(parseTfd(decode(res.data.tfd)).tfd.selloCFD).toBe(frozen.sello);
      if (res.data.cfdi) expect(parseStampedCfdi(decode(res.data.cfdi)).sello).toBe(frozen.sello);
      // v4's qrCode is the printed representation's QR, a PNG (base64) of the SAT's verification URL.
      if (version === 'v4') {
        const png = PNG.sync.read(Buffer.from(res.data.qrCode!, 'base64'));
        const read = jsQR(new Uint8ClampedArray(png.data), png.width, png.height);
        expect(read?.data).toBe(printableCfdi(decode(res.data.cfdi!)).verificationUrl);
        expect(read?.data).toContain(`id=${res.data.uuid}`);
      }
    }
  });

  it('refuses a stamp without a valid token (401 AU4101)', async () => {
    const res = await got.post(`${run.url()}/v4/cfdi33/stamp/v4`, {
      body: multipart(freshInvoice().xml),
      headers: { authorization: 'Bearer nope' },
      throwHttpErrors: false,
    });
    expect(res.statusCode).toBe(401);
    expect((JSON.parse(res.body) as { message: string }).message).toMatch(/^AU4101/);
  });
});

describe('ledger, cross-PAC duplicates, admin API, persistence', () => {
  it('shows a document stamped by two PACs as a duplicate (dedupe is per PAC)', async () => {
    const frozen = freshInvoice();
    const options = (name: string) => ({
      name,
      baseUrl: run.url(name),
      user: SW.user,
      password: SW.password,
      satStatusUrl: 'http://127.0.0.1:9/',
    });
    const a = await new SwClient(options('primary')).stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
    const b = await new SwClient(options('backup')).stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
    expect(a.uuid).not.toBe(b.uuid);
    const ledger = (await run.admin('ledger', undefined)) as Ledger;
    const dup = ledger.duplicates.find((d) => d.uuids.includes(a.uuid));
    expect(dup?.uuids.sort()).toEqual([a.uuid, b.uuid].sort());
    expect(
      ledger.received
        .filter((r) => r.customid === frozen.stampKey)
        .map((r) => r.instance)
        .sort(),
    ).toEqual(['backup', 'primary']);
  });

  it('guards the admin API with the token; without a configured token it is off', async () => {
    const res = await got.get(`${run.adminUrl}/__admin/ledger`, { throwHttpErrors: false });
    expect(res.statusCode).toBe(401);
    const wrong = await got.get(`${run.url()}/__admin/ledger`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}x` },
      throwHttpErrors: false,
    });
    expect(wrong.statusCode).toBe(401);
    const invalid = await got.post(`${run.adminUrl}/__admin/faults`, {
      json: { instance: 'primary', errorRate: 2 },
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      throwHttpErrors: false,
    });
    expect(invalid.statusCode).toBe(422);
    const off = await startSandbox({ adminToken: undefined });
    try {
      const r = await got.get(`${off.url()}/__admin/ledger`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        throwHttpErrors: false,
      });
      expect(r.statusCode).toBe(404);
    } finally {
      await off.stop();
    }
  });

  it('keeps the ledger across a restart when a state file is configured', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'timbra-sandbox-state-'));
    const stateFile = join(dir, 'state.json');
    try {
      const first = await startSandbox({ stateFile });
      const frozen = freshInvoice();
      const options = (r: RunningSandbox) => ({
        name: 'primary',
        baseUrl: r.url(),
        user: SW.user,
        password: SW.password,
        satStatusUrl: 'http://127.0.0.1:9/',
      });
      const stamped = await new SwClient(options(first)).stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
      await first.stop();
      const second = await startSandbox({ stateFile });
      try {
        const again = await new SwClient(options(second)).stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
        expect(again).toMatchObject({ uuid: stamped.uuid, recovered: true });
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
