/** The self-invoicing pages as HTML: the form with its errors, the ticket's page, the refusals. */
import { type Request, type Response } from 'express';
import { Rfc } from '@nodecfdi/rfc';
import { catalogs, rfcKind, usoCfdiAllowed } from '@timbra/cfdi-core';
import { escapeHtml as esc } from '../http/html.ts';
import {
  SELF_INVOICE_PATH,
  LABELS,
  PAGE_USOS,
  csrfToken,
  type SelfInvoicePageDeps,
  type Field,
  type Form,
  type Errors,
} from './self-invoice-form.ts';

export function formPage(deps: SelfInvoicePageDeps, req: Request, res: Response, form: Form, errors: Errors): string {
  const token = csrfToken(req, res);
  const kind = rfcKind(form.rfc);
  const persona = kind === 'fisica' || kind === 'moral' ? kind : undefined;
  // Once the RFC (persona) and the régimen are known, only what the SAT allows with them is offered.
  const regimenes = Object.entries(catalogs.REGIMEN_FISCAL).filter(([, r]) => !persona || r.applies.includes(persona));
  const regimenOk = regimenes.some(([code]) => code === form.regimenFiscal);
  const usos = PAGE_USOS.filter(
    ([code]) => !persona || !regimenOk || usoCfdiAllowed(code, form.regimenFiscal, persona),
  );
  const field = (f: Field, input: string, hint?: string) => fieldHtml(f, errors[f], input, hint);
  const text = (f: Field, attrs = '') => `<input type="text" value="${esc(form[f])}" ${attrs}>`;
  const select = (f: Field, options: [string, { name: string }][], prompt: string) =>
    selectHtml(form[f], options, prompt);
  return page(
    deps.merchant,
    'Factura tu compra',
    `<h1>Factura tu compra</h1>
    <p>Escribe el código y el total de tu ticket y tus datos tal como aparecen en tu constancia de situación fiscal.
    Puedes facturar mientras el periodo de tu compra siga abierto.</p>
    ${errorSummary(errors)}
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

/** A labelled field, its hint and its error tied to the input (aria-invalid, aria-describedby). */
function fieldHtml(f: Field, error: string | undefined, input: string, hint?: string): string {
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
}

function selectHtml(value: string, options: [string, { name: string }][], prompt: string): string {
  return `<select required>
      <option value="">${prompt}</option>
      ${options
        .map(
          ([code, o]) =>
            `<option value="${code}"${value === code ? ' selected' : ''}>${code} — ${esc(o.name)}</option>`,
        )
        .join('')}
    </select>`;
}

/** The errors listed at the top, each linked to its field. */
function errorSummary(errors: Errors): string {
  const list = Object.entries(errors).filter(([, m]) => m);
  if (list.length === 0) return '';
  return `<div class="summary" role="alert" tabindex="-1">
            <h2>Revisa ${list.length === 1 ? 'este dato' : 'estos datos'}</h2>
            <ul>${list
              .map(([f, m]) =>
                f === 'general'
                  ? `<li>${esc(m)}</li>`
                  : `<li><a href="#${f}">${LABELS[f as Field]}</a>: ${esc(m)}</li>`,
              )
              .join('')}</ul>
          </div>`;
}

export function off(): string {
  return '<h1>No disponible</h1><p>Este comercio no ofrece la facturación en línea de tickets.</p>';
}

export function notFound(): string {
  return '<h1>No encontrado</h1><p>Esta dirección no corresponde a ninguna factura. Revisa el enlace.</p>';
}

export function tooMany(form: string): string {
  return `<h1>Demasiados intentos</h1><p role="alert">Por seguridad, espera un minuto antes de intentarlo de nuevo.</p>
    <p><a href="${esc(form || SELF_INVOICE_PATH)}">Volver al formulario</a></p>`;
}

/** "1160.00" → "$1,160.00". */
export function pesos(amount: string): string {
  const [units, cents] = amount.split('.');
  return `$${units!.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}.${cents}`;
}

/** Who the page is for: the merchant's name, and its logo (the one on its PDFs) when it has one. */
export interface Merchant {
  name: string;
  logo?: Buffer | undefined;
  /** Its colour (INVOICE_COLOR, its organization's `branding.color`): the header and the buttons. */
  color?: string | undefined;
}

/** The logo inline (the page loads nothing from elsewhere): PNG or JPEG, as checked when configured. */
function logoImg(logo: Buffer | undefined): string {
  if (!logo) return '';
  const type = logo[0] === 0x89 ? 'image/png' : 'image/jpeg';
  return `<img src="data:${type};base64,${logo.toString('base64')}" alt="" height="40"> `;
}

export function page(merchant: Merchant, title: string, body: string): string {
  // Checked where it is configured (BRAND_COLOR: #RRGGBB, dark enough for white text).
  const brand = merchant.color && /^#[0-9a-f]{6}$/i.test(merchant.color) ? merchant.color : '#12355b';
  return `<!doctype html>
<html lang="es">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${esc(title)} · ${esc(merchant.name)}</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; color: #1b1b1b; background: #f6f7f9; margin: 0; }
  header { background: ${brand}; color: #fff; padding: 0.75rem 1.25rem; }
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
  button { font: inherit; font-weight: 600; background: ${brand}; color: #fff; border: 0; border-radius: 4px; padding: 0.6rem 1.2rem; cursor: pointer; }
  button:focus, input:focus, select:focus, a:focus { outline: 3px solid #f0b400; outline-offset: 2px; }
  .downloads a { font-weight: 600; }
</style>
</head>
<body>
<header>${logoImg(merchant.logo)}${esc(merchant.name)} · Facturación</header>
<main>
${body}
</main>
</body>
</html>`;
}
