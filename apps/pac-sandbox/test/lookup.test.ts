import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { PacErrorCode } from '@timbra/cfdi-core';
import { finkokClient, freshInvoice, pacFailure, startSandbox, swClient, type RunningSandbox } from './helpers.ts';

// `lookup` is the proof a correction needs before it replaces a version: each PAC says whether it
// ever stamped the document (SW: anything under the customid), without stamping it.
let run: RunningSandbox;
beforeAll(async () => {
  run = await startSandbox();
});
afterAll(() => run.stop());
beforeEach(async () => {
  await run.admin('faults', { reset: true });
  await run.admin('faults', { reset: true }, 'backup');
});

describe('lookup: did this PAC stamp it?', () => {
  it('SW: not under this customid, then the stamp it issued, and by customid for a re-frozen document', async () => {
    const sw = swClient(run);
    const first = freshInvoice({ sourceId: `lookup-${Date.now()}` });
    await expect(sw.lookup(first.xml, { idempotencyKey: first.stampKey })).resolves.toBeUndefined();
    const stamped = await sw.stamp(first.xml, { idempotencyKey: first.stampKey });
    const found = await sw.lookup(first.xml, { idempotencyKey: first.stampKey });
    expect(found).toMatchObject({ uuid: stamped.uuid, sameDocument: true, recovered: true });
    // Another version of the same invoice (same key, other bytes): SW reports the stamp of the first.
    const second = freshInvoice({
      sourceId: first.request.sourceId,
      issuedAt: new Date(Date.now() - 1000).toISOString(),
    });
    expect(second.stampKey).toBe(first.stampKey);
    const other = await sw.lookup(second.xml, { idempotencyKey: second.stampKey });
    expect(other).toMatchObject({ uuid: stamped.uuid, sameDocument: false });
    // The ledger did not grow: a lookup never stamps.
    const ledger = (await run.admin('ledger')) as { stamps: { customid?: string }[] };
    expect(ledger.stamps.filter((s) => s.customid === first.stampKey)).toHaveLength(1);
  });

  it('Finkok: by the document itself', async () => {
    const fk = finkokClient(run);
    const doc = freshInvoice({ sourceId: `lookup-fk-${Date.now()}` });
    await expect(fk.lookup(doc.xml, { idempotencyKey: doc.stampKey })).resolves.toBeUndefined();
    const stamped = await fk.stamp(doc.xml, { idempotencyKey: doc.stampKey });
    await expect(fk.lookup(doc.xml, { idempotencyKey: doc.stampKey })).resolves.toMatchObject({
      uuid: stamped.uuid,
      sameDocument: true,
    });
  });

  it('a PAC that cannot answer throws: no answer is never read as "not stamped"', async () => {
    await run.admin('faults', { errorRate: 1, errorStatus: 503 });
    const doc = freshInvoice({ sourceId: `lookup-down-${Date.now()}` });
    const failure = await pacFailure(swClient(run).lookup(doc.xml, { idempotencyKey: doc.stampKey }));
    expect(failure.outcome).toBe('transient');
    expect(failure.code).not.toBe(PacErrorCode.NotFound);
  });
});
