/**
 * The console's invoice routes: search, one invoice, its PDF and XML, resend its email, cancel it.
 * Each reads or acts through the API with the session's key (req.signed.timbra).
 */
import { Router, type Request, type RequestHandler, type Response } from 'express';
import { isUuid } from '@timbra/db';
import { errorOf } from './api-client.ts';
import { createdBounds, failed, field, formAction, once, send, text } from './respond.ts';
import { invoicePage, invoiceRows, searchForm, type Search } from './invoice-pages.ts';
import { at, errorBox, escape } from './layout.ts';

const DONE: Record<string, string> = {
  email: 'The email is on its way: it shows below under Emails and webhooks.',
  cancel: 'Cancellation requested: the worker asks the SAT through the PAC; its answer shows below.',
  correct: 'Corrected: the new version is sealed and goes to the PAC with the same serie-folio.',
  proving:
    'Correction accepted: the PACs that received the old version are being asked whether they stamped it; once all say no, the new version is issued.',
  retry: 'Sent back to the PAC with the same frozen bytes.',
};

export function invoiceRoutes(form: RequestHandler): Router {
  const router = Router();
  router.get('/invoices', search);
  router.get('/invoices/:id', invoice);
  router.get('/invoices/:id/pdf', (req, res) => document(req, res, 'pdf'));
  router.get('/invoices/:id/xml', (req, res) => document(req, res, 'xml'));
  router.post('/invoices/:id/email', form, resend);
  router.post('/invoices/:id/cancel', form, cancel);
  return router;
}

async function search(req: Request, res: Response): Promise<void> {
  const s: Search = {
    q: text(req.query.q),
    rfc: text(req.query.rfc).toUpperCase(),
    status: text(req.query.status),
    from: text(req.query.from),
    to: text(req.query.to),
  };
  const { timbra } = req.signed!;
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s.q);
  // A Timbra invoice id opens its page (the CFDI's UUID is searched for like any filter).
  if (uuid && isUuid(s.q.toLowerCase())) {
    const byId = await timbra.GET('/v1/invoices/{id}', { params: { path: { id: s.q.toLowerCase() } } });
    if (byId.data) return res.redirect(303, at(`/invoices/${byId.data.id}`));
  }
  const query = {
    limit: 50,
    ...(s.q ? (uuid ? { uuid: s.q } : { serieFolio: s.q }) : {}),
    ...(s.rfc ? { rfc: s.rfc } : {}),
    ...(s.status ? { status: s.status as 'stamped' } : {}),
    ...createdBounds(s.from, s.to),
    ...(typeof req.query.cursor === 'string' ? { cursor: req.query.cursor } : {}),
  };
  const page = await timbra.GET('/v1/invoices', { params: { query } });
  if (page.response.status === 401) return failed(req, res, 401, errorOf(page.error, 401));
  const results = page.error
    ? errorBox(errorOf(page.error, page.response.status))
    : `${invoiceRows(page.data.data)}${
        page.data.nextCursor
          ? `<p><a href="${at(`/invoices?${escape(new URLSearchParams({ ...s, cursor: page.data.nextCursor }).toString())}`)}">Older invoices</a></p>`
          : ''
      }`;
  send(req, res, page.error ? page.response.status : 200, 'Invoices', `${searchForm(s)}\n${results}`);
}

async function invoice(req: Request, res: Response): Promise<void> {
  const id = String(req.params.id);
  const { timbra } = req.signed!;
  const path = { params: { path: { id } } };
  const found = await timbra.GET('/v1/invoices/{id}', path);
  if (found.error) return failed(req, res, found.response.status, errorOf(found.error, found.response.status));
  const i = found.data;
  const [versions, deliveries, events, payment] = await Promise.all([
    timbra.GET('/v1/invoices/{id}/versions', path),
    timbra.GET('/v1/deliveries', { params: { query: { invoiceId: id, limit: 100 } } }),
    timbra.GET('/v1/events', { params: { query: { invoiceId: id, limit: 100 } } }),
    i.paymentId ? timbra.GET('/v1/payments/{id}', { params: { path: { id: i.paymentId } } }) : undefined,
  ]);
  send(
    req,
    res,
    200,
    `${i.serieFolio}`,
    invoicePage(i, versions.data ?? { versions: [] }, deliveries.data?.data ?? [], events.data?.data ?? [], {
      token: req.signed!.token,
      once,
      customer: payment?.data ? { receptor: payment.data.receptor, email: payment.data.email } : undefined,
      notice: DONE[text(req.query.done)],
    }),
  );
}

/** The PDF or XML as the API serves it (its type and file name kept). */
async function document(req: Request, res: Response, kind: 'pdf' | 'xml'): Promise<void> {
  const id = String(req.params.id);
  const { timbra } = req.signed!;
  const got =
    kind === 'pdf'
      ? await timbra.GET('/v1/invoices/{id}/pdf', { params: { path: { id } }, parseAs: 'arrayBuffer' })
      : await timbra.GET('/v1/invoices/{id}/xml', { params: { path: { id } }, parseAs: 'arrayBuffer' });
  if (got.error) return failed(req, res, got.response.status, errorOf(got.error, got.response.status));
  for (const name of ['content-type', 'content-disposition', 'x-timbra-xml']) {
    const value = got.response.headers.get(name);
    if (value) res.set(name, value);
  }
  res.send(Buffer.from(got.data));
}

function resend(req: Request, res: Response): Promise<void> {
  const id = String(req.params.id);
  const to = field(req, 'to');
  return formAction(
    req,
    res,
    { action: `email:${id}`, title: 'Not sent' },
    (timbra, headers) =>
      timbra.POST('/v1/invoices/{id}/email', { params: { path: { id } }, body: to ? { to } : {}, headers }),
    () => at(`/invoices/${id}?done=email`),
  );
}

function cancel(req: Request, res: Response): Promise<void> {
  const id = String(req.params.id);
  const motivo = field(req, 'motivo') as '01' | '02' | '03' | '04';
  const folioSustitucion = field(req, 'folioSustitucion');
  return formAction(
    req,
    res,
    { action: `cancel:${id}`, title: 'Not cancelled' },
    (timbra, headers) =>
      timbra.POST('/v1/invoices/{id}/cancel', {
        params: { path: { id } },
        body: { motivo, ...(folioSustitucion ? { folioSustitucion } : {}) },
        headers,
      }),
    () => at(`/invoices/${id}?done=cancel`),
  );
}
