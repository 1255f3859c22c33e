/**
 * The console's queues of work that waits on a person, as HTML: invoices that need data (each with
 * the SAT rule it breaks) and their correction form, and dead letters with what to do about each.
 */
import type { Schemas } from '@timbra/client';
import { at, badge, escape, mexicoTime, table } from './layout.ts';
import { problemItem, type Invoice, type InvoiceListItem } from './invoice-pages.ts';

export function needsDataPage(rows: readonly InvoiceListItem[]): string {
  if (rows.length === 0) return '<p class="done" role="status">Nothing needs data: every invoice could be issued.</p>';
  return `<p>These payments were recorded, and their folio is kept, but their CFDI cannot be issued until the data it lacks is given. Correct each: it is then sealed and stamped with the same serie-folio.</p>
${table(
  ['Serie-folio', 'Customer', 'Total', 'Since', 'What is wrong', 'Action'],
  rows.map(
    (i) =>
      `<tr><td><a href="${at(`/invoices/${escape(i.id)}`)}">${escape(i.serieFolio)}</a></td><td>${
        i.receptor ? `${escape(i.receptor.nombre)} <code>${escape(i.receptor.rfc)}</code>` : 'Público en general'
      }</td><td class="num">$${escape(i.total)}</td><td>${mexicoTime(i.createdAt)}</td><td><ul>${(i.problems ?? [])
        .map(problemItem)
        .join(
          '',
        )}</ul></td><td><a href="${at(`/invoices/${escape(i.id)}/correct`)}">Correct ${escape(i.serieFolio)}</a></td></tr>`,
  ),
  'Invoices that need data',
)}`;
}

/** A correction form's fields: the receptor's, the forma de pago, and the single concepto's. */
export const CORRECTION_FIELDS = [
  { name: 'rfc', label: 'Customer RFC', group: 'receptor', xml: ['@Rfc', 'receptor.rfc'] },
  {
    name: 'nombre',
    label: 'Customer name (as in their Constancia)',
    group: 'receptor',
    xml: ['Receptor/@Nombre', 'receptor.nombre'],
  },
  {
    name: 'codigoPostal',
    label: 'Customer postal code',
    group: 'receptor',
    xml: ['@DomicilioFiscalReceptor', 'receptor.codigoPostal'],
  },
  {
    name: 'regimenFiscal',
    label: 'Customer régimen fiscal',
    group: 'receptor',
    xml: ['@RegimenFiscalReceptor', 'receptor.regimenFiscal'],
  },
  { name: 'usoCfdi', label: 'Uso CFDI', group: 'receptor', xml: ['@UsoCFDI', 'receptor.usoCfdi'] },
  { name: 'formaPago', label: 'Forma de pago', group: '', xml: ['@FormaPago', 'formaPago'] },
  {
    name: 'claveProdServ',
    label: 'ClaveProdServ',
    group: 'concepto',
    xml: ['@ClaveProdServ', 'concepto.claveProdServ'],
  },
  { name: 'claveUnidad', label: 'ClaveUnidad', group: 'concepto', xml: ['@ClaveUnidad', 'concepto.claveUnidad'] },
  { name: 'descripcion', label: 'Descripción', group: 'concepto', xml: ['@Descripcion', 'concepto.descripcion'] },
] as const;

export type CorrectionValues = Partial<Record<(typeof CORRECTION_FIELDS)[number]['name'] | 'reason', string>>;

/** The problems about a field (by the XPath of its attribute, or the request field). */
function problemsOf(field: (typeof CORRECTION_FIELDS)[number], problems: readonly Schemas['Problem'][]) {
  return problems.filter((p) => field.xml.some((x) => p.path.endsWith(x) || p.path === x));
}

export function correctionPage(
  invoice: Invoice,
  problems: readonly Schemas['Problem'][],
  values: CorrectionValues,
  form: { token: string; once: string; error?: string | undefined },
): string {
  const id = escape(invoice.id);
  const unplaced = problems.filter((p) => !CORRECTION_FIELDS.some((f) => problemsOf(f, [p]).length > 0));
  const field = (f: (typeof CORRECTION_FIELDS)[number]) => {
    const mine = problemsOf(f, problems);
    const described = mine.length ? ` aria-invalid="true" aria-describedby="${f.name}-problem"` : '';
    return `<label for="${f.name}">${escape(f.label)}<input id="${f.name}" name="${f.name}" value="${escape(values[f.name] ?? '')}"${described}></label>${
      mine.length ? `<ul id="${f.name}-problem" class="problem">${mine.map(problemItem).join('')}</ul>` : ''
    }`;
  };
  return `<p>${badge(invoice.status)} ${escape(invoice.serieFolio)} · $${escape(invoice.total)} · <a href="${at(`/invoices/${id}`)}">the invoice</a></p>
${form.error ?? ''}
${problems.length ? `<div class="problem"><p><strong>The rules it breaks</strong></p><ul>${problems.map(problemItem).join('')}</ul></div>` : ''}
<form class="box" method="post" action="${at(`/invoices/${id}/correct`)}">
<input type="hidden" name="token" value="${escape(form.token)}"><input type="hidden" name="once" value="${escape(form.once)}">
<p class="hint">Change what is wrong; a field left as it is is not sent. The corrected CFDI is checked by the SAT rules before anything is written.</p>
<fieldset><legend>Customer</legend><div class="fields">${CORRECTION_FIELDS.filter((f) => f.group === 'receptor')
    .map(field)
    .join('')}</div></fieldset>
<fieldset><legend>Payment and concepto <span class="hint">(empty: as they are)</span></legend><div class="fields">${CORRECTION_FIELDS.filter(
    (f) => f.group !== 'receptor',
  )
    .map(field)
    .join('')}</div></fieldset>
${unplaced.length ? `<div class="problem"><p>Also:</p><ul>${unplaced.map(problemItem).join('')}</ul></div>` : ''}
<div class="fields"><label for="reason">Why <span class="hint">(kept in its history)</span><input id="reason" name="reason" value="${escape(values.reason ?? '')}" size="50" required maxlength="500"></label>
<button type="submit">Correct and issue ${escape(invoice.serieFolio)}</button></div>
</form>`;
}

/** A dead letter as the page lists it: the invoice, its outbox row, and whether the PAC refused it for good. */
export interface DeadLetter {
  invoice: Invoice;
  outboxId: string | undefined;
  lastError: string;
  permanent: boolean;
}

export function deadLettersPage(
  letters: readonly DeadLetter[],
  form: (outboxId: string) => { token: string; once: string },
): string {
  if (letters.length === 0)
    return '<p class="done" role="status">No dead letters: nothing waits on the PAC for you.</p>';
  return `<p>Invoices the worker stopped trying to stamp. Each keeps its serie-folio and its frozen document; what to do depends on why it stopped.</p>
${table(
  ['Serie-folio', 'Since', 'Why it stopped', 'What to do'],
  letters.map((l) => {
    const sf = escape(l.invoice.serieFolio);
    const todo = l.permanent
      ? `The PAC refused this document for good: the same bytes would be refused again. <a href="${at(`/invoices/${escape(l.invoice.id)}/correct`)}">Correct ${sf}</a> (it is proven unstamped, then sealed again).`
      : l.outboxId
        ? `It failed on errors that may pass (the PAC down, timeouts). Once the PAC answers again, retry it: the same bytes are sent, so it cannot be stamped twice.
<form method="post" action="${at(`/dead-letters/${escape(l.outboxId)}/retry`)}"><input type="hidden" name="token" value="${escape(form(l.outboxId).token)}"><input type="hidden" name="once" value="${escape(form(l.outboxId).once)}">
<label for="why-${escape(l.outboxId)}">Why <input id="why-${escape(l.outboxId)}" name="reason" size="24" maxlength="500"></label> <button type="submit">Retry ${sf}</button></form>`
        : 'Its outbox row is not dead any more.';
    return `<tr><td><a href="${at(`/invoices/${escape(l.invoice.id)}`)}">${sf}</a></td><td>${mexicoTime(l.invoice.updatedAt)}</td><td>${escape(l.lastError)}</td><td>${todo}</td></tr>`;
  }),
  'Dead letters',
)}`;
}
