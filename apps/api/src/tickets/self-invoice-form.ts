/**
 * The self-invoicing page's form: its fields, how they are read and checked (the SAT's rules as the
 * customer can fix them), the CSRF double-submit token, and the HTML of each page (Spanish, no script).
 */

import { randomBytes, timingSafeEqual } from 'node:crypto';
import { type Request, type Response } from 'express';
import { Rfc } from '@nodecfdi/rfc';
import {
  catalogs,
  isBlank,
  parseAmount,
  rfcKind,
  SAT_RULES,
  usoCfdiAllowed,
  type ValidationIssue,
  hasNonXmlChar,
  type PdfOptions,
} from '@timbra/cfdi-core';
import type { Logger } from 'pino';
import type { PrismaClient } from '@timbra/db';
import type { Metrics } from '../http/metrics.ts';
import type { RecordPaymentDeps } from '../payments/record-payment.ts';
import type { GlobalSettings } from './record-tickets.ts';
import type { DomainError } from '../domain-errors.ts';
import type { Merchant } from './self-invoice-html.ts';

export const SELF_INVOICE_PATH = '/facturar';

export interface SelfInvoicePageDeps {
  prisma: PrismaClient;
  payments: RecordPaymentDeps & { global?: GlobalSettings };
  logger: Logger;
  metrics: Metrics;
  /** The merchant at the top: its name (EMISOR_NOMBRE) and its logo (the PDFs'). */
  merchant: Merchant;
  /** POSTs an address may make a minute (SELF_INVOICE_REQUESTS_PER_MINUTE, default 20). */
  requestsPerMinute: number;
  /** Failed ticket lookups an address may make a minute (SELF_INVOICE_FAILURES_PER_MINUTE, default 5). */
  failuresPerMinute: number;
  /** How the PDF is printed (fonts, the merchant's logo). */
  pdf: Omit<PdfOptions, 'cancelled'>;
}

export const FIELDS = [
  'codigo',
  'total',
  'rfc',
  'nombre',
  'codigoPostal',
  'regimenFiscal',
  'usoCfdi',
  'email',
] as const;
export type Field = (typeof FIELDS)[number];
/** The fields as typed, and whether the customer confirmed an RFC whose check digit does not match. */
export type Form = Record<Field, string> & { rfcConfirmado?: boolean };
export type Errors = Partial<Record<Field | 'general', string>>;

export const LABELS: Record<Field, string> = {
  codigo: 'Código del ticket',
  total: 'Total del ticket',
  rfc: 'RFC',
  nombre: 'Nombre o razón social',
  codigoPostal: 'Código postal de tu domicilio fiscal',
  regimenFiscal: 'Régimen fiscal',
  usoCfdi: 'Uso del CFDI',
  email: 'Correo electrónico (opcional)',
};

export const CSRF_COOKIE = 'timbra_csrf';

/** The uses a customer may pick for a purchase: c_UsoCFDI in force, but Pagos' (CP01) and nómina's (CN01). */
export const PAGE_USOS: [string, (typeof catalogs.C_USO_CFDI)[string]][] = Object.entries(catalogs.C_USO_CFDI).filter(
  ([code, u]) => u.validTo === null && code !== 'CP01' && code !== 'CN01',
);

export function emptyForm(): Form {
  return Object.fromEntries(FIELDS.map((f) => [f, ''])) as Record<Field, string>;
}

export function readForm(body: Record<string, unknown>): Form {
  const value = (f: Field) => (typeof body[f] === 'string' ? body[f].trim().slice(0, 300) : '');
  const form: Form = Object.fromEntries(FIELDS.map((f) => [f, value(f)])) as Record<Field, string>;
  form.rfc = form.rfc.toUpperCase().replace(/\s/g, '');
  form.nombre = form.nombre.toUpperCase().replace(/\s+/g, ' ');
  if (body.rfcConfirmado === '1') form.rfcConfirmado = true;
  return form;
}

/** The checks a person can act on, in Spanish, before any ticket is looked up. */
export function checkForm(form: Form): Errors {
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
export function refusal(deps: SelfInvoicePageDeps, error: DomainError): { status: number; errors: Errors } {
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

export const RULE_TEXT = new Map(SAT_RULES.map((r) => [r.code, r.es]));

/** Issues of the SAT rules (or the request's checks) on the fields they are about. */
export function issuesToErrors(issues: readonly ValidationIssue[]): Errors {
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

export function csrfOk(req: Request): boolean {
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

export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return undefined;
}

/** The form's CSRF token: the cookie's when it has one, else a new one set now. */
export function csrfToken(req: Request, res: Response): string {
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
