/**
 * The console's frame and small pieces: one page layout (header, navigation, main), an invoice
 * status as a badge, times in Mexico City's clock, an API error as a person reads it. Plain
 * server-rendered HTML with no script; every value escaped.
 */
import { DEFAULT_TIME_ZONE, formatFecha, instantOf } from '@timbra/cfdi-core';
import { escapeHtml as escape } from '../http/html.ts';
import type { ApiError } from './api-client.ts';

export const CONSOLE_PATH = '/console';
export const at = (path: string) => `${CONSOLE_PATH}${path}`;

/** What the layout needs of the session: the sign-out form's token, and whose key it is (name, prefix, organization). */
export interface Chrome {
  keyShown: string;
  signOutToken: string;
}

const STYLE = `
*{box-sizing:border-box}body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
a{color:#0550ae}header{background:#24292f;color:#fff;padding:8px 16px;display:flex;flex-wrap:wrap;gap:4px 18px;align-items:center}
header a,header button{color:#fff}header .brand{font-weight:700;margin-right:8px}header nav{display:flex;flex-wrap:wrap;gap:4px 16px}
header form{margin:0 0 0 auto;display:flex;gap:10px;align-items:center}header button{background:none;border:1px solid #8c959f;border-radius:4px;padding:2px 10px;font:inherit;cursor:pointer}
main{padding:16px;max-width:1200px;margin:0 auto}h1{font-size:22px;margin:4px 0 12px}h2{font-size:18px;margin:24px 0 8px}
.scroll{overflow-x:auto;max-width:100%}table{border-collapse:collapse;width:100%;background:#fff}
th,td{border:1px solid #d0d7de;padding:6px 8px;text-align:left;vertical-align:top}thead th{background:#eaeef2}
th[scope=row]{background:#f6f8fa;width:12em}td.num{text-align:right;white-space:nowrap}code{overflow-wrap:anywhere}td code{white-space:nowrap;overflow-wrap:normal}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:13px;font-weight:600;border:1px solid}
.s-stamped{color:#116329;border-color:#1a7f37;background:#dafbe1}.s-cancelled,.s-cancel_requested{color:#57606a;border-color:#8c959f;background:#eaeef2}
.s-needs_data,.s-stamp_failed{color:#a40e26;border-color:#cf222e;background:#ffebe9}.s-pending,.s-waiting{color:#7d4e00;border-color:#bf8700;background:#fff8c5}
.done{background:#dafbe1;padding:8px 12px;border:1px solid #1a7f37;border-radius:4px}
.problem{background:#ffebe9;padding:8px 12px;border:1px solid #cf222e;border-radius:4px}ul.problem{list-style:none;width:100%;margin:0}
form.box,fieldset{background:#fff;padding:12px;border:1px solid #d0d7de;border-radius:4px;margin:12px 0}
.fields{display:flex;flex-wrap:wrap;gap:10px 16px;align-items:flex-end}.fields label{display:flex;flex-direction:column;font-size:14px;font-weight:600}
input,select,textarea{font:inherit;padding:5px 7px;border:1px solid #6e7781;border-radius:4px;max-width:100%}input[aria-invalid=true]{border:2px solid #cf222e}
button{font:inherit;padding:6px 14px;border-radius:4px;border:1px solid #1f2328;background:#1f883d;color:#fff;cursor:pointer}
button.danger{background:#cf222e;border-color:#82071e}
.hint{font-weight:400;color:#57606a;font-size:13px}
@media (max-width:640px){main{padding:10px}th[scope=row]{width:auto}.fields label{width:100%}.fields input,.fields select{width:100%}}
`;

export function layout(title: string, body: string, chrome?: Chrome): string {
  const nav = chrome
    ? `<nav aria-label="Console"><a href="${at('/invoices')}">Invoices</a><a href="${at('/needs-data')}">Needs data</a><a href="${at('/dead-letters')}">Dead letters</a></nav>
<form method="post" action="${at('/logout')}"><span>${escape(chrome.keyShown)}</span><input type="hidden" name="token" value="${escape(chrome.signOutToken)}"><button type="submit">Sign out</button></form>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(title)} · Timbra console</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>${STYLE}</style></head><body>
<header><span class="brand">Timbra</span>${nav}</header>
<main><h1>${escape(title)}</h1>
${body}</main></body></html>`;
}

export function badge(status: string): string {
  return `<span class="badge s-${escape(status)}">${escape(status.replace('_', ' '))}</span>`;
}

/** An instant as Mexico City's clock shows it: `2026-12-05 11:23:04`. */
export function mexicoTime(iso: string | null | undefined): string {
  return iso ? formatFecha(new Date(iso), DEFAULT_TIME_ZONE).replace('T', ' ') : '—';
}

/** The instant a Mexico City calendar day starts, `days` later. */
export function mexicoDayStart(day: string, days = 0): string {
  const date = new Date(`${day}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() + days);
  return instantOf(`${date.toISOString().slice(0, 10)}T00:00:00`, DEFAULT_TIME_ZONE).toISOString();
}

/** An API error as a person reads it: the message, each detail, the code linked to its explanation. */
export function errorBox(error: ApiError): string {
  const details = Array.isArray(error.details)
    ? (error.details as { path?: string; message?: string; rule?: string; messageEs?: string }[])
    : [];
  return `<div class="problem" role="alert"><p><strong>${escape(error.message)}</strong> (<a href="${escape(error.docUrl)}">${escape(error.code)}</a>)</p>${
    details.length > 0
      ? `<ul>${details
          .map(
            (d) =>
              `<li>${d.rule ? `<strong>${escape(d.rule)}</strong> ` : ''}${d.path ? `<code>${escape(d.path)}</code>: ` : ''}${escape(d.messageEs ?? d.message ?? '')}</li>`,
          )
          .join('')}</ul>`
      : ''
  }</div>`;
}

export function table(head: readonly string[], rows: readonly string[], label: string): string {
  return `<div class="scroll" role="region" aria-label="${escape(label)}" tabindex="0"><table><thead><tr>${head
    .map((h) => `<th scope="col">${escape(h)}</th>`)
    .join('')}</tr></thead><tbody>${rows.join('')}</tbody></table></div>`;
}

export { escape };
