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
import { randomBytes, timingSafeEqual } from 'node:crypto';
import express, { Router, type Request, type Response } from 'express';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';
import type { Logger } from 'pino';
import { Rfc } from '@nodecfdi/rfc';
import {
  catalogs,
  customerCopy,
  isBlank,
  parseAmount,
  rfcKind,
  SAT_RULES,
  usoCfdiAllowed,
  type PdfOptions,
  type ValidationIssue,
  hasNonXmlChar,
} from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import { invoiceForCustomer } from '@timbra/db/invoices';
import { ticketByDownloadToken } from '@timbra/db/tickets';
import { FailureLimiter } from '../http/failure-limiter.ts';
import { escapeHtml as esc } from '../http/html.ts';
import type { Metrics } from '../http/metrics.ts';
import { DomainError } from '../domain-errors.ts';
import type { RecordPaymentDeps } from '../payments/record-payment.ts';
import type { GlobalSettings } from './record-tickets.ts';
import { selfInvoice } from './self-invoice.ts';

export const SELF_INVOICE_PATH = '/facturar';

export interface SelfInvoicePageDeps {
  prisma: PrismaClient;
  payments: RecordPaymentDeps & { global?: GlobalSettings };
  logger: Logger;
  metrics: Metrics;
  /** The merchant's name at the top (EMISOR_NOMBRE). */
  merchant: string;
  /** POSTs an address may make a minute (SELF_INVOICE_REQUESTS_PER_MINUTE, default 20). */
  requestsPerMinute: number;
  /** Failed ticket lookups an address may make a minute (SELF_INVOICE_FAILURES_PER_MINUTE, default 5). */
  failuresPerMinute: number;
  /** How the PDF is printed (fonts, the merchant's logo). */
  pdf: Omit<PdfOptions, 'cancelled'>;
}

const FIELDS = ['codigo', 'total', 'rfc', 'nombre', 'codigoPostal', 'regimenFiscal', 'usoCfdi', 'email'] as const;
type Field = (typeof FIELDS)[number];
/** The fields as typed, and whether the customer confirmed an RFC whose check digit does not match. */
type Form = Record<Field, string> & { rfcConfirmado?: boolean };
type Errors = Partial<Record<Field | 'general', string>>;

const LABELS: Record<Field, string> = {
  codigo: 'Código del ticket',
  total: 'Total del ticket',
  rfc: 'RFC',
  nombre: 'Nombre o razón social',
  codigoPostal: 'Código postal de tu domicilio fiscal',
  regimenFiscal: 'Régimen fiscal',
  usoCfdi: 'Uso del CFDI',
  email: 'Correo electrónico (opcional)',
};

const CSRF_COOKIE = 'timbra_csrf';

/** The uses a customer may pick for a purchase: c_UsoCFDI in force, but Pagos' (CP01) and nómina's (CN01). */
const PAGE_USOS = Object.entries(catalogs.C_USO_CFDI).filter(
  ([code, u]) => u.validTo === null && code !== 'CP01' && code !== 'CN01',
);

export function selfInvoicePage(deps: SelfInvoicePageDeps): Router {
  const router = Router();
  const failures = new FailureLimiter({ perAddress: deps.failuresPerMinute, perPrefix: Number.MAX_SAFE_INTEGER });
  const limiter = rateLimit({
    windowMs: 60_000,
    limit: deps.requestsPerMinute,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    keyGenerator: (req) => ipKeyGenerator(req.ip ?? '0.0.0.0'),
    handler: (_req, res) => {
      res
        .status(429)
        .type('html')
        .send(page(deps.merchant, 'Demasiados intentos', tooMany()));
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

  router.post(
    '/',
    limiter,
    express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 20 }),
    async (req, res) => {
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
          .send(
            formPage(deps, req, res, form, { general: 'El formulario caducó. Revisa tus datos y envíalo de nuevo.' }),
          );
      }
      const address = req.ip ?? '0.0.0.0';
      if (failures.blocked(address))
        return void res
          .status(429)
          .type('html')
          .send(page(deps.merchant, 'Demasiados intentos', tooMany()));
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
            .send(page(deps.merchant, 'Demasiados intentos', tooMany()));
        const answer = refusal(deps, error);
        res
          .status(answer.status)
          .type('html')
          .send(formPage(deps, req, res, form, answer.errors));
      }
    },
  );

  router.get('/ticket/:token', async (req, res) => {
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
  });

  const download = (format: 'pdf' | 'xml') => async (req: Request<{ token: string }>, res: Response) => {
    const found = await invoiceOfToken(deps.prisma, req.params.token);
    const invoice = found?.invoice;
    if (!invoice?.stampedXml || !invoice.uuid)
      return void res
        .status(404)
        .type('html')
        .send(page(deps.merchant, 'No encontrado', notFound()));
    const copy = await customerCopy(
      {
        serie: invoice.serie,
        folio: invoice.folio,
        uuid: invoice.uuid,
        stampedXml: invoice.stampedXml,
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
  };
  router.get('/ticket/:token/factura.pdf', download('pdf'));
  router.get('/ticket/:token/factura.xml', download('xml'));
  return router;
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

function emptyForm(): Form {
  return Object.fromEntries(FIELDS.map((f) => [f, ''])) as Record<Field, string>;
}

function readForm(body: Record<string, unknown>): Form {
  const value = (f: Field) => (typeof body[f] === 'string' ? body[f].trim().slice(0, 300) : '');
  const form: Form = Object.fromEntries(FIELDS.map((f) => [f, value(f)])) as Record<Field, string>;
  form.rfc = form.rfc.toUpperCase().replace(/\s/g, '');
  form.nombre = form.nombre.toUpperCase().replace(/\s+/g, ' ');
  if (body.rfcConfirmado === '1') form.rfcConfirmado = true;
  return form;
}

/** The checks a person can act on, in Spanish, before any ticket is looked up. */
function checkForm(form: Form): Errors {
  const errors: Errors = {};
  if (!form.codigo) errors.codigo = 'Escribe el código impreso en tu ticket.';
  if (!parseAmount(form.total.replace(/[$\s,]/g, ''), 'MXN').ok)
    errors.total = 'Escribe el total del ticket, por ejemplo 1160.00.';
  const kind = rfcKind(form.rfc);
  const digit = Rfc.parseOrNull(form.rfc);
  if (kind === null)
    errors.rfc = 'El RFC no tiene un formato válido (12 caracteres para personas morales, 13 para físicas).';
  else if (kind === 'generico') errors.rfc = 'Escribe tu propio RFC: el genérico se usa en la factura global.';
  // Some RFCs the SAT issued do not match their own digit: the customer may confirm theirs is so.
  else if (digit && !digit.doesCheckSumMatch() && !form.rfcConfirmado)
    errors.rfc = `Revisa tu RFC: su último carácter (dígito verificador) debería ser ${digit.calculateChecksum()}. Cópialo de tu constancia de situación fiscal.`;
  if (!form.nombre || isBlank(form.nombre))
    errors.nombre = 'Escribe tu nombre o razón social tal como aparece en tu constancia de situación fiscal.';
  if (!/^\d{5}$/.test(form.codigoPostal)) errors.codigoPostal = 'El código postal tiene 5 dígitos.';
  const regimen = Object.hasOwn(catalogs.REGIMEN_FISCAL, form.regimenFiscal)
    ? catalogs.REGIMEN_FISCAL[form.regimenFiscal]
    : undefined;
  if (!regimen) errors.regimenFiscal = 'Elige tu régimen fiscal.';
  else if ((kind === 'fisica' || kind === 'moral') && !regimen.applies.includes(kind))
    errors.regimenFiscal = `El régimen ${form.regimenFiscal} no aplica a personas ${kind === 'fisica' ? 'físicas' : 'morales'}.`;
  if (!PAGE_USOS.some(([code]) => code === form.usoCfdi)) errors.usoCfdi = 'Elige el uso del CFDI.';
  else if (
    regimen &&
    (kind === 'fisica' || kind === 'moral') &&
    !usoCfdiAllowed(form.usoCfdi, form.regimenFiscal, kind)
  )
    errors.usoCfdi = `El uso ${form.usoCfdi} no está permitido para el régimen ${form.regimenFiscal}: elige uno de la lista.`;
  if (form.email && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(form.email)) errors.email = 'El correo no parece válido.';
  // What no invoice can carry (a NUL, a control character pasted in): said beside the field.
  for (const field of FIELDS)
    if (hasNonXmlChar(form[field]))
      errors[field] = 'Tiene un carácter invisible que no puede ir en una factura: escríbelo de nuevo.';
  return errors;
}

/** A use case's refusal, as the page shows it. */
function refusal(deps: SelfInvoicePageDeps, error: DomainError): { status: number; errors: Errors } {
  switch (error.code) {
    case 'ticket_not_found':
      return {
        status: 404,
        errors: { codigo: 'No encontramos un ticket con ese código y ese total. Revisa ambos datos.' },
      };
    case 'ticket_already_invoiced':
      return {
        status: 409,
        errors: { general: 'Este ticket ya se facturó a otro RFC. Si es un error, contacta al comercio.' },
      };
    case 'ticket_refunded':
      return {
        status: 409,
        errors: { general: 'Este ticket tuvo una devolución, así que no puede facturarse aquí. Contacta al comercio.' },
      };
    case 'ticket_in_global':
      return {
        status: 409,
        errors: {
          general:
            'El periodo de este ticket ya cerró y la venta se incluyó en la factura global del comercio, como lo permite la regla 2.7.1.21 de la Resolución Miscelánea Fiscal. Ya no puede facturarse por separado desde esta página; contacta al comercio.',
        },
      };
    case 'validation_failed':
      return {
        status: 422,
        errors: issuesToErrors(Array.isArray(error.details) ? (error.details as ValidationIssue[]) : []),
      };
    default:
      deps.logger.warn({ code: error.code }, 'self-invoicing refused');
      return { status: 422, errors: { general: 'No pudimos generar tu factura con estos datos.' } };
  }
}

const RULE_TEXT = new Map(SAT_RULES.map((r) => [r.code, r.es]));

/** Issues of the SAT rules (or the request's checks) on the fields they are about. */
function issuesToErrors(issues: readonly ValidationIssue[]): Errors {
  const errors: Errors = {};
  for (const issue of issues) {
    const field: Field | 'general' = /usocfdi/i.test(issue.path)
      ? 'usoCfdi'
      : /regimenfiscalreceptor|regimenFiscal/i.test(issue.path)
        ? 'regimenFiscal'
        : /domicilio|codigopostal/i.test(issue.path)
          ? 'codigoPostal'
          : /receptor.*nombre|Receptor\/@Nombre/i.test(issue.path)
            ? 'nombre'
            : /receptor.*rfc|Receptor\/@Rfc/i.test(issue.path)
              ? 'rfc'
              : 'general';
    const text = issue.rule
      ? `${RULE_TEXT.get(issue.rule) ?? issue.message} (regla ${issue.rule} del SAT)`
      : issue.message;
    errors[field] = errors[field] ? `${errors[field]} ${text}` : text;
  }
  return errors;
}

function csrfOk(req: Request): boolean {
  const origin = req.get('origin');
  if (origin && origin !== 'null') {
    try {
      if (new URL(origin).host !== req.get('host')) return false;
    } catch {
      return false;
    }
  }
  const cookie = cookieValue(req.get('cookie'), CSRF_COOKIE);
  const field = (req.body as Record<string, unknown> | undefined)?._csrf;
  if (!cookie || typeof field !== 'string' || cookie.length !== field.length) return false;
  return timingSafeEqual(Buffer.from(cookie), Buffer.from(field));
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return undefined;
}

/** The form's CSRF token: the cookie's when it has one, else a new one set now. */
function csrfToken(req: Request, res: Response): string {
  const existing = cookieValue(req.get('cookie'), CSRF_COOKIE);
  if (existing && /^[\w-]{32}$/.test(existing)) return existing;
  const token = randomBytes(24).toString('base64url');
  res.cookie(CSRF_COOKIE, token, {
    httpOnly: true,
    sameSite: 'strict',
    secure: req.secure,
    path: SELF_INVOICE_PATH,
  });
  return token;
}

function formPage(deps: SelfInvoicePageDeps, req: Request, res: Response, form: Form, errors: Errors): string {
  const token = csrfToken(req, res);
  const kind = rfcKind(form.rfc);
  const persona = kind === 'fisica' || kind === 'moral' ? kind : undefined;
  // Once the RFC (persona) and the régimen are known, only what the SAT allows with them is offered.
  const regimenes = Object.entries(catalogs.REGIMEN_FISCAL).filter(([, r]) => !persona || r.applies.includes(persona));
  const regimenOk = regimenes.some(([code]) => code === form.regimenFiscal);
  const usos = PAGE_USOS.filter(
    ([code]) => !persona || !regimenOk || usoCfdiAllowed(code, form.regimenFiscal, persona),
  );
  const list = Object.entries(errors).filter(([, m]) => m);
  const field = (f: Field, input: string, hint?: string) => {
    const error = errors[f];
    const describedBy = [hint ? `${f}-ayuda` : '', error ? `${f}-error` : ''].filter(Boolean).join(' ');
    return `<div class="field${error ? ' invalid' : ''}">
      <label for="${f}">${LABELS[f]}</label>
      ${hint ? `<p class="hint" id="${f}-ayuda">${hint}</p>` : ''}
      ${error ? `<p class="error" id="${f}-error">${esc(error)}</p>` : ''}
      ${input.replace(
        /^<(input|select)/,
        `<$1 id="${f}" name="${f}"${error ? ' aria-invalid="true"' : ''}${describedBy ? ` aria-describedby="${describedBy}"` : ''}`,
      )}
    </div>`;
  };
  const text = (f: Field, attrs = '') => `<input type="text" value="${esc(form[f])}" ${attrs}>`;
  const select = (f: Field, options: [string, { name: string }][], prompt: string) =>
    `<select required>
      <option value="">${prompt}</option>
      ${options
        .map(
          ([code, o]) =>
            `<option value="${code}"${form[f] === code ? ' selected' : ''}>${code} — ${esc(o.name)}</option>`,
        )
        .join('')}
    </select>`;
  return page(
    deps.merchant,
    'Factura tu compra',
    `<h1>Factura tu compra</h1>
    <p>Escribe el código y el total de tu ticket y tus datos tal como aparecen en tu constancia de situación fiscal.
    Puedes facturar mientras el periodo de tu compra siga abierto.</p>
    ${
      list.length > 0
        ? `<div class="summary" role="alert" tabindex="-1">
            <h2>Revisa ${list.length === 1 ? 'este dato' : 'estos datos'}</h2>
            <ul>${list
              .map(([f, m]) =>
                f === 'general'
                  ? `<li>${esc(m)}</li>`
                  : `<li><a href="#${f}">${LABELS[f as Field]}</a>: ${esc(m)}</li>`,
              )
              .join('')}</ul>
          </div>`
        : ''
    }
    <form method="post" action="${esc(req.baseUrl || SELF_INVOICE_PATH)}" novalidate>
      <input type="hidden" name="_csrf" value="${esc(token)}">
      <fieldset>
        <legend>Tu ticket</legend>
        ${field('codigo', text('codigo', 'autocomplete="off" spellcheck="false" required'), 'Los 10 caracteres impresos como «Código de facturación».')}
        ${field('total', text('total', 'inputmode="decimal" required'), 'En pesos, con centavos: 1160.00')}
      </fieldset>
      <fieldset>
        <legend>Tus datos fiscales</legend>
        ${field('rfc', text('rfc', 'autocomplete="off" spellcheck="false" maxlength="13" required'))}
        ${
          Rfc.parseOrNull(form.rfc)?.doesCheckSumMatch() === false
            ? `<div class="field"><input type="checkbox" id="rfcConfirmado" name="rfcConfirmado" value="1"${form.rfcConfirmado ? ' checked' : ''}>
              <label for="rfcConfirmado">Mi RFC es correcto tal como aparece en mi constancia de situación fiscal (el SAT emitió algunos con otro dígito verificador)</label></div>`
            : ''
        }
        ${field('nombre', text('nombre', 'autocomplete="name" required'), 'Sin «S.A. de C.V.» ni otro régimen societario.')}
        ${field('codigoPostal', text('codigoPostal', 'inputmode="numeric" maxlength="5" autocomplete="postal-code" required'))}
        ${field('regimenFiscal', select('regimenFiscal', regimenes, 'Elige tu régimen'))}
        ${field(
          'usoCfdi',
          select('usoCfdi', usos, 'Elige el uso'),
          persona && regimenOk
            ? `Solo los usos que el SAT permite con el régimen ${esc(form.regimenFiscal)}.`
            : undefined,
        )}
        ${field('email', `<input type="email" value="${esc(form.email)}" autocomplete="email">`, 'Te enviamos ahí el PDF y el XML.')}
      </fieldset>
      <button type="submit">Generar factura</button>
    </form>`,
  );
}

function off(): string {
  return '<h1>No disponible</h1><p>Este comercio no ofrece la facturación en línea de tickets.</p>';
}

function notFound(): string {
  return '<h1>No encontrado</h1><p>Esta dirección no corresponde a ninguna factura. Revisa el enlace.</p>';
}

function tooMany(): string {
  return `<h1>Demasiados intentos</h1><p role="alert">Por seguridad, espera un minuto antes de intentarlo de nuevo.</p>
    <p><a href="${SELF_INVOICE_PATH}">Volver al formulario</a></p>`;
}

/** "1160.00" → "$1,160.00". */
function pesos(amount: string): string {
  const [units, cents] = amount.split('.');
  return `$${units!.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}.${cents}`;
}

function page(merchant: string, title: string, body: string): string {
  return `<!doctype html>
<html lang="es">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${esc(title)} · ${esc(merchant)}</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; color: #1b1b1b; background: #f6f7f9; margin: 0; }
  header { background: #12355b; color: #fff; padding: 0.75rem 1.25rem; }
  main { max-width: 40rem; margin: 1.5rem auto; background: #fff; padding: 1.5rem; border-radius: 8px; }
  fieldset { border: 1px solid #c9ced6; border-radius: 6px; margin: 0 0 1rem; padding: 0.5rem 1rem 1rem; }
  legend { font-weight: 600; padding: 0 0.25rem; }
  .field { margin-top: 0.75rem; }
  label { display: block; font-weight: 600; }
  input, select { width: 100%; box-sizing: border-box; font: inherit; padding: 0.5rem; border: 1px solid #767676; border-radius: 4px; }
  .hint { margin: 0.1rem 0 0.3rem; color: #4a4a4a; font-size: 0.9rem; }
  .error { margin: 0.1rem 0 0.3rem; color: #b00020; font-weight: 600; }
  .invalid input, .invalid select { border: 2px solid #b00020; }
  .summary { border: 2px solid #b00020; border-radius: 6px; padding: 0.5rem 1rem; margin-bottom: 1rem; }
  .summary h2 { font-size: 1.1rem; margin: 0.25rem 0; color: #b00020; }
  button { font: inherit; font-weight: 600; background: #12355b; color: #fff; border: 0; border-radius: 4px; padding: 0.6rem 1.2rem; cursor: pointer; }
  button:focus, input:focus, select:focus, a:focus { outline: 3px solid #f0b400; outline-offset: 2px; }
  .downloads a { font-weight: 600; }
</style>
</head>
<body>
<header>${esc(merchant)} · Facturación</header>
<main>
${body}
</main>
</body>
</html>`;
}
