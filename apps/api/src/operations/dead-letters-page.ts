/**
 * The dead-letters page of the queue dashboard (`/admin/queues/dead-letters`, behind its Basic auth):
 * the dead letters as Postgres has them — serie-folio, invoice status, attempts, the failure — each
 * with its re-drive history, and a Retry (a re-drive, with an optional reason) when
 * DASHBOARD_ALLOW_DLQ_RETRY. In platform mode every organization's letters, each naming its
 * organization, each re-drive written in that organization's name. Nothing on it deletes or edits anything. Plain server-rendered HTML:
 * no script, every value escaped, RFCs and XML redacted as on the board.
 */
import { createHmac } from 'node:crypto';
import express, { Router, type Request, type Response } from 'express';
import { isUuid, type PrismaClient } from '@timbra/db';
import {
  deadLetterRows,
  outboxRowWithRedrives,
  recentRedrives,
  redriveDeadLetter,
  refusedForGood,
  type DeadLetterQueue,
} from '@timbra/db/outbox';
import { redactForDashboard } from './dashboard-redact.ts';
import { crossSite, escapeHtml, sameToken } from '../http/html.ts';

export const DEAD_LETTERS_PATH = 'dead-letters';

export interface DeadLettersPageOptions {
  prisma: PrismaClient;
  /**
   * Platform mode: `owner` (the database owner's client) reads every organization's letters, and a
   * re-drive is written on `clientFor` its letter's organization (its history row is its own).
   */
  organizations?: { owner: PrismaClient; clientFor: (organizationId: string) => PrismaClient };
  dlq: DeadLetterQueue;
  allowRetry: boolean;
  /** Keys the forms' anti-forgery tokens (the dashboard password: every API instance shares it). */
  secret: string;
  /** Where the page is mounted (links and redirects). */
  base: string;
}

const KIND: Record<string, string> = { I: 'an Ingreso', E: 'an Egreso', P: 'a Pago' };

const escape = escapeHtml;
const shown = (value: string | null | undefined) => escape(redactForDashboard(value ?? '') as string);
const time = (d: Date | null | undefined) => (d ? d.toISOString().replace('T', ' ').slice(0, 19) + ' UTC' : '—');

function layout(home: string, title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(title)} · Timbra</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
header{background:#24292f;color:#fff;padding:10px 20px}header a{color:#fff;margin-right:16px}
main{padding:20px;max-width:1200px}table{border-collapse:collapse;width:100%;background:#fff}
th,td{border:1px solid #d0d7de;padding:6px 8px;text-align:left;vertical-align:top}th{background:#eaeef2}
.dead{color:#cf222e;font-weight:600}.ok{color:#1a7f37;font-weight:600}.note{background:#fff8c5;padding:8px 12px;border:1px solid #d4a72c}
.done{background:#dafbe1;padding:8px 12px;border:1px solid #1a7f37}form{margin-top:16px;background:#fff;padding:12px;border:1px solid #d0d7de}
textarea{width:100%;max-width:600px}button{font-size:15px;padding:6px 14px;margin-top:8px}
</style></head><body>
<header><a href="${escape(home)}">Queues</a><a href="${escape(home)}/${DEAD_LETTERS_PATH}">Dead letters</a><strong>${escape(title)}</strong></header>
<main>${body}</main></body></html>`;
}

/** The anti-forgery token of a form: the browser sends Basic credentials to any site's form, not this. */
function formToken(secret: string, user: string, outboxId: string): string {
  return createHmac('sha256', secret).update(`redrive\0${user}\0${outboxId}`).digest('base64url');
}

const user = (res: Response) => String(res.locals.dashboardUser ?? 'unknown');
type Send = (res: Response, status: number, title: string, body: string) => void;

export function deadLettersPage(options: DeadLettersPageOptions): Router {
  // What the page reads: every organization's rows in platform mode.
  const prisma = options.organizations?.owner ?? options.prisma;
  const router = Router();
  const home = options.base.slice(0, options.base.lastIndexOf('/'));
  const send = (res: Response, status: number, title: string, body: string): void =>
    void res
      .status(status)
      .type('html')
      .set('Cache-Control', 'no-store')
      .send(layout(home, title, body));

  router.get('/', async (_req, res) => {
    const rows = await deadLetterRows(prisma, 500);
    const recent = await recentRedrives(prisma, 20);
    send(res, 200, `Dead letters (${rows.length})`, listHtml(options, rows, recent));
  });

  router.get('/:id', async (req, res) => {
    const id = String(req.params.id);
    const row = isUuid(id) ? await outboxRowWithRedrives(prisma, id) : null;
    if (!row) return send(res, 404, 'Not found', `<p>No outbox row ${escape(id)}.</p>`);
    const serieFolio = `${row.invoice.serie}-${row.invoice.folio}`;
    const dead = row.status === 'failed';
    // A PAC's permanent refusal: the same bytes get the same answer, so the page says to correct it.
    const permanent = dead && (await refusedForGood(prisma, row.invoice.id));
    const token = formToken(options.secret, user(res), row.id);
    send(
      res,
      200,
      `${dead ? 'Dead letter' : 'Outbox row'} ${serieFolio}`,
      rowHtml(options, row, { permanent, token, redriven: req.query.redriven === '1' }),
    );
  });

  router.post('/:id/retry', express.urlencoded({ extended: false, limit: '8kb' }), (req, res) =>
    retry(options, send, req, res),
  );
  return router;
}

/** A re-drive asked from a letter's page: the form's token checked, the row sent back to the PAC. */
async function retry(options: DeadLettersPageOptions, send: Send, req: Request, res: Response): Promise<void> {
  const id = String(req.params.id);
  if (!options.allowRetry)
    return send(res, 403, 'Retry is off', '<p>DASHBOARD_ALLOW_DLQ_RETRY is not true: nothing was changed.</p>');
  const body = (req.body ?? {}) as { token?: unknown; reason?: unknown; force?: unknown };
  if (!isUuid(id) || crossSite(req) || !sameToken(body.token, formToken(options.secret, user(res), id)))
    return send(res, 403, 'Refused', '<p>The form was not this dashboard’s: nothing was changed.</p>');
  const reason = typeof body.reason === 'string' && body.reason.trim() ? body.reason.trim().slice(0, 500) : undefined;
  const result = await redriveDeadLetter(
    await writerOf(options, id),
    id,
    { by: `dashboard:${user(res)}`, reason, force: body.force === '1' },
    options.dlq,
  );
  if (!result.ok)
    return send(
      res,
      result.reason === 'not_found' ? 404 : 409,
      'Not re-driven',
      `<p>${
        result.reason === 'not_found'
          ? 'No such outbox row.'
          : result.reason === 'permanent_rejection'
            ? 'Permanent: the PAC refused these bytes for good, and would again. Correct the invoice (<code>PATCH /v1/invoices/:id</code> or <code>npm run ops -- invoice:correct</code>); to resend the same bytes anyway, <code>npm run ops -- dlq:retry --force</code>. Nothing was changed.'
            : 'Not a dead letter (any more): nothing was changed.'
      }</p><p><a href="${escape(`${options.base}/${id}`)}">Back</a></p>`,
    );
  res.redirect(303, `${options.base}/${id}?redriven=1`);
}

/** The client a re-drive of `outboxId` is written on: its organization's in platform mode. */
async function writerOf(options: DeadLettersPageOptions, outboxId: string): Promise<PrismaClient> {
  const platform = options.organizations;
  if (!platform) return options.prisma;
  const row = await platform.owner.outboxRow.findUnique({ where: { id: outboxId }, select: { organizationId: true } });
  return row ? platform.clientFor(row.organizationId) : options.prisma;
}

function listHtml(
  options: DeadLettersPageOptions,
  rows: Awaited<ReturnType<typeof deadLetterRows>>,
  recent: Awaited<ReturnType<typeof recentRedrives>>,
): string {
  // Platform mode: which organization each letter is (its id: GET /v1/organizations/:id).
  const org = options.organizations !== undefined;
  return `<p>Outbox rows that failed for good, newest first: the record is Postgres, the <code>stamp-dlq</code> queue shows the same letters. ${
    options.allowRetry
      ? 'Open one to re-drive it: it goes back to the PAC with the same frozen bytes.'
      : 'Retry from here is off (<code>DASHBOARD_ALLOW_DLQ_RETRY=false</code>): re-drive with <code>npm run ops -- dlq:retry &lt;outbox id&gt;</code>.'
  }</p>
${
  rows.length === 0
    ? '<p class="ok">No dead letters.</p>'
    : `<table><thead><tr>${org ? '<th>Organization</th>' : ''}<th>Serie-folio</th><th>Document</th><th>Invoice status</th><th>Failed at</th><th>Attempts</th><th>Failure</th><th>Re-drives</th><th></th></tr></thead><tbody>
${rows
  .map(
    (r) =>
      `<tr data-outbox-id="${escape(r.id)}">${org ? `<td data-organization="${escape(r.organizationId)}">${escape(r.organizationId)}</td>` : ''}<td class="dead">${escape(`${r.invoice.serie}-${r.invoice.folio}`)}</td><td>${escape(r.kind)} of ${escape(KIND[r.invoice.kind] ?? r.invoice.kind)}</td><td>${escape(r.invoice.status)}</td><td>${time(r.updatedAt)}</td><td>${r.attempts}</td><td>${shown(r.lastError)}</td><td>${r._count.redrives}</td><td><a href="${escape(`${options.base}/${r.id}`)}">${options.allowRetry ? 'Open / re-drive' : 'Open'}</a></td></tr>`,
  )
  .join('\n')}
</tbody></table>`
}
<h2>Recent re-drives</h2>
${
  recent.length === 0
    ? '<p>None yet.</p>'
    : `<table><thead><tr><th>When</th><th>Serie-folio</th><th>By</th><th>Why</th><th>The failure it answered</th><th>Invoice now</th></tr></thead><tbody>
${recent
  .map(
    (r) =>
      `<tr><td>${time(r.createdAt)}</td><td><a href="${escape(`${options.base}/${r.outboxId}`)}">${escape(`${r.invoice.serie}-${r.invoice.folio}`)}</a></td><td>${escape(r.by)}</td><td>${shown(r.reason)}</td><td>${shown(r.lastError)}</td><td>${escape(r.invoice.status)}</td></tr>`,
  )
  .join('\n')}
</tbody></table>`
}`;
}

function rowHtml(
  options: DeadLettersPageOptions,
  row: NonNullable<Awaited<ReturnType<typeof outboxRowWithRedrives>>>,
  { permanent, token, redriven }: { permanent: boolean; token: string; redriven: boolean },
): string {
  const serieFolio = `${row.invoice.serie}-${row.invoice.folio}`;
  const dead = row.status === 'failed';
  return `${redriven ? `<p class="done">Re-driven: ${escape(serieFolio)} is back to pending and goes to the PAC with the same frozen bytes.</p>` : ''}
<table>
<tr><th>Serie-folio</th><td class="${dead ? 'dead' : 'ok'}">${escape(serieFolio)}</td></tr>
<tr><th>Document</th><td>${escape(row.kind)} of ${escape(KIND[row.invoice.kind] ?? row.invoice.kind)} · invoice ${escape(row.invoice.id)}</td></tr>
${options.organizations ? `<tr><th>Organization</th><td>${escape(row.organizationId)}</td></tr>` : ''}
<tr><th>Outbox row</th><td>${escape(row.id)} · <strong>${escape(row.status)}</strong> · ${row.attempts} attempt${row.attempts === 1 ? '' : 's'} · updated ${time(row.updatedAt)}</td></tr>
<tr><th>Invoice status</th><td>${escape(row.invoice.status)}${row.invoice.uuid ? ` · UUID ${escape(row.invoice.uuid)}` : ''}</td></tr>
<tr><th>Failure</th><td>${shown(row.lastError) || '—'}</td></tr>
</table>
<h2>Re-drives</h2>
${
  row.redrives.length === 0
    ? '<p>None.</p>'
    : `<table><thead><tr><th>When</th><th>By</th><th>Why</th><th>The failure it answered</th></tr></thead><tbody>${row.redrives
        .map(
          (r) =>
            `<tr><td>${time(r.createdAt)}</td><td>${escape(r.by)}</td><td>${shown(r.reason)}</td><td>${shown(r.lastError)}</td></tr>`,
        )
        .join('')}</tbody></table>`
}
${
  !dead
    ? `<p class="note">Not a dead letter now (status ${escape(row.status)}): nothing to re-drive.</p>`
    : options.allowRetry
      ? `${
          permanent
            ? `<p class="note"><strong>Permanent — correct it:</strong> the PAC refused these bytes for good and would again (<code>PATCH /v1/invoices/${escape(row.invoice.id)}</code>, or <code>npm run ops -- invoice:correct ${escape(serieFolio)}</code>). Resend the same bytes only if what the PAC checked has changed.</p>`
            : ''
        }<form method="post" action="${escape(`${options.base}/${row.id}/retry`)}">
<input type="hidden" name="token" value="${escape(token)}">
<label for="reason">Why (kept in the invoice's history)</label><br>
<textarea id="reason" name="reason" rows="2" maxlength="500" placeholder="e.g. the PAC fixed the emisor's registration"></textarea><br>
${
  permanent
    ? `<input type="checkbox" id="force" name="force" value="1"> <label for="force">What the PAC checked has changed: resend the same bytes</label><br>`
    : ''
}<button type="submit">Retry ${escape(serieFolio)}</button>
</form>`
      : '<p class="note">Retry from the dashboard is off (<code>DASHBOARD_ALLOW_DLQ_RETRY=false</code>): re-drive with <code>npm run ops -- dlq:retry ' +
        escape(row.id) +
        '</code>.</p>'
}`;
}
