/** @clock deliveries' available_at and retry window are the database's clock; signatures the application's */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import Stripe from 'stripe';
import { verifyWebhook, WebhookSignatureError } from '@timbra/client';
import { createPrisma, type PrismaClient } from '@timbra/db';
import {
  claimDueDeliveries,
  LOOPBACK_RANGES,
  newEndpointSecret,
  replayDelivery,
  resendInvoiceEmail,
  rotateEndpointSecret,
  sendTestEvent,
  setEndpointStatus,
} from '@timbra/db/deliveries';
import { backlogOf } from '@timbra/db/organizations';
import { createTestDatabase, databaseNow, type TestDatabase } from '@timbra/db/testing';
import { startMailbox, type Mailbox } from '@timbra/test-support';
import { dejavuFonts } from '@timbra/cfdi-node';
import { stampedXmlOf } from '@timbra/cfdi-core';
import { createEmailSender } from '../src/deliveries/email.ts';
import { Dispatcher, type DispatcherDeps } from '../src/deliveries/dispatcher.ts';
import { createWorkerMetrics } from '../src/operations/metrics.ts';
import { PacChain } from '../src/stamping/pac-chain.ts';
import {
  eventually,
  pendingInvoice,
  redisFor,
  startSandboxProcess,
  testEmisor,
  testWorker,
  type SandboxProcess,
} from './helpers.ts';

let db: TestDatabase;
let prisma: PrismaClient;
/** The organization's backlog as the worker's gauges read it. */
const ownBacklog = async () => (await backlogOf(prisma, { windowMs: 0, marginMs: 0 }))!;
let sandbox: SandboxProcess;
let mailbox: Mailbox;
let receiver: Receiver;
const redis = redisFor();
const closers: (() => Promise<void> | void)[] = [];

/** The merchant's side: a local HTTP server that records every request and answers as told. */
interface Receiver {
  url: string;
  requests: { body: string; headers: IncomingHttpHeaders; status: number }[];
  /** Status codes for the next requests, in order (then 200); `hang` never answers. */
  answers: (number | 'hang')[];
  server: Server;
}

async function startReceiver(): Promise<Receiver> {
  const r: Receiver = { url: '', requests: [], answers: [], server: undefined as unknown as Server };
  r.server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = r.answers.shift() ?? 200;
      r.requests.push({
        body: Buffer.concat(chunks).toString('utf8'),
        headers: req.headers,
        status: answer === 'hang' ? 0 : answer,
      });
      if (answer === 'hang') return;
      res.statusCode = answer;
      res.end(answer < 300 ? 'ok' : 'no');
    });
  });
  await new Promise<void>((resolve) => r.server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(r.server.address() as AddressInfo).port}/hooks`;
  return r;
}

beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 6 });
  await testEmisor(prisma);
  sandbox = await startSandboxProcess();
  mailbox = await startMailbox();
  receiver = await startReceiver();
});
afterEach(async () => {
  while (closers.length) await closers.pop()!();
  mailbox.faults.length = 0;
  mailbox.perRecipient.clear();
  receiver.answers.length = 0;
  // Each test registers its own endpoints: the earlier ones are put away.
  await prisma.webhookEndpoint.updateMany({ data: { status: 'disabled', disabledReason: 'test over' } });
  await prisma.delivery.updateMany({ where: { status: { in: ['pending', 'sending'] } }, data: { status: 'dead' } });
});
afterAll(async () => {
  await mailbox.close();
  receiver.server.closeAllConnections();
  await new Promise((r) => receiver.server.close(r));
  await sandbox.stop();
  await prisma.$disconnect();
  await redis.quit();
  await db.drop();
});

const quick = { baseMs: 40, maxMs: 200, forMs: 60_000 };

function dispatcherDeps(): DispatcherDeps {
  const email = createEmailSender(prisma, {
    smtpUrl: mailbox.url,
    from: 'Escuela Kemper <facturas@kemper.test>',
    timeoutMs: 5_000,
    pdf: { fonts: dejavuFonts() },
  });
  closers.push(() => email.close());
  return {
    prisma,
    logger: pino({ level: 'silent' }),
    email,
    webhook: {
      timeoutMs: 1_000,
      retry: quick,
      disable: { afterMs: 3_600_000, minFailures: 1000 },
      allowedAddresses: LOOPBACK_RANGES,
    },
    emailRetry: quick,
    concurrency: 20,
    leaseMs: 60_000,
  };
}

function dispatcher(overrides: Partial<DispatcherDeps> = {}) {
  return new Dispatcher({ ...dispatcherDeps(), ...overrides });
}

/** Drains `d` until `done` holds (retries come due on their own time). */
async function deliverUntil(d: Dispatcher, done: () => Promise<boolean> | boolean, ms = 15_000) {
  await eventually(async () => {
    await d.drainAll();
    return done();
  }, ms);
}

async function endpoint(events: string[] = ['*']) {
  const secret = newEndpointSecret();
  return prisma.webhookEndpoint.create({ data: { url: receiver.url, events, secret } });
}

/** A payment with the customer's address, and its Ingreso stamped by the real worker against the sandbox. */
async function stampedSale(tag: string, email: string | null = `cliente-${tag}@example.com`) {
  const payment = await prisma.payment.create({
    data: {
      provider: 'api:test',
      externalId: `${tag}-${randomUUID()}`,
      amount: '1160.00',
      currency: 'MXN',
      occurredAt: new Date(),
      email,
    },
  });
  const w = testWorker({ prisma, redis, sandbox });
  closers.push(w.close);
  const p = await pendingInvoice(prisma, tag, {}, { paymentId: payment.id });
  await w.relay.drainAll();
  await eventually(
    async () => (await prisma.invoice.findUniqueOrThrow({ where: { id: p.invoiceId } })).status === 'stamped',
  );
  return { payment, invoice: await prisma.invoice.findUniqueOrThrow({ where: { id: p.invoiceId } }) };
}

const stripe = new Stripe('sk_test_unused');

/** The receiver's check, written from docs/webhooks.md alone (not from the worker's code). */
function verifyAsDocumented(body: string, header: string, secret: string, toleranceSeconds = 300): boolean {
  const pairs = header.split(',').map((kv) => kv.split('=') as [string, string]);
  const t = Number(pairs.find(([k]) => k === 't')?.[1]);
  if (!Number.isInteger(t) || Math.abs(Date.now() / 1000 - t) > toleranceSeconds) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest();
  return pairs
    .filter(([k]) => k === 'v1')
    .some(([, v]) => {
      const given = Buffer.from(v, 'hex');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}

describe('events are written with the change they report', () => {
  it('a stamp writes payment.recorded and invoice.stamped, with one webhook per subscribed endpoint and one email', async () => {
    const all = await endpoint(['*']);
    const onlyCancel = await endpoint(['invoice.cancelled']);
    const { payment, invoice } = await stampedSale('events');
    const events = await prisma.event.findMany({
      where: { OR: [{ paymentId: payment.id }, { invoiceId: invoice.id }] },
      include: { deliveries: true },
      orderBy: { createdAt: 'asc' },
    });
    expect(events.map((e) => e.type)).toEqual(['payment.recorded', 'invoice.stamped']);
    const stamped = events[1]!;
    expect(stamped.data).toMatchObject({
      id: invoice.id,
      uuid: invoice.uuid,
      total: invoice.total.toFixed(2),
      status: 'stamped',
    });
    expect(stamped.deliveries.map((d) => [d.channel, d.endpointId ?? d.recipient]).sort()).toEqual(
      [
        ['email', payment.email],
        ['webhook', all.id],
      ].sort(),
    );
    expect(events[0]!.deliveries.map((d) => d.endpointId)).toEqual([all.id]);
    expect(await prisma.delivery.count({ where: { endpointId: onlyCancel.id } })).toBe(0);
  });

  it('an invoice that is never stamped gets no invoice.stamped and no email: a dead letter is invoice.failed', async () => {
    await endpoint(['*']);
    const payment = await prisma.payment.create({
      data: {
        provider: 'api:test',
        externalId: randomUUID(),
        amount: '10.00',
        currency: 'MXN',
        occurredAt: new Date(),
        email: 'x@example.com',
      },
    });
    const p = await pendingInvoice(prisma, 'never', {}, { paymentId: payment.id });
    // The dead-letter path's own write (stamping.ts), as the worker makes it.
    await prisma.invoice.update({ where: { id: p.invoiceId }, data: { status: 'stamp_failed' } });
    const types = (await prisma.event.findMany({ where: { invoiceId: p.invoiceId } })).map((e) => e.type);
    expect(types).toEqual(['invoice.failed']);
    expect(await prisma.delivery.count({ where: { event: { invoiceId: p.invoiceId }, channel: 'email' } })).toBe(0);
  });
});

/** An Egreso row as a dependent document is written (no frozen XML yet). */
const waitingData = (organizationId: string, paymentId: string) => ({
  organizationId,
  kind: 'E',
  serie: 'WX',
  folio: Math.floor(Math.random() * 1e9),
  moneda: 'MXN',
  subTotal: '1.00',
  total: '1.16',
  stampKey: randomUUID(),
  paymentId,
});

describe('every event type comes from its status move', () => {
  it('needs_data on insert or from waiting, cancellation_rejected back to stamped, cancelled, refund.recorded', async () => {
    const { payment, invoice } = await stampedSale('moves', null);
    const types = async () =>
      (await prisma.event.findMany({ where: { invoiceId: invoice.id }, orderBy: { createdAt: 'asc' } })).map(
        (e) => e.type,
      );
    // A cancellation the receptor rejected: back to stamped, which is not a second invoice.stamped.
    await prisma.invoice.update({ where: { id: invoice.id }, data: { status: 'cancel_requested' } });
    await prisma.invoice.update({ where: { id: invoice.id }, data: { status: 'stamped' } });
    await prisma.invoice.update({ where: { id: invoice.id }, data: { status: 'cancel_requested' } });
    await prisma.invoice.update({ where: { id: invoice.id }, data: { status: 'cancelled' } });
    expect(await types()).toEqual(['invoice.stamped', 'invoice.cancellation_rejected', 'invoice.cancelled']);
    const refund = await prisma.refund.create({
      data: {
        paymentId: payment.id,
        provider: 'api:test',
        externalId: randomUUID(),
        amount: '10.00',
        occurredAt: new Date(),
      },
    });
    expect(await prisma.event.findMany({ where: { refundId: refund.id } })).toEqual([
      expect.objectContaining({
        type: 'refund.recorded',
        paymentId: payment.id,
        data: expect.objectContaining({ amount: '10.00' }),
      }),
    ]);
    // An Egreso waiting for its Ingreso whose data then breaks a rule: needs_data, said once.
    const waiting = await prisma.invoice.create({
      data: { ...waitingData(invoice.organizationId, payment.id), status: 'waiting' },
    });
    expect(await prisma.event.count({ where: { invoiceId: waiting.id } })).toBe(0);
    await prisma.invoice.update({ where: { id: waiting.id }, data: { status: 'needs_data' } });
    expect((await prisma.event.findMany({ where: { invoiceId: waiting.id } })).map((e) => e.type)).toEqual([
      'invoice.needs_data',
    ]);
    // Written as needs_data (money in, the CFDI cannot be frozen as it is): said at once.
    const needing = await prisma.invoice.create({
      data: { ...waitingData(invoice.organizationId, payment.id), status: 'needs_data' },
    });
    expect((await prisma.event.findMany({ where: { invoiceId: needing.id } })).map((e) => e.type)).toEqual([
      'invoice.needs_data',
    ]);
  });
});

describe('email to the receptor', () => {
  it('sends the stamped XML and its PDF to the payment’s address, with a Message-ID of its own', async () => {
    const { payment, invoice } = await stampedSale('mail');
    const d = dispatcher();
    await deliverUntil(d, () => mailbox.received.some((m) => m.to.includes(payment.email!)));
    const mail = mailbox.received.find((m) => m.to.includes(payment.email!))!;
    const delivery = await prisma.delivery.findFirstOrThrow({
      where: { channel: 'email', event: { invoiceId: invoice.id } },
      include: { log: true },
    });
    expect(delivery.status).toBe('delivered');
    expect(mail.messageId).toBe(`<${delivery.id}@kemper.test>`);
    expect(mail.parsed.subject).toBe(`Factura W-${invoice.folio} de ESCUELA KEMPER URGATE`);
    expect(mail.parsed.text).toContain(invoice.uuid!);
    const names = mail.parsed.attachments.map((a) => a.filename);
    expect(names).toEqual([`W-${invoice.folio}-${invoice.uuid}.xml`, `W-${invoice.folio}-${invoice.uuid}.pdf`]);
    const [xml, pdf] = mail.parsed.attachments;
    expect(xml!.content.toString('utf8')).toBe(stampedXmlOf(invoice));
    // The PDF as the customer opens it: poppler reads the UUID and the total back from it.
    const dir = mkdtempSync(join(tmpdir(), 'timbra-mail-'));
    writeFileSync(join(dir, 'f.pdf'), pdf!.content);
    const text = execFileSync('pdftotext', ['-layout', join(dir, 'f.pdf'), '-'], { encoding: 'utf8' });
    expect(text).toContain(invoice.uuid!);
    expect(text).toMatch(/PESOS \d\d\/100 M\.N\./);
    expect(delivery.log).toEqual([expect.objectContaining({ attempt: 1, outcome: 'delivered', statusCode: 250 })]);
  });

  it('a dropped connection and a 451 are retried with the same Message-ID until the server takes it', async () => {
    const { payment } = await stampedSale('mail-retry');
    mailbox.faults.push('drop', { code: 451, message: 'try again later' });
    const d = dispatcher();
    await deliverUntil(d, () => mailbox.received.some((m) => m.to.includes(payment.email!)));
    const delivery = await prisma.delivery.findFirstOrThrow({
      where: { channel: 'email', recipient: payment.email },
      include: { log: { orderBy: { attempt: 'asc' } } },
    });
    const id = `<${delivery.id}@kemper.test>`;
    expect(mailbox.attempts.filter((a) => a.messageId === id).map((a) => a.outcome)).toEqual([
      'dropped',
      'refused',
      'accepted',
    ]);
    expect(delivery.log.map((l) => l.outcome)).toEqual(['failed', 'failed', 'delivered']);
    expect(delivery.log[1]).toMatchObject({ statusCode: 451 });
  });

  it('a cancellation emails the customer again: “Cancelación: …”, the PDF marked CANCELADO', async () => {
    const { payment, invoice } = await stampedSale('mail-cancel', 'cancelada@example.com');
    const d = dispatcher();
    await deliverUntil(d, () => mailbox.received.some((m) => m.to.includes(payment.email!)));
    await prisma.invoice.update({ where: { id: invoice.id }, data: { status: 'cancel_requested' } });
    await prisma.invoice.update({ where: { id: invoice.id }, data: { status: 'cancelled' } });
    await deliverUntil(d, () => mailbox.received.filter((m) => m.to.includes(payment.email!)).length === 2);
    const mail = mailbox.received.filter((m) => m.to.includes(payment.email!))[1]!;
    expect(mail.parsed.subject).toBe(`Cancelación: Factura W-${invoice.folio} de ESCUELA KEMPER URGATE`);
    const dir = mkdtempSync(join(tmpdir(), 'timbra-mail-'));
    writeFileSync(join(dir, 'c.pdf'), mail.parsed.attachments[1]!.content);
    expect(execFileSync('pdftotext', ['-raw', join(dir, 'c.pdf'), '-'], { encoding: 'utf8' })).toContain('CANCELADO');
  });

  it('a worker without SMTP gives an email back unattempted: it waits, counted, for a worker that can send it', async () => {
    const { payment } = await stampedSale('no-smtp', 'espera@example.com');
    const { email, ...withoutSmtp } = dispatcherDeps();
    expect(email).toBeDefined();
    const noSmtp = new Dispatcher(withoutSmtp);
    await noSmtp.drainAll();
    const waiting = await prisma.delivery.findFirstOrThrow({ where: { recipient: payment.email } });
    expect(waiting).toMatchObject({ status: 'pending', attempts: 0 });
    // A minute later by the database's clock (the one the claim compares with).
    expect(waiting.availableAt.getTime() - waiting.updatedAt.getTime()).toBe(60_000);
    expect((await ownBacklog()).email.pending).toBeGreaterThanOrEqual(1);
    expect(mailbox.received.some((m) => m.to.includes(payment.email!))).toBe(false);
  });

  it('a permanent refusal (550) is dead at once with the server’s reason, counted, and a resend goes out', async () => {
    const { payment, invoice } = await stampedSale('mail-bounce', 'nadie@example.com');
    mailbox.perRecipient.set('nadie@example.com', { code: 550, message: 'mailbox unavailable' });
    const d = dispatcher();
    await deliverUntil(
      d,
      async () =>
        (await prisma.delivery.findFirst({ where: { recipient: 'nadie@example.com', status: 'dead' } })) !== null,
    );
    const dead = await prisma.delivery.findFirstOrThrow({
      where: { recipient: 'nadie@example.com' },
      include: { log: true },
    });
    expect(dead.attempts).toBe(1);
    expect(dead.lastError).toContain('mailbox unavailable');
    expect(dead.log).toEqual([expect.objectContaining({ outcome: 'dead', statusCode: 550 })]);
    expect((await ownBacklog()).email.dead).toBeGreaterThanOrEqual(1);
    const metrics = createWorkerMetrics({ prisma, chain: new PacChain([], { threshold: 1, coolDownMs: 1 }) });
    expect(await metrics.registry.getSingleMetricAsString('timbra_deliveries_dead')).toMatch(/channel="email"} [1-9]/);
    // The customer gave another address: resent there, a new Message-ID, and the dead one no longer counts.
    const before = (await ownBacklog()).email.dead;
    const resent = await resendInvoiceEmail(prisma, invoice.id, { to: 'otra@example.com', by: 'test' });
    expect(resent).toMatchObject({ recipient: 'otra@example.com', eventType: 'invoice.stamped' });
    await deliverUntil(d, () => mailbox.received.some((m) => m.to.includes('otra@example.com')));
    expect(mailbox.received.find((m) => m.to.includes('otra@example.com'))!.messageId).not.toBe(
      `<${dead.id}@kemper.test>`,
    );
    expect((await ownBacklog()).email.dead).toBe(before - 1);
    expect(payment.email).toBe('nadie@example.com');
  });
});

describe('webhooks to the merchant', () => {
  it('signs each delivery as documented (checked by Stripe’s own verifier and by the docs’ recipe) and sends the event once delivered', async () => {
    const ep = await endpoint(['invoice.stamped']);
    const { invoice } = await stampedSale('hook', null);
    const d = dispatcher();
    await deliverUntil(d, () => receiver.requests.some((r) => r.body.includes(invoice.id)));
    const request = receiver.requests.find((r) => r.body.includes(invoice.id))!;
    const header = String(request.headers['timbra-signature']);
    expect(stripe.webhooks.signature!.verifyHeader(request.body, header, ep.secret, 300)).toBe(true);
    expect(verifyAsDocumented(request.body, header, ep.secret)).toBe(true);
    expect(verifyAsDocumented(request.body, header, newEndpointSecret())).toBe(false);
    expect(verifyAsDocumented(request.body.replace('stamped', 'stampee'), header, ep.secret)).toBe(false);
    // @timbra/client's verifier, as an integrator's receiver calls it.
    expect(verifyWebhook(request.body, header, ep.secret)).toMatchObject({ type: 'invoice.stamped' });
    expect(() => verifyWebhook(request.body, header, newEndpointSecret())).toThrow(WebhookSignatureError);
    expect(() => verifyWebhook(request.body.replace('stamped', 'stampee'), header, ep.secret)).toThrow(
      /no v1 .* matches/,
    );
    expect(() => verifyWebhook(request.body, header, ep.secret, { now: () => Date.now() + 301_000 })).toThrow(
      /outside the tolerance/,
    );
    const event = JSON.parse(request.body) as {
      id: string;
      type: string;
      data: { object: { id: string; uuid: string } };
    };
    expect(event).toMatchObject({ type: 'invoice.stamped', data: { object: { id: invoice.id, uuid: invoice.uuid } } });
    expect(request.headers['timbra-event-id']).toBe(event.id);
    expect(request.headers['content-type']).toBe('application/json');
  });

  it('a test event goes to the endpoint that asked for it only, signed like any other; never to a disabled one', async () => {
    const asked = await endpoint(['invoice.stamped']);
    const other = await endpoint(['*']);
    const sent = await sendTestEvent(prisma, asked.id, 'test');
    expect(sent).toMatchObject({ id: expect.any(String) });
    const d = dispatcher();
    await deliverUntil(d, () =>
      receiver.requests.some((r) => r.body.includes('endpoint.test') && r.body.includes(asked.id)),
    );
    const got = receiver.requests.filter((r) => r.body.includes('endpoint.test') && r.body.includes(asked.id));
    expect(got).toHaveLength(1);
    const event = verifyWebhook(got[0]!.body, String(got[0]!.headers['timbra-signature']), asked.secret);
    expect(event).toMatchObject({
      type: 'endpoint.test',
      data: { object: { object: 'webhook_endpoint', id: asked.id } },
    });
    expect(() => verifyWebhook(got[0]!.body, String(got[0]!.headers['timbra-signature']), other.secret)).toThrow(
      WebhookSignatureError,
    );
    const deliveries = await prisma.delivery.findMany({ where: { eventId: event.id } });
    expect(deliveries.map((x) => [x.endpointId, x.channel, x.status])).toEqual([[asked.id, 'webhook', 'delivered']]);
    await setEndpointStatus(prisma, asked.id, 'disabled', 'test');
    expect(await sendTestEvent(prisma, asked.id, 'test')).toEqual({ refused: 'endpoint_disabled' });
    expect(await sendTestEvent(prisma, randomUUID(), 'test')).toBeUndefined();
  });

  it('during a secret rotation each delivery carries a signature with each secret; after it, only the new one', async () => {
    const ep = await endpoint(['invoice.stamped']);
    const fresh = await rotateEndpointSecret(prisma, ep.id, 3_600_000);
    const { invoice } = await stampedSale('rotation', null);
    const d = dispatcher();
    await deliverUntil(d, () => receiver.requests.some((r) => r.body.includes(invoice.id)));
    const during = receiver.requests.find((r) => r.body.includes(invoice.id))!;
    const header = String(during.headers['timbra-signature']);
    expect(header.match(/v1=/g)).toHaveLength(2);
    // Stripe's verifier accepts a header whose v1s include one of the secret it is given: either works.
    expect(stripe.webhooks.signature!.verifyHeader(during.body, header, fresh!, 300)).toBe(true);
    expect(stripe.webhooks.signature!.verifyHeader(during.body, header, ep.secret, 300)).toBe(true);
    expect(verifyAsDocumented(during.body, header, ep.secret)).toBe(true);
    expect(verifyAsDocumented(during.body, header, fresh!)).toBe(true);
    expect(verifyWebhook(during.body, header, fresh!).data.object).toMatchObject({ id: invoice.id });
    // Grace over: the old secret no longer verifies the next delivery.
    const newest = await rotateEndpointSecret(prisma, ep.id, 0);
    const replay = await replayDelivery(
      prisma,
      (await prisma.delivery.findFirstOrThrow({ where: { endpointId: ep.id } })).id,
      'test',
    );
    await deliverUntil(d, () =>
      receiver.requests.some((r) => r.headers['timbra-delivery-id'] === (replay as { id: string }).id),
    );
    const after = receiver.requests.find((r) => r.headers['timbra-delivery-id'] === (replay as { id: string }).id)!;
    const afterHeader = String(after.headers['timbra-signature']);
    expect(afterHeader.match(/v1=/g)).toHaveLength(1);
    expect(verifyAsDocumented(after.body, afterHeader, newest!)).toBe(true);
    expect(verifyAsDocumented(after.body, afterHeader, fresh!)).toBe(false);
    expect(() => verifyWebhook(after.body, afterHeader, fresh!)).toThrow(WebhookSignatureError);
    expect(verifyWebhook(after.body, afterHeader, [fresh!, newest!]).id).toBe(after.headers['timbra-event-id']);
  });

  it('a receiver that fails and times out gets the same body again with backoff until it answers 2xx', async () => {
    const ep = await endpoint(['invoice.stamped']);
    receiver.answers.push(500, 'hang', 503);
    const { invoice } = await stampedSale('hook-retry', null);
    const d = dispatcher({
      webhook: {
        timeoutMs: 300,
        retry: quick,
        disable: { afterMs: 3_600_000, minFailures: 1000 },
        allowedAddresses: LOOPBACK_RANGES,
      },
    });
    await deliverUntil(d, () => receiver.requests.some((r) => r.body.includes(invoice.id) && r.status === 200));
    const mine = receiver.requests.filter((r) => r.body.includes(invoice.id));
    expect(mine.map((r) => r.status)).toEqual([500, 0, 503, 200]);
    expect(new Set(mine.map((r) => r.body)).size).toBe(1);
    const delivery = await prisma.delivery.findFirstOrThrow({
      where: { endpointId: ep.id },
      include: { log: { orderBy: { attempt: 'asc' } } },
    });
    expect(delivery.log.map((l) => [l.outcome, l.statusCode])).toEqual([
      ['failed', 500],
      ['failed', null],
      ['failed', 503],
      ['delivered', 200],
    ]);
    expect(delivery.log[1]!.error).toMatch(/ETIMEDOUT|timeout/i);
    // The streak ended with the success.
    expect(await prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: ep.id } })).toMatchObject({
      consecutiveFailures: 0,
      failingSince: null,
    });
  });

  it('a delivery still failing past its retry window is dead, the window measured from its creation by the database’s clock', async () => {
    const ep = await endpoint(['invoice.stamped']);
    receiver.answers.push(...Array<number>(50).fill(500));
    const { invoice } = await stampedSale('hook-window', null);
    const attempts: string[] = [];
    const d = dispatcher({
      webhook: {
        timeoutMs: 500,
        retry: quick,
        disable: { afterMs: 3_600_000, minFailures: 1000 },
        allowedAddresses: LOOPBACK_RANGES,
      },
      onAttempt: (_channel, outcome) => attempts.push(outcome),
    });
    const first = await prisma.delivery.findFirstOrThrow({ where: { endpointId: ep.id } });
    // Written 59 s ago by the database's clock: retries (40–200 ms apart) fit in the 60 s window for
    // about a second more, then it is given up.
    await prisma.delivery.update({
      where: { id: first.id },
      data: { createdAt: new Date((await databaseNow(prisma)) - quick.forMs + 1_000) },
    });
    await deliverUntil(
      d,
      async () => (await prisma.delivery.findUniqueOrThrow({ where: { id: first.id } })).status === 'dead',
    );
    const delivery = await prisma.delivery.findUniqueOrThrow({
      where: { id: first.id },
      include: { log: { orderBy: { attempt: 'asc' } } },
    });
    expect(delivery.log.at(-1)).toMatchObject({ outcome: 'dead', statusCode: 500 });
    expect(delivery.log.length).toBeGreaterThan(1);
    expect(delivery.log.slice(0, -1).every((l) => l.outcome === 'failed')).toBe(true);
    expect(attempts.at(-1)).toBe('dead');
    expect(receiver.requests.filter((r) => r.body.includes(invoice.id)).length).toBe(delivery.log.length);
  });

  it('a long failure streak disables the endpoint, buries its pending deliveries and says so; a replay after enabling delivers', async () => {
    const ep = await endpoint(['*']);
    receiver.answers.push(...Array<number>(50).fill(500));
    const disabled: unknown[] = [];
    const d = dispatcher({
      webhook: {
        timeoutMs: 500,
        retry: quick,
        disable: { afterMs: 0, minFailures: 3 },
        allowedAddresses: LOOPBACK_RANGES,
      },
      onEndpointDisabled: (e) => disabled.push(e),
    });
    await stampedSale('streak', null);
    await deliverUntil(
      d,
      async () => (await prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: ep.id } })).status === 'disabled',
    );
    const after = await prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: ep.id } });
    expect(after.disabledReason).toMatch(/^failing since .* \(3 attempts in a row\)$/);
    expect(disabled).toEqual([expect.objectContaining({ id: ep.id, consecutiveFailures: 3 })]);
    expect(await prisma.delivery.count({ where: { endpointId: ep.id, status: { in: ['pending', 'sending'] } } })).toBe(
      0,
    );
    const dead = await prisma.delivery.findFirstOrThrow({ where: { endpointId: ep.id, status: 'dead' } });
    expect(await replayDelivery(prisma, dead.id, 'test')).toEqual({ refused: 'endpoint_disabled' });
    receiver.answers.length = 0;
    await prisma.webhookEndpoint.update({
      where: { id: ep.id },
      data: { status: 'enabled', consecutiveFailures: 0, failingSince: null },
    });
    const replay = await replayDelivery(prisma, dead.id, 'test');
    await deliverUntil(
      d,
      async () =>
        (await prisma.delivery.findUniqueOrThrow({ where: { id: (replay as { id: string }).id } })).status ===
        'delivered',
    );
    const replayed = receiver.requests.filter((r) => r.headers['timbra-delivery-id'] === (replay as { id: string }).id);
    expect(replayed).toHaveLength(1);
    expect(replayed[0]!.headers['timbra-event-id']).toBe(dead.eventId);
  });

  it('a slow endpoint holds one slot, not a batch: deliveries that come due while it hangs go out at once', async () => {
    // An endpoint that never answers (the dispatcher gives up after 4 s).
    const hanging = createServer(() => undefined);
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    let reached = 0;
    hanging.on('request', () => reached++);
    closers.push(async () => {
      hanging.closeAllConnections();
      await new Promise((r) => hanging.close(r));
    });
    const slow = await prisma.webhookEndpoint.create({
      data: {
        url: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/hooks`,
        events: ['invoice.stamped'],
        secret: newEndpointSecret(),
      },
    });
    await stampedSale('slot-slow', null);
    const d = dispatcher({
      concurrency: 4,
      pollMs: 100,
      webhook: {
        timeoutMs: 4_000,
        retry: quick,
        disable: { afterMs: 3_600_000, minFailures: 1000 },
        allowedAddresses: LOOPBACK_RANGES,
      },
    });
    const draining = d.drainAll();
    await eventually(() => Promise.resolve(reached === 1), 3_000);
    // While it hangs, three endpoints are registered (the slow one put away) and a sale is stamped.
    await prisma.webhookEndpoint.update({ where: { id: slow.id }, data: { status: 'disabled' } });
    for (let i = 0; i < 3; i++) await endpoint(['invoice.stamped']);
    const { invoice } = await stampedSale('slot-fast', null);
    await eventually(
      () => Promise.resolve(receiver.requests.filter((r) => r.body.includes(invoice.id)).length === 3),
      3_000,
    );
    // …and were delivered while the slow one still waited for its answer.
    expect(await prisma.delivery.findFirstOrThrow({ where: { endpointId: slow.id } })).toMatchObject({
      status: 'sending',
      attempts: 1,
    });
    expect(await draining).toBe(4);
    const slowDelivery = await prisma.delivery.findFirstOrThrow({
      where: { endpointId: slow.id },
      include: { log: true },
    });
    expect(slowDelivery.log).toEqual([expect.objectContaining({ attempt: 1, outcome: 'failed' })]);
  });

  it('a worker that dies mid-send loses its lease and the delivery is sent again (at least once)', async () => {
    const ep = await endpoint(['invoice.stamped']);
    const { invoice } = await stampedSale('lease', null);
    // A worker claims with a short lease and dies before sending.
    const [claimed] = await claimDueDeliveries(prisma, 50, 200).then((c) => c.filter((x) => x.endpoint?.id === ep.id));
    expect(claimed).toBeDefined();
    const d = dispatcher();
    await new Promise((r) => setTimeout(r, 300));
    await deliverUntil(d, () => receiver.requests.some((r) => r.body.includes(invoice.id)));
    const delivery = await prisma.delivery.findUniqueOrThrow({ where: { id: claimed!.id }, include: { log: true } });
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 2 });
    expect(delivery.log).toEqual([expect.objectContaining({ attempt: 2, outcome: 'delivered' })]);
  });
});

describe('endpoints only at public addresses (SSRF, DESIGN.md invariant 16)', () => {
  it('with production rules an endpoint at loopback gets nothing — by address or by a name that resolves there — and an open port reads as a closed one', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const urls = [
      receiver.url,
      receiver.url.replace('127.0.0.1', 'localhost'), // a name: checked on the address it resolves to
      `http://127.0.0.1:${closedPort}/hooks`,
    ];
    // Written straight to the table, as an endpoint registered before these rules (or a name that
    // resolved elsewhere at registration) would be: the delivery is where the check must hold.
    const endpoints = await Promise.all(
      urls.map((url) => prisma.webhookEndpoint.create({ data: { url, events: ['*'], secret: newEndpointSecret() } })),
    );
    const heard = receiver.requests.length;
    await prisma.payment.create({
      data: {
        provider: 'api:test',
        externalId: `ssrf-${randomUUID()}`,
        amount: '1.00',
        currency: 'MXN',
        occurredAt: new Date(),
      },
    });
    const production = dispatcher({ webhook: { ...dispatcherDeps().webhook, allowedAddresses: [] } });
    const attempts = () =>
      prisma.deliveryAttempt.findMany({ where: { delivery: { endpointId: { in: endpoints.map((e) => e.id) } } } });
    await deliverUntil(production, async () => new Set((await attempts()).map((a) => a.deliveryId)).size === 3);
    expect(receiver.requests.length).toBe(heard);
    const errors = new Set((await attempts()).map((a) => a.error));
    expect([...errors]).toEqual([
      'ADDRESS_NOT_ALLOWED: the endpoint is not at a public address (WEBHOOK_ALLOWED_ADDRESSES)',
    ]);
    // The operator's allowlist lets the same endpoint through.
    const allowed = dispatcher({ webhook: { ...dispatcherDeps().webhook, allowedAddresses: ['127.0.0.0/8'] } });
    await deliverUntil(allowed, () => receiver.requests.length > heard);
  });
});
