/**
 * The console's work queues: invoices that need data and their correction, and dead letters with
 * a retry. Each reads and acts through the API with the session's key.
 */
import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { Schemas, Timbra } from '@timbra/client';
import { errorOf } from './api-client.ts';
import type { Invoice } from './invoice-pages.ts';
import { at } from './layout.ts';
import { failed, field, formAction, idempotency, once, refused, send, text } from './respond.ts';
import { errorBox } from './layout.ts';
import {
  CORRECTION_FIELDS,
  correctionPage,
  deadLettersPage,
  needsDataPage,
  type CorrectionValues,
  type DeadLetter,
} from './work-pages.ts';

export function workRoutes(form: RequestHandler): Router {
  const router = Router();
  router.get('/needs-data', async (req, res) => {
    const page = await req.signed!.timbra.GET('/v1/invoices', {
      params: { query: { status: 'needs_data', limit: 100 } },
    });
    if (page.error) return failed(req, res, page.response.status, errorOf(page.error, page.response.status));
    send(
      req,
      res,
      200,
      `Needs data (${page.data.data.length}${page.data.nextCursor ? '+' : ''})`,
      needsDataPage(page.data.data),
    );
  });
  router.get('/invoices/:id/correct', correctForm);
  router.post('/invoices/:id/correct', form, correct);
  router.get('/dead-letters', deadLetters);
  router.post('/dead-letters/:outboxId/retry', form, retry);
  return router;
}

/** What the correction form starts from: the receptor its payment recorded. */
async function currentValues(timbra: Timbra, invoice: Invoice): Promise<CorrectionValues> {
  if (!invoice.paymentId) return {};
  const payment = await timbra.GET('/v1/payments/{id}', { params: { path: { id: invoice.paymentId } } });
  const receptor = payment.data?.receptor;
  return receptor
    ? {
        rfc: receptor.rfc,
        nombre: receptor.nombre,
        codigoPostal: receptor.codigoPostal,
        regimenFiscal: receptor.regimenFiscal,
        usoCfdi: receptor.usoCfdi,
      }
    : {};
}

async function correctForm(req: Request, res: Response): Promise<void> {
  const id = String(req.params.id);
  const { timbra, token } = req.signed!;
  const found = await timbra.GET('/v1/invoices/{id}', { params: { path: { id } } });
  if (found.error) return failed(req, res, found.response.status, errorOf(found.error, found.response.status));
  const values = await currentValues(timbra, found.data);
  send(
    req,
    res,
    200,
    `Correct ${found.data.serieFolio}`,
    correctionPage(found.data, found.data.problems ?? [], values, { token: token(`correct:${id}`), once: once() }),
  );
}

/** The changes a correction form asks for: the fields changed from what the invoice has now. */
function changesOf(body: Record<string, unknown>, was: CorrectionValues) {
  const changed = (name: (typeof CORRECTION_FIELDS)[number]['name']) => {
    const value = text(body[name]);
    return value && value !== (was[name] ?? '') ? value : undefined;
  };
  const pick = (group: string) =>
    Object.fromEntries(
      CORRECTION_FIELDS.filter((f) => f.group === group)
        .map((f) => [f.name, changed(f.name)] as const)
        .filter(([, v]) => v !== undefined),
    );
  const receptor = pick('receptor');
  const concepto = pick('concepto');
  const formaPago = changed('formaPago');
  return {
    ...(Object.keys(receptor).length ? { receptor } : {}),
    ...(Object.keys(concepto).length ? { concepto } : {}),
    ...(formaPago ? { formaPago } : {}),
  };
}

async function correct(req: Request, res: Response): Promise<void> {
  const id = String(req.params.id);
  const signed = req.signed!;
  if (!signed.checks(`correct:${id}`, field(req, 'token'))) return refused(req, res);
  const found = await signed.timbra.GET('/v1/invoices/{id}', { params: { path: { id } } });
  if (found.error) return failed(req, res, found.response.status, errorOf(found.error, found.response.status));
  const body = (req.body ?? {}) as Record<string, unknown>;
  const changes = changesOf(body, await currentValues(signed.timbra, found.data));
  const reason = text(body.reason);
  const sent = await signed.timbra.PATCH('/v1/invoices/{id}', {
    params: { path: { id } },
    body: { ...changes, ...(reason ? { reason } : {}) },
    headers: idempotency(req),
  });
  if (!sent.error)
    return res.redirect(303, at(`/invoices/${id}?done=${sent.response.status === 202 ? 'proving' : 'correct'}`));
  // Refused: the form again, as filled, with the rules the corrected CFDI would break.
  const error = errorOf(sent.error, sent.response.status);
  if (sent.response.status === 401) return failed(req, res, 401, error);
  const problems =
    error.code === 'fiscal_rules_failed' ? (error.details as Schemas['Problem'][]) : (found.data.problems ?? []);
  const values = Object.fromEntries(
    Object.entries(body)
      .filter(([k]) => k !== 'token' && k !== 'once')
      .map(([k, v]) => [k, text(v)]),
  );
  send(
    req,
    res,
    sent.response.status,
    `Correct ${found.data.serieFolio}`,
    correctionPage(found.data, problems, values, {
      token: signed.token(`correct:${id}`),
      once: once(),
      error: errorBox(error),
    }),
  );
}

async function deadLetters(req: Request, res: Response): Promise<void> {
  const { timbra, token } = req.signed!;
  const page = await timbra.GET('/v1/invoices', { params: { query: { status: 'stamp_failed', limit: 50 } } });
  if (page.error) return failed(req, res, page.response.status, errorOf(page.error, page.response.status));
  // Each letter's history, a few requests at a time (50 one after another took ~0.5 s), in order.
  const letters: DeadLetter[] = [];
  const rows = page.data.data;
  for (let at = 0; at < rows.length; at += HISTORIES_AT_ONCE) {
    const found = await Promise.all(
      rows
        .slice(at, at + HISTORIES_AT_ONCE)
        .map((row) => timbra.GET('/v1/invoices/{id}', { params: { path: { id: row.id } } })),
    );
    for (const one of found) if (one.data) letters.push(deadLetterOf(one.data));
  }
  const forms = (outboxId: string) => ({ token: token(`retry:${outboxId}`), once: once() });
  send(
    req,
    res,
    200,
    `Dead letters (${letters.length}${page.data.nextCursor ? '+' : ''})`,
    deadLettersPage(letters, forms),
  );
}

/** Invoice histories the dead-letters page asks for at once. */
const HISTORIES_AT_ONCE = 8;

/** A dead-lettered invoice as the page lists it: its failed outbox row and the PAC's last word. */
function deadLetterOf(invoice: Invoice): DeadLetter {
  const dead = invoice.history.outbox.find((o) => o.status === 'failed');
  const last = invoice.history.pacAttempts.filter((a) => a.outcome !== 'in_flight').at(-1);
  return {
    invoice,
    outboxId: dead?.id,
    lastError: dead?.lastError ?? last?.code ?? '',
    permanent: last?.outcome === 'permanent',
  };
}

function retry(req: Request, res: Response): Promise<void> {
  const outboxId = String(req.params.outboxId);
  const reason = field(req, 'reason');
  return formAction(
    req,
    res,
    { action: `retry:${outboxId}`, title: 'Not retried' },
    (timbra, headers) =>
      timbra.POST('/v1/outbox/{id}/retry', {
        params: { path: { id: outboxId } },
        body: reason ? { reason } : {},
        headers,
      }),
    (sent) => at(`/invoices/${sent.invoiceId}?done=retry`),
  );
}
