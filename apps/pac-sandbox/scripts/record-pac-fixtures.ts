/**
 * Records the sandbox's raw answers for each PAC outcome into
 * packages/cfdi-core/test/fixtures/pac/, where the classifier table test replays them through the
 * translators. Run after changing what the sandbox answers:
 *   npx tsx --conditions=@timbra/source apps/pac-sandbox/scripts/record-pac-fixtures.ts
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import got from 'got';
import { freshInvoice, startSandbox, SW, FINKOK } from '../test/helpers.ts';

const out = resolve(dirname(fileURLToPath(import.meta.url)), '../../../packages/cfdi-core/test/fixtures/pac');
mkdirSync(out, { recursive: true });

const run = await startSandbox();
const base = run.url();
const token = (await got.post(`${base}/v2/security/authenticate`, { json: SW }).json<{ data: { token: string } }>())
  .data.token;

function form(xml: string) {
  const f = new FormData();
  f.append('xml', new Blob([xml], { type: 'text/xml' }), 'xml');
  return f;
}
async function sw(
  name: string,
  xml: string,
  customid: string,
  expected: { outcome: string; code?: string },
  auth = token,
) {
  const res = await got.post(`${base}/v4/cfdi33/stamp/v4`, {
    body: form(xml),
    headers: { authorization: `Bearer ${auth}`, customid },
    throwHttpErrors: false,
  });
  writeFileSync(
    join(out, `sw-${name}.json`),
    `${JSON.stringify({ protocol: 'sw', operation: 'stamp', expected, response: { status: res.statusCode, body: res.body } }, null, 2)}\n`,
  );
}
async function finkok(
  name: string,
  operation: string,
  xml: string,
  expected: { outcome: string; code?: string },
  password = FINKOK.password,
) {
  const envelope =
    '<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:stamp="http://facturacion.finkok.com/stamp"><soapenv:Body>' +
    `<stamp:${operation}><stamp:xml>${Buffer.from(xml).toString('base64')}</stamp:xml><stamp:username>${FINKOK.username}</stamp:username><stamp:password>${password}</stamp:password></stamp:${operation}></soapenv:Body></soapenv:Envelope>`;
  const res = await got.post(`${run.url('backup')}/servicios/soap/stamp`, {
    body: envelope,
    headers: { 'content-type': 'text/xml' },
    throwHttpErrors: false,
  });
  writeFileSync(
    join(out, `finkok-${name}.json`),
    `${JSON.stringify({ protocol: 'finkok', operation, expected, response: { status: res.statusCode, body: res.body } }, null, 2)}\n`,
  );
}

const a = freshInvoice();
await sw('stamped', a.xml, a.stampKey, { outcome: 'stamped' });
await sw('307', a.xml, a.stampKey, { outcome: 'already_stamped', code: '307' });
await sw('CFDI3307', freshInvoice().xml, a.stampKey, { outcome: 'already_stamped', code: 'CFDI3307' });
await sw('302', freshInvoice().xml.replace('Colegiatura', 'Colegiaturas'), 'k302', {
  outcome: 'permanent',
  code: '302',
});
await sw('401', freshInvoice({ issuedAt: new Date(Date.now() - 80 * 3600_000).toISOString() }).xml, 'k401', {
  outcome: 'permanent',
  code: '401',
});
await sw('301', '<?xml version="1.0"?><nota/>', 'k301', { outcome: 'permanent', code: '301' });
await sw('AU4101', freshInvoice().xml, 'kau', { outcome: 'transient', code: 'AU4101' }, 'expired-token');
await run.admin('faults', { rejectRfcs: ['EKU9003173C9'] });
await sw('402', freshInvoice().xml, 'k402', { outcome: 'permanent', code: '402' });
await run.admin('faults', { reset: true, errorRate: 1, errorStatus: 503 });
await sw('503', freshInvoice().xml, 'k503', { outcome: 'transient', code: 'HTTP503' });
await run.admin('faults', { reset: true, errorRate: 1, errorStatus: 429 });
await sw('429', freshInvoice().xml, 'k429', { outcome: 'transient', code: 'HTTP429' });
await run.admin('faults', { reset: true });

const b = freshInvoice();
await finkok('stamped', 'stamp', b.xml, { outcome: 'stamped' });
await finkok('307-without-xml', 'stamp', b.xml, { outcome: 'already_stamped', code: '307' });
await finkok('stamped-op', 'stamped', b.xml, { outcome: 'stamped' });
await finkok('603', 'stamped', freshInvoice().xml, { outcome: 'not_found', code: '603' });
await finkok('302', 'stamp', freshInvoice().xml.replace('Colegiatura', 'Colegiaturas'), {
  outcome: 'permanent',
  code: '302',
});
await finkok('300', 'stamp', freshInvoice().xml, { outcome: 'transient', code: '300' }, 'wrong');
await run.admin('faults', { reset: true, errorRate: 1 }, 'backup');
await finkok('503', 'stamp', freshInvoice().xml, { outcome: 'transient', code: 'HTTP503' });

await run.stop();
process.stdout.write(`fixtures written to ${out}\n`);
