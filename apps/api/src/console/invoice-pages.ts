/**
 * The console's invoice pages as HTML: the search with its results, and one invoice with its
 * documents, what can be done with it, and its whole history. Data in, markup out: the API calls
 * are console-app.ts's.
 */
import type { Schemas } from '@timbra/client';
import { INVOICE_STATUSES } from '@timbra/db/invoices';
import { at, badge, escape, mexicoTime, table } from './layout.ts';

export type InvoiceListItem = Schemas['InvoiceSummary'] & {
  receptor: { rfc: string; nombre: string } | null;
  createdAt: string;
};

export interface Search {
  q: string;
  rfc: string;
  status: string;
  from: string;
  to: string;
}

const KIND: Record<string, string> = { I: 'Ingreso', E: 'Egreso', P: 'Pago' };

export function searchForm(s: Search): string {
  const option = (value: string, label: string) =>
    `<option value="${escape(value)}"${s.status === value ? ' selected' : ''}>${escape(label)}</option>`;
  return `<form class="box" method="get" action="${at('/invoices')}" role="search" aria-label="Invoices">
<div class="fields">
<label for="q">UUID or serie-folio <input id="q" name="q" value="${escape(s.q)}" placeholder="A-12" size="38"></label>
<label for="rfc">Customer RFC <input id="rfc" name="rfc" value="${escape(s.rfc)}" size="15" autocomplete="off"></label>
<label for="status">Status <select id="status" name="status">${option('', 'any')}${INVOICE_STATUSES.map((st) => option(st, st.replace('_', ' '))).join('')}</select></label>
<label for="from">Created from <input id="from" name="from" type="date" value="${escape(s.from)}"></label>
<label for="to">to <input id="to" name="to" type="date" value="${escape(s.to)}"></label>
<button type="submit">Search</button>
</div><p class="hint">Dates are Mexico City days, both included.</p></form>`;
}

export function invoiceRows(rows: readonly InvoiceListItem[]): string {
  if (rows.length === 0) return '<p>No invoices match.</p>';
  return table(
    ['Serie-folio', 'Type', 'Status', 'Customer', 'Total', 'Created (Mexico City)', 'UUID'],
    rows.map(
      (i) =>
        `<tr><td><a href="${at(`/invoices/${escape(i.id)}`)}">${escape(i.serieFolio)}</a></td><td>${escape(KIND[i.kind] ?? i.kind)}</td><td>${badge(i.status)}</td><td>${
          i.receptor ? `${escape(i.receptor.nombre)}<br><code>${escape(i.receptor.rfc)}</code>` : 'Público en general'
        }</td><td class="num">$${escape(i.total)}</td><td>${mexicoTime(i.createdAt)}</td><td><code>${escape(i.uuid ?? '—')}</code></td></tr>`,
    ),
    'Invoices found',
  );
}

export type Invoice = Schemas['Invoice'];
type Versions = {
  versions: {
    version: number;
    fecha: string;
    reason: string;
    createdBy: string;
    createdAt: string;
    current: boolean;
    stamped: boolean;
  }[];
};
type Delivery = Schemas['Delivery'];
type Event = Schemas['Event'];

/** What can be done with an invoice, each form with its anti-forgery token and idempotency key. */
export interface InvoiceActions {
  token: (action: string) => string;
  /** A fresh Idempotency-Key for each form: sent twice (a double click), it is done once. */
  once: () => string;
  notice?: string | undefined;
  /** The customer as the payment recorded it (none for a global). */
  customer?: { receptor: { rfc: string; nombre: string } | null; email: string | null } | undefined;
}

export function invoicePage(
  invoice: Invoice,
  versions: Versions,
  deliveries: Delivery[],
  events: Event[],
  act: InvoiceActions,
): string {
  return `${act.notice ? `<p class="done" role="status">${escape(act.notice)}</p>` : ''}
${summary(invoice, act.customer)}
${documents(invoice)}
${actions(invoice, act)}
<h2>History</h2>
${historyTables(invoice, versions, deliveries, events)}`;
}

function summary(i: Invoice, customer: InvoiceActions['customer']): string {
  const metadata = Object.entries((i.metadata ?? {}) as Record<string, string>);
  const row = (label: string, value: string) => `<tr><th scope="row">${escape(label)}</th><td>${value}</td></tr>`;
  return `<div class="scroll" role="region" aria-label="Invoice" tabindex="0"><table>
${row('Status', badge(i.status))}
${row('Type', escape(KIND[i.kind] ?? i.kind))}
${row('Customer', customerCell(customer))}
${row('UUID', `<code>${escape(i.uuid ?? 'not stamped yet')}</code>`)}
${row('Total', `$${escape(i.total)} ${escape(i.moneda)}`)}
${row('Fecha (CFDI)', escape(i.fecha ?? '—'))}
${row('Stamped', i.stampedAt ? `${mexicoTime(i.stampedAt)} by ${escape(i.pac ?? '')}` : '—')}
${row('Version', String(i.version))}
${i.paymentId ? row('Payment', `<code>${escape(i.paymentId)}</code>`) : ''}
${i.relatedInvoiceId ? row('Related to', `<a href="${at(`/invoices/${escape(i.relatedInvoiceId)}`)}">the invoice it relates to</a>`) : ''}
${i.replacedByInvoiceId ? row('Replaced by', `<a href="${at(`/invoices/${escape(i.replacedByInvoiceId)}`)}">its replacement</a>`) : ''}
${row('Metadata', metadata.length ? metadata.map(([k, v]) => `<code>${escape(k)}</code> = ${escape(v)}`).join('<br>') : '—')}
</table></div>${
    i.problems && i.problems.length > 0
      ? `<div class="problem"><p><strong>Why it cannot be issued</strong></p><ul>${i.problems.map(problemItem).join('')}</ul><p><a href="${at(`/invoices/${escape(i.id)}/correct`)}">Correct it</a></p></div>`
      : ''
  }`;
}

function customerCell(customer: InvoiceActions['customer']): string {
  if (!customer) return '—';
  const who = customer.receptor
    ? `${escape(customer.receptor.nombre)} <code>${escape(customer.receptor.rfc)}</code>`
    : 'Público en general';
  return `${who}${customer.email ? ` · ${escape(customer.email)}` : ''}`;
}

export function problemItem(p: Schemas['Problem']): string {
  return `<li>${p.rule ? `<strong>${escape(p.rule)}</strong>: ` : ''}${escape(p.messageEs ?? p.message)}${
    p.messageEs ? ` <span class="hint">(${escape(p.message)})</span>` : ''
  } <code>${escape(p.path)}</code></li>`;
}

function documents(i: Invoice): string {
  const stamped = i.status === 'stamped' || i.status === 'cancel_requested' || i.status === 'cancelled';
  const links = [
    stamped ? `<a href="${at(`/invoices/${escape(i.id)}/pdf`)}">PDF</a>` : '',
    i.status !== 'needs_data' && i.status !== 'waiting'
      ? `<a href="${at(`/invoices/${escape(i.id)}/xml`)}">XML${stamped ? '' : ' (frozen, not stamped)'}</a>`
      : '',
  ].filter(Boolean);
  return links.length ? `<h2>Documents</h2><p>${links.join(' · ')}</p>` : '';
}

const MOTIVOS: [string, string][] = [
  ['02', '02 — Comprobante emitido con errores sin relación'],
  ['01', '01 — Comprobante emitido con errores con relación (give the replacement’s UUID)'],
  ['03', '03 — No se llevó a cabo la operación'],
  ['04', '04 — Operación nominativa relacionada en una factura global'],
];

function actions(i: Invoice, act: InvoiceActions): string {
  const id = escape(i.id);
  const hidden = (action: string) =>
    `<input type="hidden" name="token" value="${escape(act.token(action))}"><input type="hidden" name="once" value="${escape(act.once())}">`;
  const forms: string[] = [];
  if (i.status === 'stamped' || i.status === 'cancelled')
    forms.push(`<form class="box" method="post" action="${at(`/invoices/${id}/email`)}"><h3>Send the customer's copy again</h3>${hidden(`email:${i.id}`)}
<div class="fields"><label for="to">To <span class="hint">(empty: the payment's address)</span><input id="to" name="to" type="email" autocomplete="email" size="30"></label>
<button type="submit">Resend email</button></div></form>`);
  if (i.status === 'stamped')
    forms.push(`<form class="box" method="post" action="${at(`/invoices/${id}/cancel`)}"><h3>Cancel at the SAT</h3>${hidden(`cancel:${i.id}`)}
<div class="fields"><label for="motivo">Motivo <select id="motivo" name="motivo">${MOTIVOS.map(([v, l]) => `<option value="${v}">${escape(l)}</option>`).join('')}</select></label>
<label for="folioSustitucion">Replacement UUID <span class="hint">(motivo 01 only)</span><input id="folioSustitucion" name="folioSustitucion" size="38"></label>
<button type="submit" class="danger">Cancel ${escape(i.serieFolio)}</button></div></form>`);
  if (i.status === 'needs_data' || i.status === 'stamp_failed')
    forms.push(
      `<p><a href="${at(`/invoices/${id}/correct`)}">Correct this invoice</a>${
        i.status === 'stamp_failed' ? ` · <a href="${at('/dead-letters')}">Dead letters</a>` : ''
      }</p>`,
    );
  return forms.length ? `<h2>Actions</h2>${forms.join('\n')}` : '';
}

function historyTables(i: Invoice, versions: Versions, deliveries: Delivery[], events: Event[]): string {
  const h = i.history;
  return [
    section(
      'Versions',
      ['Version', 'Fecha', 'Why', 'By', 'When', 'State'],
      versions.versions.map(
        (v) =>
          `<tr><td>${v.version}</td><td>${escape(v.fecha)}</td><td>${escape(v.reason)}</td><td>${escape(v.createdBy)}</td><td>${mexicoTime(v.createdAt)}</td><td>${[v.current ? 'current' : '', v.stamped ? 'stamped' : ''].filter(Boolean).join(', ')}</td></tr>`,
      ),
    ),
    section(
      'PAC calls',
      ['When', 'PAC', 'Version', 'Outcome', 'Code', 'Duration'],
      h.pacAttempts.map(
        (a) =>
          `<tr><td>${mexicoTime(a.at)}</td><td>${escape(a.pac)}</td><td>${a.version}</td><td>${escape(a.outcome)}</td><td>${escape(a.code ?? '')}</td><td class="num">${a.durationMs ?? ''} ms</td></tr>`,
      ),
    ),
    section(
      'Outbox',
      ['Kind', 'Status', 'Attempts', 'Last error', 'Updated'],
      h.outbox.map(
        (o) =>
          `<tr><td>${escape(o.kind)}</td><td>${escape(o.status)}</td><td>${o.attempts}</td><td>${escape(o.lastError ?? '')}</td><td>${mexicoTime(o.updatedAt)}</td></tr>`,
      ),
    ),
    section(
      'Re-drives',
      ['When', 'By', 'Why', 'The failure it answered'],
      (h.redrives ?? []).map(
        (r) =>
          `<tr><td>${mexicoTime(r.at)}</td><td>${escape(r.by)}</td><td>${escape(r.reason ?? '')}</td><td>${escape(r.lastError ?? '')}</td></tr>`,
      ),
    ),
    section(
      'Corrections',
      ['When', 'Status', 'Why', 'By', 'Versions'],
      (h.corrections ?? []).map(
        (c) =>
          `<tr><td>${mexicoTime(c.createdAt)}</td><td>${escape(c.status)}</td><td>${escape(c.reason ?? '')}</td><td>${escape(c.requestedBy)}</td><td>${c.fromVersion} → ${c.toVersion ?? '…'}</td></tr>`,
      ),
    ),
    section(
      'Cancellations',
      ['When', 'Motivo', 'Status', 'SAT status', 'Why'],
      (i.cancellations ?? []).map(
        (c) =>
          `<tr><td>${mexicoTime(c.createdAt)}</td><td>${escape(c.motivo)}</td><td>${escape(c.status)}</td><td>${escape(c.estatusCancelacion ?? '')}</td><td>${escape(c.reason ?? '')}</td></tr>`,
      ),
    ),
    section(
      'Emails and webhooks',
      ['When', 'Channel', 'Event', 'To', 'Status', 'Attempts', 'Last error'],
      deliveries.map(
        (d) =>
          `<tr><td>${mexicoTime(d.createdAt)}</td><td>${escape(d.channel)}</td><td>${escape(d.eventType)}</td><td>${escape(d.recipient ?? d.endpointId ?? '')}</td><td>${escape(d.status)}</td><td>${d.attempts}</td><td>${escape(d.lastError ?? '')}</td></tr>`,
      ),
    ),
    section(
      'Events',
      ['When', 'Type', 'Id'],
      events.map(
        (e) =>
          `<tr><td>${mexicoTime(e.createdAt)}</td><td>${escape(e.type)}</td><td><code>${escape(e.id)}</code></td></tr>`,
      ),
    ),
  ].join('\n');
}

function section(title: string, head: string[], rows: string[]): string {
  return `<h3>${escape(title)}</h3>${rows.length ? table(head, rows, title) : '<p>None.</p>'}`;
}
