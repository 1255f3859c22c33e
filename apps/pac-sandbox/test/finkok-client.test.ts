import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { parseStampedCfdi, verifyTfd } from '@timbra/cfdi-core';
import { FinkokClient } from '@timbra/cfdi-node';
import {
  finkokClient,
  freshInvoice,
  pacCsd,
  startSandbox,
  type Ledger,
  type RunningSandbox,
  pacFailure,
} from './helpers.ts';

let run: RunningSandbox;
let client: FinkokClient;

beforeAll(async () => {
  run = await startSandbox();
  client = finkokClient(run, 'backup', { recoverDelayMs: 50 });
});
afterAll(() => run.stop());
beforeEach(() => run.admin('faults', { reset: true }, 'backup'));

describe('Finkok client against the sandbox', () => {
  it('stamps over SOAP; the TFD verifies and the Sello is the frozen one', async () => {
    const frozen = freshInvoice();
    const result = await client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
    expect(result).toMatchObject({ pac: 'backup', recovered: false, sameDocument: true });
    const stamped = parseStampedCfdi(result.stampedXml);
    expect(stamped.sello).toBe(frozen.sello);
    expect(verifyTfd(stamped.tfdElement, pacCsd.certificate.publicKey)).toBe(true);
  });

  it('recovers with `stamped` when 307 comes without the previous XML', async () => {
    const frozen = freshInvoice();
    const first = await client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
    const again = await client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
    expect(again).toMatchObject({ uuid: first.uuid, recovered: true, recoveryCode: '307' });
    const ledger = (await run.admin('ledger', undefined, 'backup')) as Ledger;
    expect(ledger.stamps.filter((s) => s.uuid === first.uuid)).toHaveLength(1);
  });

  it('takes the previous XML from a 307 that carries it', async () => {
    await run.admin('faults', { finkok307WithXml: true }, 'backup');
    const frozen = freshInvoice();
    const first = await client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
    await expect(client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey })).resolves.toMatchObject({
      uuid: first.uuid,
      recovered: true,
    });
  });

  it('`stamped` (recover) says 603 / not found for a document never stamped', async () => {
    const error = await pacFailure(client.recover(freshInvoice().xml, { idempotencyKey: 'x' }));
    expect(error).toMatchObject({ code: 'PAC_NOT_FOUND', pacCode: '603' });
  });

  it('maps a document that already has a TFD (707) and a bad sello (302) to permanent', async () => {
    const frozen = freshInvoice();
    const stamped = await client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
    const other = freshInvoice();
    const withTfd = other.xml.replace(
      '</cfdi:Comprobante>',
      `<cfdi:Complemento>${stamped.tfdXml}</cfdi:Complemento></cfdi:Comprobante>`,
    );
    expect(await pacFailure(client.stamp(withTfd, { idempotencyKey: 'tfd' }))).toMatchObject({
      outcome: 'permanent',
      pacCode: '707',
    });
    const tampered = freshInvoice().xml.replace('Colegiatura', 'Colegiaturas');
    expect(await pacFailure(client.stamp(tampered, { idempotencyKey: 'bad' }))).toMatchObject({
      outcome: 'permanent',
      pacCode: '302',
    });
  });

  it('maps wrong credentials to transient (not processed: another PAC may stamp)', async () => {
    const wrong = new FinkokClient({
      name: 'backup',
      baseUrl: run.url('backup'),
      username: 'nobody',
      password: 'nope',
      satStatusUrl: 'http://127.0.0.1:9/',
    });
    expect(await pacFailure(wrong.stamp(freshInvoice().xml, { idempotencyKey: 'c' }))).toMatchObject({
      outcome: 'transient',
      pacCode: '300',
    });
  });

  it('maps an injected 503 to transient and stamp-then-drop to ambiguous, then the same UUID', async () => {
    await run.admin('faults', { errorRate: 1 }, 'backup');
    expect((await pacFailure(client.stamp(freshInvoice().xml, { idempotencyKey: 'e' }))).outcome).toBe('transient');
    const frozen = freshInvoice();
    await run.admin('faults', { reset: true, dropRate: 1 }, 'backup');
    expect((await pacFailure(client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey }))).outcome).toBe('ambiguous');
    await run.admin('faults', { reset: true }, 'backup');
    const recovered = await client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
    expect(recovered.recovered).toBe(true);
    const ledger = (await run.admin('ledger', undefined, 'backup')) as Ledger;
    expect(ledger.stamps.filter((s) => s.uuid === recovered.uuid)).toHaveLength(1);
  });
});
