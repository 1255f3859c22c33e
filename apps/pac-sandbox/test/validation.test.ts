/**
 * The sandbox refuses what a real PAC refuses: documents that were stamped here before (each sealed
 * correctly, so only the SAT's schema and rules can catch them) now get the SAT's code, through SW's
 * and Finkok's own protocols, classified by Timbra's clients as permanent rejections. Receptor data
 * not as the taxpayer list has it is refused too; validation can be switched off per instance.
 *
 * @clock the SAT's own test certificate, valid until 2027-05-18
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import got from 'got';
import { X509Certificate } from 'node:crypto';
import {
  attr,
  cadenaOriginal,
  childElements,
  loadCsd,
  NS,
  parseXml,
  sellar,
  serializeXml,
  setAttr,
  type XmlElement,
} from '@timbra/cfdi-core';
import {
  ADMIN_TOKEN,
  emisor,
  finkokClient,
  freshInvoice,
  pacFailure,
  startSandbox,
  SW,
  swClient,
  type RunningSandbox,
} from './helpers.ts';
import { forgeSatIssuedCertificate, freezeSample, satTestCsdFiles } from '@timbra/test-support';

let run: RunningSandbox;
let sw: ReturnType<typeof swClient>;
let finkok: ReturnType<typeof finkokClient>;
beforeAll(async () => {
  run = await startSandbox();
  sw = swClient(run, 'primary', { timeouts: { connectMs: 1_000, responseMs: 5_000 } });
  finkok = finkokClient(run, 'backup', { timeouts: { connectMs: 1_000, responseMs: 5_000 } });
});
afterAll(() => run.stop());

/** A fresh valid Ingreso changed by `mutate` and sealed again with the emisor's CSD. */
function tampered(mutate: (root: XmlElement) => void): string {
  const root = parseXml(freshInvoice().xml);
  mutate(root);
  setAttr(root, 'Sello', sellar(cadenaOriginal(root), emisor.csd.privateKey));
  return serializeXml(root);
}
const first = (parent: XmlElement, local: string) => childElements(parent, NS.cfdi, local)[0]!;
const concepto = (root: XmlElement) => first(first(root, 'Conceptos'), 'Concepto');

// Documents the sandbox used to stamp, and what a real PAC answers instead.
const BAD: [string, string, (root: XmlElement) => void][] = [
  ["a '|' in Descripcion", '301', (r) => setAttr(concepto(r), 'Descripcion', 'Colegiatura | agosto')],
  ['a 1001-character Descripcion', '301', (r) => setAttr(concepto(r), 'Descripcion', 'x'.repeat(1001))],
  ['Total 9999.99 against the conceptos', 'CFDI40119', (r) => setAttr(r, 'Total', '9999.99')],
  ['FormaPago 77', 'CFDI40104', (r) => setAttr(r, 'FormaPago', '77')],
  ['Rfc NOT-AN-RFC', 'CFDI40143', (r) => setAttr(first(r, 'Receptor'), 'Rfc', 'NOT-AN-RFC')],
  ['Exportacion 09', 'CFDI40123', (r) => setAttr(r, 'Exportacion', '09')],
  ['Moneda ZZZ', 'CFDI40113', (r) => setAttr(r, 'Moneda', 'ZZZ')],
  ['UsoCFDI G03 for régimen 605', 'CFDI40161', (r) => setAttr(first(r, 'Receptor'), 'RegimenFiscalReceptor', '605')],
  [
    'NumRegIdTrib without ResidenciaFiscal',
    'CFDI40153',
    (r) => {
      const receptor = first(r, 'Receptor');
      setAttr(receptor, 'Rfc', 'XEXX010101000');
      setAttr(receptor, 'Nombre', 'ACME INC');
      setAttr(receptor, 'DomicilioFiscalReceptor', attr(r, 'LugarExpedicion')!);
      setAttr(receptor, 'RegimenFiscalReceptor', '616');
      setAttr(receptor, 'UsoCFDI', 'S01');
      setAttr(receptor, 'NumRegIdTrib', '123456789');
    },
  ],
  // Receptor data checked against the SAT's taxpayer list (L_RFC).
  ['a receptor RFC not registered', 'CFDI40143', (r) => setAttr(first(r, 'Receptor'), 'Rfc', 'MAHJ280603TI9')],
  ['a name not as registered', 'CFDI40145', (r) => setAttr(first(r, 'Receptor'), 'Nombre', 'XOCHITL CASAS CHAVEZ')],
  [
    'a postal code not as registered',
    'CFDI40147',
    (r) => setAttr(first(r, 'Receptor'), 'DomicilioFiscalReceptor', '36258'),
  ],
];

describe('previously accepted bad documents get the SAT code, in each protocol', () => {
  it.each(BAD)('%s → %s (SW)', async (_name, code, mutate) => {
    const failure = await pacFailure(sw.stamp(tampered(mutate), { idempotencyKey: `sw-${code}-${randomUUID()}` }));
    expect(failure).toMatchObject({ pacCode: code, outcome: 'permanent' });
  });

  it.each(BAD)('%s → %s (Finkok)', async (_name, code, mutate) => {
    const failure = await pacFailure(finkok.stamp(tampered(mutate), { idempotencyKey: `fk-${code}-${randomUUID()}` }));
    expect(failure).toMatchObject({ pacCode: code, outcome: 'permanent' });
  });

  it('answers SW with its error shape and the SAT’s Spanish text and the node', async () => {
    const auth = await got
      .post(`${run.url()}/v2/security/authenticate`, { json: SW })
      .json<{ data: { token: string } }>();
    const form = new FormData();
    const xml = tampered((r) => setAttr(r, 'FormaPago', '77'));
    form.append('xml', new Blob([xml], { type: 'text/xml' }), 'xml');
    const res = await got.post(`${run.url()}/v4/cfdi33/stamp/v4`, {
      body: form,
      headers: { authorization: `Bearer ${auth.data.token}` },
      throwHttpErrors: false,
    });
    expect(res.statusCode).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({
      status: 'error',
      message: expect.stringMatching(
        /^CFDI40104 - El campo FormaPago no contiene un valor del catálogo c_FormaPago\. \(\/cfdi:Comprobante\/@FormaPago\)/,
      ),
    });
  });
});

describe('switches and the taxpayer list', () => {
  const admin = (method: 'get' | 'post' | 'put' | 'delete', path: string, json?: object) =>
    got(`${run.adminUrl}/__admin/${path}`, {
      method,
      ...(json ? { json } : {}),
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    }).json<Record<string, unknown>>();

  it('stamps the valid document, and a bad one once validation is off on that instance only', async () => {
    expect((await sw.stamp(freshInvoice().xml, { idempotencyKey: 'valid-1' })).uuid).toMatch(/-/);
    const bad = tampered((r) => setAttr(r, 'Exportacion', '09'));
    await admin('post', 'validation', { instance: 'primary', xsd: false, rules: false });
    try {
      expect((await sw.stamp(bad, { idempotencyKey: 'off-1' })).uuid).toMatch(/-/);
      const onBackup = await pacFailure(finkok.stamp(bad, { idempotencyKey: 'still-on' }));
      expect(onBackup.pacCode).toBe('CFDI40123');
    } finally {
      await admin('post', 'validation', { instance: 'primary', xsd: true, rules: true });
    }
    expect(await admin('get', 'validation?instance=primary')).toEqual({
      instance: 'primary',
      validation: { xsd: true, rules: true },
    });
  });

  it('refuses malformed switches (422)', async () => {
    const res = await got.post(`${run.adminUrl}/__admin/validation`, {
      json: { instance: 'primary', xsd: 'yes' },
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      throwHttpErrors: false,
    });
    expect(res.statusCode).toBe(422);
  });

  it('a taxpayer registered through the admin API is then accepted as receptor, and refused once cancelled', async () => {
    const mutate = (r: XmlElement) => {
      const receptor = first(r, 'Receptor');
      setAttr(receptor, 'Rfc', 'MAHJ280603TI9');
      setAttr(receptor, 'Nombre', 'JUAN MARTINEZ HERNANDEZ');
      setAttr(receptor, 'DomicilioFiscalReceptor', '64000');
    };
    expect((await pacFailure(sw.stamp(tampered(mutate), { idempotencyKey: 'reg-0' }))).pacCode).toBe('CFDI40143');
    await admin('put', 'taxpayers/MAHJ280603TI9', {
      name: 'JUAN MARTINEZ HERNANDEZ',
      postalCode: '64000',
      regimenes: ['612'],
    });
    expect(await admin('get', 'taxpayers/MAHJ280603TI9')).toMatchObject({ rfc: 'MAHJ280603TI9', status: 'active' });
    expect((await sw.stamp(tampered(mutate), { idempotencyKey: 'reg-1' })).uuid).toMatch(/-/);
    await admin('put', 'taxpayers/MAHJ280603TI9', {
      name: 'JUAN MARTINEZ HERNANDEZ',
      postalCode: '64000',
      regimenes: ['612'],
      status: 'cancelled',
    });
    expect((await pacFailure(sw.stamp(tampered(mutate), { idempotencyKey: 'reg-2' }))).pacCode).toBe('CFDI40143');
    expect(await admin('delete', 'taxpayers/MAHJ280603TI9')).toEqual({ deleted: true });
  });
});

describe('certificates from the SAT, and forgeries', () => {
  // A certificate whose issuer names the SAT, signed by another key: once stamped (the sandbox read
  // the issuer's name only), refused by a real PAC.
  it('a certificate whose issuer only names the SAT → 308, in each protocol', async () => {
    const forged = forgeSatIssuedCertificate(satTestCsdFiles('EKU9003173C9').cer);
    expect(new X509Certificate(forged).issuer).toContain('SERVICIO DE ADMINISTRACION TRIBUTARIA');
    const csd = loadCsd(forged, emisor.key, emisor.password);
    const xml = freezeSample({}, csd).xml;
    expect(await pacFailure(sw.stamp(xml, { idempotencyKey: `sw-forged-${randomUUID()}` }))).toMatchObject({
      pacCode: '308',
      outcome: 'permanent',
    });
    expect(await pacFailure(finkok.stamp(xml, { idempotencyKey: `fk-forged-${randomUUID()}` }))).toMatchObject({
      pacCode: '308',
    });
  });

  it('the SAT’s own test certificate, as published, is the SAT’s (known by its bytes)', async () => {
    // Dated inside the certificate's validity, on a sandbox whose clock is there too (CI also runs
    // this file with the clock after the SAT's test certificates end).
    const at = new Date('2026-12-01T12:00:00Z');
    const dated = await startSandbox({ now: () => new Date(at.getTime() + 60_000) });
    try {
      const own = satTestCsdFiles('EKU9003173C9');
      const xml = freezeSample({ issuedAt: at.toISOString() }, loadCsd(own.cer, own.key, own.password)).xml;
      const client = swClient(dated, 'primary', { timeouts: { connectMs: 1_000, responseMs: 5_000 } });
      const stamped = await client.stamp(xml, { idempotencyKey: `sw-own-${randomUUID()}` });
      expect(stamped.uuid).toMatch(/^[0-9A-F-]{36}$/);
    } finally {
      await dated.stop();
    }
  });
});
