import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createPrisma, type PrismaClient } from '../src/index.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing.ts';

let db: TestDatabase;
let prisma: PrismaClient;
beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 2 });
});
afterAll(async () => {
  await prisma.$disconnect();
  await db.drop();
});

describe('the migrated database matches the Prisma schema', () => {
  // Writing and reading every column of every model through the generated client fails when a
  // migration and schema.prisma disagree on a table, a column or a type.
  it('round-trips every model and column through the client', async () => {
    const emisor = await prisma.emisor.create({
      data: { rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', regimenFiscal: '601', lugarExpedicion: '42501' },
    });
    const serie = await prisma.serie.create({ data: { organizationId: emisor.id, serie: 'A', kind: 'I' } });
    const csd = await prisma.csd.create({
      data: {
        organizationId: emisor.id,
        noCertificado: '30001000000500003416',
        rfc: 'EKU9003173C9',
        validFrom: new Date('2023-05-18T11:43:51Z'),
        validTo: new Date('2027-05-18T11:43:51Z'),
        certificate: Buffer.from([0x30, 0x82]),
        sealed: { v: 1 },
        chain: 'unchecked',
      },
    });
    expect(csd.activeFrom.getTime()).toBe(csd.uploadedAt.getTime());
    expect(serie.nextFolio).toBe(1);
    await prisma.webhookEvent.create({
      data: {
        provider: 'stripe',
        eventId: 'evt_1',
        type: 'payment_intent.succeeded',
        result: 'accepted',
        payload: { a: 1 },
      },
    });
    const client = await prisma.apiClient.create({
      data: { name: 'pos', keyHash: 'h'.repeat(64), scopes: ['read', 'admin'] },
    });
    const payment = await prisma.payment.create({
      data: {
        provider: 'api',
        externalId: 'p1',
        amount: '1160.00',
        currency: 'MXN',
        occurredAt: new Date(),
        receptor: { rfc: 'X' },
        description: 'd',
        clientId: client.id,
      },
    });
    expect(payment.amount.toString()).toBe('1160');
    await prisma.refund.create({
      data: { paymentId: payment.id, provider: 'api', externalId: 'r1', amount: '10.00', occurredAt: new Date() },
    });
    const invoice = await prisma.invoice.create({
      data: {
        organizationId: emisor.id,
        paymentId: payment.id,
        kind: 'I',
        serie: 'A',
        folio: 1,
        fecha: '2026-11-30T10:00:00',
        moneda: 'MXN',
        subTotal: '1000.00',
        total: '1160.00',
        status: 'pending',
        problems: [],
        stampKey: 'I-abc',
        frozenXml: '<x/>',
        cadenaOriginal: '||',
        uuid: null,
        tfdXml: null,
        stampedXml: null,
        pac: null,
        stampedAt: null,
        relatedInvoiceId: null,
      },
    });
    await prisma.outboxRow.create({
      data: { kind: 'stamp', invoiceId: invoice.id, stampKey: 'I-abc', lastError: null, enqueuedAt: null },
    });
    await prisma.pacAttempt.create({
      data: { invoiceId: invoice.id, pac: 'primary', outcome: 'stamped', uuid: 'U', code: null, durationMs: 12 },
    });
    await prisma.idempotencyKey.create({
      data: {
        clientId: client.id,
        key: 'k',
        fingerprint: 'f',
        responseStatus: 201,
        responseBody: { id: 1 },
        expiresAt: new Date(),
      },
    });
    expect(await prisma.outboxRow.count({ where: { status: 'pending' } })).toBe(1);
  });

  it('keeps the frozen XML and the stamp key immutable and never deletes an invoice', async () => {
    const invoice = await prisma.invoice.findFirstOrThrow();
    await expect(prisma.invoice.update({ where: { id: invoice.id }, data: { frozenXml: '<y/>' } })).rejects.toThrow(
      /frozen XML/,
    );
    await expect(prisma.invoice.update({ where: { id: invoice.id }, data: { stampKey: 'I-other' } })).rejects.toThrow(
      /stamp key/,
    );
    // Through SQL, so the trigger (not a foreign key) is what refuses.
    await expect(prisma.$executeRaw`DELETE FROM invoices WHERE id = ${invoice.id}::uuid`).rejects.toThrow(
      /never deleted/,
    );
    await expect(
      prisma.invoice.update({ where: { id: invoice.id }, data: { status: 'stamped', uuid: 'A-B' } }),
    ).resolves.toMatchObject({ status: 'stamped' });
  });

  it('rejects what the constraints forbid: unknown statuses, duplicate stamp keys and folios, non-positive amounts', async () => {
    const invoice = await prisma.invoice.findFirstOrThrow();
    await expect(
      prisma.$executeRaw`UPDATE invoices SET status = 'lost' WHERE id = ${invoice.id}::uuid`,
    ).rejects.toThrow(/invalid input value for enum invoice_status/);
    const { id: _id, createdAt: _c, updatedAt: _u, request: _r, metadata: _m, ...copy } = invoice;
    await expect(
      prisma.invoice.create({
        data: { ...copy, status: 'pending', problems: copy.problems ?? [], uuid: null, folio: 2 },
      }),
    ).rejects.toThrow(/stamp_key/);
    await expect(
      prisma.invoice.create({
        data: { ...copy, status: 'pending', problems: copy.problems ?? [], uuid: null, stampKey: 'I-new' },
      }),
    ).rejects.toThrow(/folio/);
    await expect(
      prisma.payment.create({
        data: { provider: 'api', externalId: 'neg', amount: '-1.00', currency: 'MXN', occurredAt: new Date() },
      }),
    ).rejects.toThrow();
  });

  it('refuses NaN money in every table, whatever writes it (NaN passes `amount > 0`)', async () => {
    const payment = await prisma.payment.findFirstOrThrow();
    const invoice = await prisma.invoice.findFirstOrThrow();
    await expect(
      prisma.$executeRaw`INSERT INTO payments (id, provider, external_id, amount, currency, occurred_at)
                         VALUES (gen_random_uuid(), 'api', 'nan', 'NaN', 'MXN', now())`,
    ).rejects.toThrow(/payments_amount_finite/);
    await expect(
      prisma.$executeRaw`INSERT INTO refunds (id, payment_id, provider, external_id, amount, occurred_at)
                         VALUES (gen_random_uuid(), ${payment.id}::uuid, 'api', 'nan', 'NaN', now())`,
    ).rejects.toThrow(/refunds_amount_finite/);
    await expect(
      prisma.$executeRaw`INSERT INTO installments (id, invoice_id, provider, external_id, amount, paid_at, forma_pago, num_parcialidad)
                         VALUES (gen_random_uuid(), ${invoice.id}::uuid, 'api', 'nan', 'NaN', now(), '03', 9)`,
    ).rejects.toThrow(/installments_amount_finite/);
    await expect(prisma.$executeRaw`UPDATE invoices SET total = 'NaN' WHERE id = ${invoice.id}::uuid`).rejects.toThrow(
      /invoices_totals_finite/,
    );
  });

  it("refuses amounts above the grammar's maximum, and refunds that add up to more than the payment", async () => {
    await expect(
      prisma.$executeRaw`INSERT INTO payments (id, provider, external_id, amount, currency, occurred_at)
                         VALUES (gen_random_uuid(), 'api', 'huge', 1000000000000, 'MXN', now())`,
    ).rejects.toThrow(/payments_amount_max/);
    const payment = await prisma.payment.create({
      data: { provider: 'api', externalId: 'refunded', amount: '100.00', currency: 'MXN', occurredAt: new Date() },
    });
    const refund = (externalId: string, amount: string) =>
      prisma.refund.create({
        data: { paymentId: payment.id, provider: 'api', externalId, amount, occurredAt: new Date() },
      });
    const first = await refund('cap-1', '60.00');
    await expect(refund('cap-2', '40.01')).rejects.toThrow(/refunds_within_payment/);
    // A reversed refund no longer counts: its money is the payment's again.
    await prisma.refund.update({ where: { id: first.id }, data: { status: 'reversed', reversedAt: new Date() } });
    await refund('cap-3', '100.00');
    await expect(
      prisma.refund.update({ where: { id: first.id }, data: { status: 'succeeded', reversedAt: null } }),
    ).rejects.toThrow(/refunds_within_payment/);
  });

  it('stores a failed webhook event only with its reason', async () => {
    const event = { provider: 'stripe', type: 't', payload: {} };
    await expect(
      prisma.webhookEvent.create({ data: { ...event, eventId: 'evt_failed_1', result: 'failed' } }),
    ).rejects.toThrow(/webhook_events_reason_check/);
    await expect(prisma.webhookEvent.create({ data: { ...event, eventId: 'evt_odd', result: 'odd' } })).rejects.toThrow(
      /webhook_events_result_check/,
    );
    await prisma.webhookEvent.create({
      data: { ...event, eventId: 'evt_failed_2', result: 'failed', reason: 'invalid_amount: must be greater than 0' },
    });
  });
});

describe('invoice versions (DESIGN.md invariant 3)', () => {
  it('lets the frozen XML change only to a new, kept version of a document not stamped; versions are never rewritten', async () => {
    const emisor = await prisma.emisor.findFirstOrThrow();
    const invoice = await prisma.invoice.create({
      data: {
        organizationId: emisor.id,
        kind: 'I',
        serie: 'V',
        folio: 1,
        moneda: 'MXN',
        subTotal: '100.00',
        total: '116.00',
        status: 'pending',
        stampKey: 'I-versions',
        frozenXml: '<v1/>',
        cadenaOriginal: '||1||',
        fecha: '2026-11-30T10:00:00',
      },
    });
    const keep = (version: number, frozenXml: string) =>
      prisma.invoiceVersion.create({
        data: {
          invoiceId: invoice.id,
          version,
          frozenXml,
          cadenaOriginal: `||${version}||`,
          fecha: '2026-11-30T10:00:00',
          stampKey: 'I-versions',
          reason: 'test',
          createdBy: 'test',
        },
      });
    // Without both versions kept, or without a version step, the bytes stay.
    await keep(2, '<v2/>');
    await expect(
      prisma.invoice.update({ where: { id: invoice.id }, data: { frozenXml: '<v2/>', version: 2 } }),
    ).rejects.toThrow(/frozen XML/);
    const v1 = await keep(1, '<v1/>');
    await expect(prisma.invoice.update({ where: { id: invoice.id }, data: { frozenXml: '<v2/>' } })).rejects.toThrow(
      /frozen XML/,
    );
    await expect(prisma.invoice.update({ where: { id: invoice.id }, data: { version: 2 } })).rejects.toThrow(/version/);
    await prisma.invoice.update({ where: { id: invoice.id }, data: { frozenXml: '<v2/>', version: 2 } });
    // Once stamped, never again — even with a version kept for it.
    await prisma.invoice.update({ where: { id: invoice.id }, data: { status: 'stamped', uuid: 'V-UUID' } });
    await keep(3, '<v3/>');
    await expect(
      prisma.invoice.update({ where: { id: invoice.id }, data: { frozenXml: '<v3/>', version: 3 } }),
    ).rejects.toThrow(/frozen XML/);
    // A kept version is never rewritten or deleted; it is marked superseded once.
    await expect(prisma.invoiceVersion.update({ where: { id: v1.id }, data: { frozenXml: '<x/>' } })).rejects.toThrow(
      /cannot change/,
    );
    await prisma.invoiceVersion.update({ where: { id: v1.id }, data: { supersededAt: new Date() } });
    await expect(
      prisma.invoiceVersion.update({ where: { id: v1.id }, data: { supersededAt: new Date(0) } }),
    ).rejects.toThrow(/cannot change/);
    await expect(prisma.$executeRaw`DELETE FROM invoice_versions WHERE id = ${v1.id}::uuid`).rejects.toThrow(
      /never deleted/,
    );
  });
});
