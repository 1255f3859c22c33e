/** @clock token expiry, and the PAC's 72-hour window for Fecha */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { parseStampedCfdi, verifyTfd, type StampResult } from '@timbra/cfdi-core';
import { type SwClient, type SwClientConfig } from '@timbra/cfdi-node';
import { prepareSatXslt, satXslt, TFD_XSLT } from '@timbra/test-support';
import {
  freshInvoice,
  pacCsd,
  startSandbox,
  swClient as sandboxSwClient,
  type Ledger,
  type RunningSandbox,
  pacFailure,
} from './helpers.ts';

let run: RunningSandbox;
let client: SwClient;

const swClient = (overrides: Partial<SwClientConfig> = {}): SwClient => sandboxSwClient(run, 'primary', overrides);

beforeAll(async () => {
  prepareSatXslt(TFD_XSLT); // before the sandbox: compiling blocks the first time
  run = await startSandbox();
  client = swClient();
});
afterAll(() => run.stop());
beforeEach(() => run.admin('faults', { reset: true }));

describe('SW client against the sandbox', () => {
  it('stamps: UUID, a TFD whose SelloSAT verifies, the frozen bytes with the TFD inserted', async () => {
    const frozen = freshInvoice();
    const result = await client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
    expect(result).toMatchObject({ pac: 'primary', recovered: false, sameDocument: true });
    expect(result.uuid).toMatch(/^[0-9A-F-]{36}$/);
    const stamped = parseStampedCfdi(result.stampedXml);
    expect(stamped.sello).toBe(frozen.sello);
    expect(stamped.cadenaOriginal).toBe(frozen.cadenaOriginal);
    expect(stamped.tfd.uuid).toBe(result.uuid);
    expect(stamped.tfd.selloCFD).toBe(frozen.sello);
    expect(verifyTfd(stamped.tfdElement, pacCsd.certificate.publicKey)).toBe(true);
    // Everything but the inserted Complemento is the frozen document, byte for byte.
    expect(result.stampedXml.replace(/<cfdi:Complemento>.*<\/cfdi:Complemento>/, '')).toBe(frozen.xml);
  });

  it("computes the TFD cadena as the SAT's TFD XSLT does", async () => {
    const frozen = freshInvoice();
    const result = await client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
    const expected = satXslt(TFD_XSLT, [`<?xml version="1.0" encoding="UTF-8"?>${result.tfdXml}`]);
    expect(parseStampedCfdi(result.stampedXml).tfdCadenaOriginal).toBe(expected);
  });

  it('answers a resend with the same UUID (307), with the same or another customid', async () => {
    const frozen = freshInvoice();
    const first = await client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
    const again = await client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
    const otherKey = await client.stamp(frozen.xml, { idempotencyKey: 'another-key' });
    for (const r of [again, otherKey])
      expect(r).toMatchObject({ uuid: first.uuid, recovered: true, recoveryCode: '307', sameDocument: true });
    expect(again.stampedXml).toBe(first.stampedXml);
    const ledger = (await run.admin('ledger', undefined)) as Ledger;
    expect(ledger.stamps.filter((s) => s.uuid === first.uuid)).toHaveLength(1);
  });

  it('stamps a document once when its copies arrive concurrently (dedupe holds while signing)', async () => {
    const frozen = freshInvoice();
    const results = await Promise.all(
      Array.from({ length: 8 }, () => client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey })),
    );
    expect(new Set(results.map((r) => r.uuid)).size).toBe(1);
    expect(results.filter((r) => !r.recovered)).toHaveLength(1);
    const ledger = (await run.admin('ledger', undefined)) as Ledger;
    expect(ledger.stamps.filter((s) => s.customid === frozen.stampKey)).toHaveLength(1);
  });

  it('recovers the original when a customid is reused with another document (CFDI3307)', async () => {
    const original = freshInvoice();
    const stamped = await client.stamp(original.xml, { idempotencyKey: 'reused-key-1' });
    const other = freshInvoice();
    const result: StampResult = await client.stamp(other.xml, { idempotencyKey: 'reused-key-1' });
    expect(result).toMatchObject({
      uuid: stamped.uuid,
      recovered: true,
      recoveryCode: 'CFDI3307',
      sameDocument: false,
    });
    expect(parseStampedCfdi(result.stampedXml).sello).toBe(original.sello);
  });

  it('looks a stamp up by UUID', async () => {
    const frozen = freshInvoice();
    const stamped = await client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
    const found = await client.recover(frozen.xml, { idempotencyKey: frozen.stampKey, uuid: stamped.uuid });
    expect(found).toMatchObject({ uuid: stamped.uuid, recovered: true, sameDocument: true });
    const missing = await pacFailure(
      client.recover(frozen.xml, { idempotencyKey: frozen.stampKey, uuid: '00000000-0000-4000-8000-000000000000' }),
    );
    expect(missing.code).toBe('PAC_NOT_FOUND');
  });

  it('renews the token before it expires, and once when the PAC says it expired', async () => {
    let now = Date.now();
    const clocked = swClient({ now: () => now, renewBeforeMs: 60_000 });
    const counts = async () => ((await run.admin('ledger', undefined)) as Ledger).counts.primary!.authentications ?? 0;
    const before = await counts();
    await clocked.stamp(freshInvoice().xml, { idempotencyKey: 'tok-1' });
    await clocked.stamp(freshInvoice().xml, { idempotencyKey: 'tok-2' });
    expect((await counts()) - before).toBe(1);
    now += 7_200_000 - 30_000; // inside the renewal margin
    await clocked.stamp(freshInvoice().xml, { idempotencyKey: 'tok-3' });
    expect((await counts()) - before).toBe(2);
    // The PAC forgets the token (restart, revocation): one 401, one re-authentication, success.
    run.sandbox.instances.get('primary')!.tokens.clear();
    await clocked.stamp(freshInvoice().xml, { idempotencyKey: 'tok-4' });
    expect((await counts()) - before).toBe(3);
  });

  it.each([
    ['a tampered document (302)', () => freshInvoice().xml.replace('Colegiatura', 'Colegiaturas'), '302'],
    [
      'a document older than 72 hours (401)',
      () => freshInvoice({ issuedAt: new Date(Date.now() - 73 * 3600_000).toISOString() }).xml,
      '401',
    ],
    ['something that is not a CFDI (301)', () => '<?xml version="1.0"?><x/>', '301'],
  ])('maps %s to permanent', async (_name, xml, code) => {
    const error = await pacFailure(client.stamp(xml(), { idempotencyKey: `perm-${code}` }));
    expect(error).toMatchObject({ outcome: 'permanent', pacCode: code });
  });

  it('maps an emisor the SAT does not list (402) to permanent', async () => {
    await run.admin('faults', { rejectRfcs: ['EKU9003173C9'] });
    const error = await pacFailure(client.stamp(freshInvoice().xml, { idempotencyKey: 'lco' }));
    expect(error).toMatchObject({ outcome: 'permanent', pacCode: '402' });
  });

  it.each([503, 429])('maps an injected %i before processing to transient, and nothing is stamped', async (status) => {
    await run.admin('faults', { errorRate: 1, errorStatus: status });
    const before = ((await run.admin('ledger', undefined)) as Ledger).stamps.length;
    const error = await pacFailure(client.stamp(freshInvoice().xml, { idempotencyKey: `inj-${status}` }));
    expect(error).toMatchObject({ outcome: 'transient', pacCode: `HTTP${status}` });
    expect(((await run.admin('ledger', undefined)) as Ledger).stamps.length).toBe(before);
  });

  it.each(['destroy', 'delay'])(
    'maps stamp-then-drop (%s) to ambiguous; a resend returns the same UUID',
    async (dropMode) => {
      const frozen = freshInvoice();
      await run.admin('faults', { dropRate: 1, dropMode, dropDelayMs: 5_000 });
      const error = await pacFailure(client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey }));
      expect(error.outcome).toBe('ambiguous');
      await run.admin('faults', { reset: true });
      const result = await client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
      expect(result).toMatchObject({ recovered: true, recoveryCode: '307' });
      const ledger = (await run.admin('ledger', undefined)) as Ledger;
      const mine = ledger.stamps.filter((s) => s.customid === frozen.stampKey);
      expect(mine).toHaveLength(1);
      expect(mine[0]!.uuid).toBe(result.uuid);
    },
  );

  it('maps an outage (port closed) to transient, and stamps again when it ends', async () => {
    await run.admin('faults', { outageUntil: Date.now() + 800 }, 'primary');
    const error = await pacFailure(client.stamp(freshInvoice().xml, { idempotencyKey: 'outage-1' }));
    // A new connection is refused; a pooled keep-alive socket is reset before the request is written.
    expect(error.outcome).toBe('transient');
    expect(['ECONNREFUSED', 'ECONNRESET']).toContain(error.pacCode);
    await new Promise((r) => setTimeout(r, 1_200));
    await expect(client.stamp(freshInvoice().xml, { idempotencyKey: 'outage-2' })).resolves.toMatchObject({
      recovered: false,
    });
  });

  it('never puts the credentials in an error', async () => {
    const wrong = swClient({ password: 'Sup3r-S3cret-PAC-Pass' });
    const error = await pacFailure(wrong.stamp(freshInvoice().xml, { idempotencyKey: 'creds' }));
    expect(error.outcome).toBe('transient');
    const text = `${error.message} ${String(error.cause)} ${JSON.stringify(error)} ${(error.cause as Error | undefined)?.stack ?? ''}`;
    expect(text).not.toContain('Sup3r-S3cret-PAC-Pass');
  });
});
