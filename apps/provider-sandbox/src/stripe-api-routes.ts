/**
 * Stripe's API as the sandbox serves it under `/v1`: the read endpoints Timbra calls (charges,
 * PaymentIntents with `expand`, balance transactions, Checkout Sessions and their line items, Stripe
 * Invoices, their lines and InvoicePayments, products, refunds with auto-pagination), Bearer the
 * configured secret key, answering as Stripe does when a key or an object is wrong. As Stripe: an
 * object made on a connected account is found only with its `Stripe-Account` header, and — when a
 * live key is configured — a live object only with the live key, a test one only with the test key.
 */
import { Router, type NextFunction, type Request, type Response } from 'express';
import { FakeError } from './stripe-objects.ts';
import type { StripeFake } from './stripe-fake.ts';

/** The router to mount at `/v1`. */
export function stripeApiRouter(stripe: StripeFake, secretKey: string, liveSecretKey?: string): Router {
  const router = Router();
  const { stripeAuth, sees, found } = stripeAccess(stripe, secretKey, liveSecretKey);
  router.get('/charges/:id', stripeAuth, (req, res) => {
    res.json(found(req, stripe.charges.get(String(req.params.id)), 'charge', req.params.id));
  });
  router.get('/payment_intents/:id', stripeAuth, (req, res) => {
    const pi = found(req, stripe.paymentIntents.get(String(req.params.id)), 'payment_intent', req.params.id);
    // stripe-node sends `expand[0]=latest_charge`; curl users `expand[]=…`.
    const expand = Object.entries(req.query).flatMap(([k, v]) => (/^expand(\[\d*\])?$/.test(k) ? [v].flat() : []));
    res.json(
      expand.includes('latest_charge') ? { ...pi, latest_charge: stripe.charges.get(pi.latest_charge as string) } : pi,
    );
  });
  router.get('/balance_transactions/:id', stripeAuth, (req, res) => {
    res.json(found(req, stripe.balanceTransactions.get(String(req.params.id)), 'balance_transaction', req.params.id));
  });
  router.get('/checkout/sessions', stripeAuth, (req, res) => {
    const pi = req.query.payment_intent;
    const data = [...stripe.checkoutSessions.values()].filter(
      (s) => sees(req, s.id) && (pi === undefined || s.payment_intent === pi),
    );
    res.json({ object: 'list', data, has_more: false, url: '/v1/checkout/sessions' });
  });
  router.get('/checkout/sessions/:id', stripeAuth, (req, res) => {
    res.json(found(req, stripe.checkoutSessions.get(String(req.params.id)), 'checkout.session', req.params.id));
  });
  router.get('/checkout/sessions/:id/line_items', stripeAuth, (req, res) => {
    const session = found(req, stripe.checkoutSessions.get(String(req.params.id)), 'checkout.session', req.params.id);
    const items = foundAt(stripe.lineItems.get(session.id), 'checkout.session', req.params.id);
    const expand = Object.entries(req.query).flatMap(([k, v]) => (/^expand(\[\d*\])?$/.test(k) ? [v].flat() : []));
    const data = expand.includes('data.price.product')
      ? items.map((item) => ({
          ...item,
          price: { ...item.price, product: stripe.products.get(item.price.product) },
        }))
      : items;
    res.json({
      object: 'list',
      data,
      has_more: false,
      url: `/v1/checkout/sessions/${String(req.params.id)}/line_items`,
    });
  });
  router.get('/invoice_payments', stripeAuth, (req, res) => {
    // stripe-node sends `payment[type]=…&payment[payment_intent]=…` (kept as flat keys by Express 5).
    const pi = req.query['payment[payment_intent]'];
    const invoice = req.query.invoice;
    const data = [...stripe.invoicePayments.values()].filter(
      (p) =>
        sees(req, p.id) &&
        (pi === undefined || p.payment.payment_intent === pi) &&
        (invoice === undefined || p.invoice === invoice),
    );
    res.json({ object: 'list', data, has_more: false, url: '/v1/invoice_payments' });
  });
  router.get('/invoices/:id', stripeAuth, (req, res) => {
    res.json(found(req, stripe.invoices.get(String(req.params.id)), 'invoice', req.params.id));
  });
  router.get('/invoices/:id/lines', stripeAuth, (req, res) => {
    const invoice = found(req, stripe.invoices.get(String(req.params.id)), 'invoice', req.params.id);
    const data = foundAt(stripe.invoiceLines.get(invoice.id), 'invoice', req.params.id);
    res.json({ object: 'list', data, has_more: false, url: `/v1/invoices/${String(req.params.id)}/lines` });
  });
  router.get('/products/:id', stripeAuth, (req, res) => {
    res.json(found(req, stripe.products.get(String(req.params.id)), 'product', req.params.id));
  });
  router.get('/refunds/:id', stripeAuth, (req, res) => {
    res.json(found(req, stripe.refunds.get(String(req.params.id)), 'refund', req.params.id));
  });
  refundList(router, stripe, stripeAuth, sees);
  return router;
}

/** Who may read what: the key (test, or live when one is set) and, per object, its account and mode. */
function stripeAccess(stripe: StripeFake, secretKey: string, liveSecretKey: string | undefined) {
  const stripeAuth = (req: Request, res: Response, next: NextFunction) => {
    const given = req.get('authorization');
    if (given !== `Bearer ${secretKey}` && (liveSecretKey === undefined || given !== `Bearer ${liveSecretKey}`))
      return void res
        .status(401)
        .json({ error: { type: 'invalid_request_error', message: 'Invalid API Key provided' } });
    next();
  };
  // Whether the request may see the object `id`: its account, and its mode when keys tell modes apart.
  const sees = (req: Request, objectId: string) => {
    const scope = stripe.scopeOf(objectId);
    const live = liveSecretKey !== undefined && req.get('authorization') === `Bearer ${liveSecretKey}`;
    return scope.account === req.get('stripe-account') && (liveSecretKey === undefined || scope.livemode === live);
  };
  const found = <T extends { id: string }>(req: Request, value: T | undefined, kind: string, objectId: unknown): T =>
    foundAt(value !== undefined && sees(req, value.id) ? value : undefined, kind, objectId);
  return { stripeAuth, sees, found };
}

/** `GET /v1/refunds`: newest first, the caller's account's, paged as the library's auto-pagination asks. */
function refundList(
  router: Router,
  stripe: StripeFake,
  stripeAuth: (req: Request, res: Response, next: NextFunction) => void,
  sees: (req: Request, objectId: string) => boolean,
): void {
  router.get('/refunds', stripeAuth, (req, res) => {
    const { charge, payment_intent: pi } = req.query;
    const data = [...stripe.refunds.values()]
      .filter(
        (r) =>
          sees(req, r.id) &&
          (charge === undefined || r.charge === charge) &&
          (pi === undefined || r.payment_intent === pi),
      )
      .sort((a, b) => b.created - a.created);
    // Newest first, pages of `limit` after `starting_after` (how the library's auto-pagination asks).
    const after = typeof req.query.starting_after === 'string' ? req.query.starting_after : undefined;
    const rest = after === undefined ? data : data.slice(data.findIndex((r) => r.id === after) + 1);
    const limit = Math.min(Number(req.query.limit ?? 10) || 10, 100);
    res.json({ object: 'list', data: rest.slice(0, limit), has_more: rest.length > limit, url: '/v1/refunds' });
  });
}

/** Refuses a request without `Authorization: Bearer <expected>`, with the provider's own answer. */
export function bearer(expected: string, refusal: () => unknown) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (req.get('authorization') !== `Bearer ${expected}`) return void res.status(401).json(refusal());
    next();
  };
}

/** The object, or Stripe's 404 for it. */
function foundAt<T>(value: T | undefined, kind: string, id: unknown): T {
  if (value === undefined) throw new FakeError(404, 'resource_missing', `No such ${kind}: '${String(id)}'`);
  return value;
}
