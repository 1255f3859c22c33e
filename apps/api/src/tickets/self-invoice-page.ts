/**
 * The self-invoicing page (autofactura), `/facturar`: server-rendered HTML in Spanish, no account,
 * no script. The customer types the ticket's code and total, then their fiscal data as registered
 * with the SAT; Timbra freezes their own CFDI (use-cases/tickets.ts `selfInvoice`) and, once the
 * worker has stamped it, offers the PDF and the XML (and emails them when an address was given).
 *
 * - Enumeration: a ticket is found only by code **and** total (one answer for both), failed lookups
 *   are limited per address (FailureLimiter), and every POST is rate-limited per address.
 * - CSRF: a double-submit token — a random value in an HttpOnly, SameSite=Strict cookie and in the
 *   form — and the Origin, when the browser sends one, must be this host.
 * - After a successful POST the browser is redirected (303) to the ticket's page, whose address
 *   holds a random token: reloading it never submits twice, and only the customer has the link.
 * - Accessible: every field labelled, errors listed in an alert at the top and beside their field
 *   (aria-invalid, aria-describedby), the choices narrowed to what the SAT allows once known.
 */
import express, { Router, type Request, type Response } from 'express';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';
import { customerCopy, SAT_RULES, stampedXmlOf } from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import { invoiceForCustomer } from '@timbra/db/invoices';
import { ticketByDownloadToken } from '@timbra/db/tickets';
import { FailureLimiter } from '../http/failure-limiter.ts';
import { escapeHtml as esc } from '../http/html.ts';
import { DomainError } from '../domain-errors.ts';
import { selfInvoice } from './self-invoice.ts';
import { emptyForm, readForm, checkForm, refusal, csrfOk, type SelfInvoicePageDeps } from './self-invoice-form.ts';
import { formPage, off, notFound, tooMany, pesos, page } from './self-invoice-html.ts';

export { SELF_INVOICE_PATH } from './self-invoice-form.ts';

export function selfInvoicePage(deps: SelfInvoicePageDeps): Router {
  const router = Router();
  const failures = new FailureLimiter({ perAddress: deps.failuresPerMinute, perPrefix: Number.MAX_SAFE_INTEGER });
  const limiter = rateLimit({
    windowMs: 60_000,
    limit: deps.requestsPerMinute,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    keyGenerator: (req) => ipKeyGenerator(req.ip ?? '0.0.0.0'),
    handler: (req, res) => {
      res
        .status(429)
        .type('html')
        .send(page(deps.merchant, 'Demasiados intentos', tooMany(req.baseUrl)));
    },
  });

  router.get('/', (req, res) => {
    if (!deps.payments.global)
      return void res
        .status(404)
        .type('html')
        .send(page(deps.merchant, 'No disponible', off()));
    res.type('html').send(formPage(deps, req, res, emptyForm(), {}));
  });

  router.post('/', limiter, express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 20 }), (req, res) =>
    submit(deps, failures, req, res),
  );
  router.get('/ticket/:token', (req, res) => ticketPage(deps, req, res));
  router.get('/ticket/:token/factura.pdf', (req, res) => download(deps, 'pdf', req, res));
  router.get('/ticket/:token/factura.xml', (req, res) => download(deps, 'xml', req, res));
  return router;
}

/** The form sent: checked, then the customer's invoice frozen, and the browser sent to the ticket's page. */
async function submit(deps: SelfInvoicePageDeps, failures: FailureLimiter, req: Request, res: Response): Promise<void> {
  if (!deps.payments.global)
    return void res
      .status(404)
      .type('html')
      .send(page(deps.merchant, 'No disponible', off()));
  const form = readForm(req.body as Record<string, unknown>);
  if (!csrfOk(req)) {
    return void res
      .status(403)
      .type('html')
      .send(formPage(deps, req, res, form, { general: 'El formulario caducó. Revisa tus datos y envíalo de nuevo.' }));
  }
  const address = req.ip ?? '0.0.0.0';
  if (failures.blocked(address))
    return void res
      .status(429)
      .type('html')
      .send(page(deps.merchant, 'Demasiados intentos', tooMany(req.baseUrl)));
  const errors = checkForm(form);
  if (Object.keys(errors).length > 0)
    return void res
      .status(422)
      .type('html')
      .send(formPage(deps, req, res, form, errors));
  try {
    const done = await deps.prisma.$transaction((tx) =>
      selfInvoice(tx, deps.payments, {
        code: form.codigo,
        total: form.total,
        receptor: {
          rfc: form.rfc,
          nombre: form.nombre,
          codigoPostal: form.codigoPostal,
          regimenFiscal: form.regimenFiscal,
          usoCfdi: form.usoCfdi,
        },
        email: form.email || null,
      }),
    );
    if (done.created) deps.metrics.ticketsSelfInvoiced.inc();
    deps.logger.info(
      { ticketId: done.ticketId, invoiceId: done.invoiceId, created: done.created, corrected: done.corrected },
      done.created
        ? 'ticket self-invoiced'
        : done.corrected
          ? 'self-invoice corrected by the customer: a new version'
          : 'ticket self-invoiced before: the same invoice',
    );
    res.redirect(303, `${req.baseUrl}/ticket/${done.downloadToken}`);
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    if (error.code === 'ticket_not_found' && failures.fail(address))
      return void res
        .status(429)
        .type('html')
        .send(page(deps.merchant, 'Demasiados intentos', tooMany(req.baseUrl)));
    const answer = refusal(deps, error);
    res
      .status(answer.status)
      .type('html')
      .send(formPage(deps, req, res, form, answer.errors));
  }
}

/** The ticket's page: its invoice ready, being stamped, or in review (and why). */
async function ticketPage(deps: SelfInvoicePageDeps, req: Request<{ token: string }>, res: Response): Promise<void> {
  const found = await invoiceOfToken(deps.prisma, req.params.token);
  if (!found)
    return void res
      .status(404)
      .type('html')
      .send(page(deps.merchant, 'No encontrado', notFound()));
  const { invoice } = found;
  const base = `${req.baseUrl}/ticket/${encodeURIComponent(req.params.token)}`;
  if (invoice.status === 'stamped' || invoice.status === 'cancel_requested' || invoice.status === 'cancelled') {
    res.type('html').send(
      page(
        deps.merchant,
        'Tu factura está lista',
        `<h1>Tu factura está lista</h1>
        <p>Folio fiscal (UUID): <strong>${esc(invoice.uuid)}</strong></p>
        <p>Serie y folio: ${esc(invoice.serie)}-${esc(invoice.folio)} · Total: ${esc(pesos(invoice.total.toFixed(2)))} MXN</p>
        <ul class="downloads">
          <li><a href="${esc(base)}/factura.pdf" download>Descargar PDF</a></li>
          <li><a href="${esc(base)}/factura.xml" download>Descargar XML</a></li>
        </ul>
        ${found.email ? `<p>También la enviamos a <strong>${esc(found.email)}</strong>.</p>` : ''}`,
      ),
    );
    return;
  }
  if (invoice.status === 'pending') {
    // Stamping takes seconds: the page looks again by itself.
    res.set('Refresh', '2');
    res.type('html').send(
      page(
        deps.merchant,
        'Timbrando tu factura',
        `<h1>Estamos timbrando tu factura</h1>
        <p role="status">Esto toma unos segundos; la página se actualiza sola.
        Si no, <a href="${esc(base)}">vuelve a cargarla</a>.</p>`,
      ),
    );
    return;
  }
  // needs_data / stamp_failed: an operator is alerted (invoice metrics); the customer is told why,
  // and may correct their data: the form again, with the same code and total, makes a new version.
  const rule = refusedRule(invoice);
  res.type('html').send(
    page(
      deps.merchant,
      'Tu factura está en revisión',
      `<h1>Tu factura está en revisión</h1>
      <p role="status">No pudimos timbrarla con los datos que nos diste${
        rule ? `: el SAT indica <strong>${esc(rule.code)}</strong> — ${esc(rule.es)}` : '.'
      }</p>
      <p>Si algún dato está mal (tu RFC, nombre, código postal o régimen deben ser los de tu constancia de
      situación fiscal), <a href="${esc(req.baseUrl)}">vuelve a enviar el formulario</a> con el mismo código y total
      del ticket y tus datos corregidos. El comercio ya fue avisado; guarda esta dirección: aquí podrás
      descargar tu factura en cuanto esté lista.</p>`,
    ),
  );
}

async function download(
  deps: SelfInvoicePageDeps,
  format: 'pdf' | 'xml',
  req: Request<{ token: string }>,
  res: Response,
): Promise<void> {
  const found = await invoiceOfToken(deps.prisma, req.params.token);
  const invoice = found?.invoice;
  const stampedXml = invoice ? stampedXmlOf(invoice) : null;
  if (!invoice || !stampedXml || !invoice.uuid)
    return void res
      .status(404)
      .type('html')
      .send(page(deps.merchant, 'No encontrado', notFound()));
  const copy = await customerCopy(
    {
      serie: invoice.serie,
      folio: invoice.folio,
      uuid: invoice.uuid,
      stampedXml,
      cancelled: invoice.status === 'cancelled',
    },
    deps.pdf,
  );
  const file = format === 'pdf' ? copy.pdf : copy.xml;
  res
    .type(format === 'pdf' ? 'application/pdf' : 'application/xml; charset=utf-8')
    .set('Content-Disposition', `attachment; filename="${file.filename}"`)
    .set('Cache-Control', 'private, no-store')
    .send(file.content);
}

/** The SAT rule a refused self-invoice broke, from its problems or the PAC's last answer; undefined if none is named. */
function refusedRule(invoice: { problems: unknown; outbox?: { lastError: string | null }[] }) {
  const text = `${JSON.stringify(invoice.problems ?? '')} ${(invoice.outbox ?? []).map((o) => o.lastError ?? '').join(' ')}`;
  const code = /\b(CFDI40\d{3}|CRP20\d{3})\b/.exec(text)?.[1];
  return code ? SAT_RULES.find((r) => r.code === code) : undefined;
}

async function invoiceOfToken(prisma: PrismaClient, token: string | undefined) {
  if (!token || !/^[\w-]{32}$/.test(token)) return undefined;
  const ticket = await ticketByDownloadToken(prisma, token);
  if (!ticket?.invoiceId) return undefined;
  const invoice = await invoiceForCustomer(prisma, ticket.invoiceId);
  return invoice ? { invoice, email: invoice.payment?.email ?? null } : undefined;
}
