/**
 * `npm run ops -- <command>` — operations on the stamping pipeline:
 *   outbox:stats                     rows by status and the oldest not-done age
 *   dlq:list                         dead-lettered outbox rows (failed), newest first
 *   dlq:retry <outboxId> | --all     put dead-lettered rows back to pending (same frozen bytes)
 *   invoice:show <id|uuid|serie-folio>  an invoice and its history (outbox rows, PAC attempts)
 *   invoices:needs-data              invoices that need data (money arrived, no CFDI yet), oldest first
 *   invoice:versions <id|uuid|serie-folio>  the versions of its frozen document and its corrections
 *   invoice:correct <id|serie-folio> --api-url URL --api-key KEY [--set field=value]… [--reason TEXT]
 *                                    PATCH /v1/invoices/:id through the API (the rules' and the
 *                                    folio's owner): fields receptor.rfc, receptor.nombre,
 *                                    receptor.codigoPostal, receptor.regimenFiscal, receptor.usoCfdi,
 *                                    tipoCambio, formaPago, concepto.claveProdServ, concepto.claveUnidad,
 *                                    concepto.descripcion; --reason alone re-freezes with a fresh Fecha
 *   keys:create <name> [--scopes read,write,cancel,admin]
 *                                    a new API key (printed once, stored hashed); default scopes
 *                                    read, write, cancel
 *   keys:list                        every API key: name, prefix, scopes, source, last used, revoked
 *   keys:revoke <name|prefix|id>     revoke a key: refused at once on every API instance
 *   keys:purge                       delete expired Idempotency-Key records
 *   webhooks:failed [--since ISO]    signed provider events that could not be recorded (poison
 *                                    events, stored as failed), newest first, with their reasons
 *   reconcile --ledger-url URL --admin-token T [--since ISO] [--fix [--execute]]
 *                                    compare a PAC ledger (the sandbox's) with our invoices:
 *                                    orphan stamps and duplicates; exit 1 when any. --fix proposes
 *                                    the repair of each duplicate (cancel the other UUIDs, motivo 01,
 *                                    replaced by ours; never both); --execute queues those
 *                                    cancellations for the worker
 * Options: --json. Exit 0 on success, 1 on a problem, 64 on bad usage. Needs DATABASE_URL.
 */
import { parseArgs } from 'node:util';
import {
  ApiKeyNameTaken,
  createApiKey,
  createPrisma,
  DEFAULT_SCOPES,
  isScope,
  listApiKeys,
  revokeApiKey,
  SCOPES,
  oldestOpenOutboxAgeSeconds,
  outboxCountsByStatus,
  purgeExpiredIdempotencyKeys,
  redriveOutboxRow,
  requestDuplicateCancellation,
} from '@timbra/db';
import { proposeFixes, reconcile, sandboxLedger } from './reconcile.ts';

/** A command given the wrong arguments: its message, exit 64. */
class UsageError extends Error {}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    all: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    'ledger-url': { type: 'string' },
    'admin-token': { type: 'string' },
    since: { type: 'string' },
    fix: { type: 'boolean', default: false },
    execute: { type: 'boolean', default: false },
    'api-url': { type: 'string' },
    'api-key': { type: 'string' },
    set: { type: 'string', multiple: true },
    reason: { type: 'string' },
    scopes: { type: 'string' },
  },
});
const out = (value: unknown, text: string) => process.stdout.write(`${values.json ? JSON.stringify(value) : text}\n`);
const url = process.env.DATABASE_URL;
if (!url) {
  process.stderr.write('DATABASE_URL is not set\n');
  process.exit(1);
}
const prisma = createPrisma(url, { poolSize: 2 });
const [command, target] = positionals;

try {
  const since = values.since ? new Date(values.since) : undefined;
  if (command === 'webhooks:failed' && since && Number.isNaN(since.getTime())) {
    process.stderr.write('--since must be an ISO 8601 time\n');
    process.exitCode = 64;
  } else if (command === 'webhooks:failed') {
    const rows = await prisma.webhookEvent.findMany({
      where: { result: 'failed', ...(since ? { receivedAt: { gte: since } } : {}) },
      orderBy: { receivedAt: 'desc' },
      take: 500,
      select: { provider: true, eventId: true, type: true, reason: true, receivedAt: true },
    });
    out(
      rows,
      rows.length === 0
        ? 'no failed webhook events'
        : rows
            .map((r) => `${r.receivedAt.toISOString()}  ${r.provider}  ${r.eventId}  ${r.type}  ${r.reason ?? ''}`)
            .join('\n'),
    );
  } else if (command === 'dlq:list') {
    const rows = await prisma.outboxRow.findMany({
      where: { status: 'failed' },
      orderBy: { updatedAt: 'desc' },
      take: 500,
      include: { invoice: { select: { serie: true, folio: true } } },
    });
    out(
      rows.map((r) => ({
        outboxId: r.id,
        invoiceId: r.invoiceId,
        serieFolio: `${r.invoice.serie}-${r.invoice.folio}`,
        attempts: r.attempts,
        lastError: r.lastError,
        failedAt: r.updatedAt,
      })),
      rows.length === 0
        ? 'no dead letters'
        : rows
            .map((r) => `${r.id}  ${r.invoice.serie}-${r.invoice.folio}  attempts=${r.attempts}  ${r.lastError ?? ''}`)
            .join('\n'),
    );
  } else if (command === 'dlq:retry' && (target || values.all)) {
    const ids = values.all
      ? (await prisma.outboxRow.findMany({ where: { status: 'failed' }, select: { id: true } })).map((r) => r.id)
      : [target!];
    const results = [];
    for (const id of ids) results.push({ id, ...(await redriveOutboxRow(prisma, id)) });
    const failed = results.filter((r) => !r.ok);
    out(
      results,
      results
        .map((r) => `${r.id}  ${r.ok ? 're-driven: pending' : `not re-driven: ${'reason' in r ? r.reason : ''}`}`)
        .join('\n') || 'no dead letters',
    );
    process.exitCode = failed.length > 0 ? 1 : 0;
  } else if (command === 'outbox:stats') {
    const rows = await outboxCountsByStatus(prisma, { includeDone: true });
    const stats = {
      byStatus: Object.fromEntries(rows.map((r) => [r.status, r.n])),
      oldestNotDoneSeconds: await oldestOpenOutboxAgeSeconds(prisma),
    };
    out(
      stats,
      `${rows.map((r) => `${r.status}: ${r.n}`).join('  ') || 'empty'}\noldest not done: ${Math.round(stats.oldestNotDoneSeconds)} s`,
    );
  } else if (command === 'invoices:needs-data') {
    const rows = await prisma.invoice.findMany({
      where: { status: 'needs_data' },
      orderBy: { createdAt: 'asc' },
      take: 500,
      select: { id: true, serie: true, folio: true, kind: true, createdAt: true, problems: true, paymentId: true },
    });
    out(
      rows,
      rows.length === 0
        ? 'no invoice needs data'
        : rows
            .map(
              (r) =>
                `${r.id}  ${r.serie}-${r.folio}  ${r.kind}  since ${r.createdAt.toISOString()}  ${(
                  (r.problems as { rule?: string; path: string }[] | null) ?? []
                )
                  .map((p) => p.rule ?? p.path)
                  .join(', ')}`,
            )
            .join('\n'),
    );
  } else if (command === 'invoice:versions' && target) {
    const invoice = await prisma.invoice.findFirst({
      where: invoiceWhere(target),
      include: { versions: { orderBy: { version: 'asc' } }, corrections: { orderBy: { createdAt: 'asc' } } },
    });
    if (!invoice) {
      process.stderr.write(`no invoice ${target}\n`);
      process.exitCode = 1;
    } else {
      const versions = invoice.versions.map((v) => ({
        version: v.version,
        fecha: v.fecha,
        reason: v.reason,
        createdBy: v.createdBy,
        createdAt: v.createdAt,
        supersededAt: v.supersededAt,
        proof: v.proof,
      }));
      const corrections = invoice.corrections.map((c) => ({
        id: c.id,
        status: c.status,
        code: c.code,
        detail: c.detail,
        fromVersion: c.fromVersion,
        toVersion: c.toVersion,
        reason: c.reason,
        requestedBy: c.requestedBy,
        createdAt: c.createdAt,
      }));
      out(
        {
          invoiceId: invoice.id,
          version: invoice.version,
          status: invoice.status,
          uuid: invoice.uuid,
          versions,
          corrections,
        },
        [
          `${invoice.serie}-${invoice.folio}  ${invoice.status}  version ${invoice.version}${invoice.uuid ? `  stamped ${invoice.uuid}` : ''}`,
          ...(versions.length === 0 ? ['  version 1 (the only one)'] : []),
          ...versions.map(
            (v) =>
              `  v${v.version}  Fecha ${v.fecha}  ${v.reason} (${v.createdBy})${v.supersededAt ? `  superseded ${v.supersededAt.toISOString()}` : ''}`,
          ),
          ...corrections.map(
            (c) =>
              `  correction ${c.id}  ${c.status}${c.code ? ` ${c.code}` : ''}  v${c.fromVersion}→${c.toVersion ?? '?'}  ${c.reason}`,
          ),
        ].join('\n'),
      );
    }
  } else if (command === 'invoice:correct' && target && values['api-url'] && values['api-key']) {
    const body: Record<string, unknown> = values.reason ? { reason: values.reason } : {};
    for (const pair of values.set ?? []) {
      const [path, ...rest] = pair.split('=');
      const [head, field] = path!.split('.');
      if (!head || rest.length === 0) throw new UsageError(`--set ${pair}: expected field=value`);
      const value = rest.join('=');
      if (field) body[head] = { ...(body[head] ?? {}), [field]: value };
      else body[head] = value;
    }
    const invoice = await prisma.invoice.findFirst({ where: invoiceWhere(target), select: { id: true } });
    if (!invoice) throw new UsageError(`no invoice ${target}`);
    const response = await fetch(`${values['api-url'].replace(/\/$/, '')}/v1/invoices/${invoice.id}`, {
      method: 'PATCH',
      headers: {
        authorization: `Bearer ${values['api-key']}`,
        'content-type': 'application/json',
        'idempotency-key': `ops-${invoice.id}-${Date.now()}`,
      },
      body: JSON.stringify(body),
    });
    const answer = await response.json();
    out(answer, `${response.status}  ${JSON.stringify(answer)}`);
    process.exitCode = response.ok ? 0 : 1;
  } else if (command === 'invoice:show' && target) {
    const invoice = await prisma.invoice.findFirst({
      where: invoiceWhere(target),
      include: { outbox: { orderBy: { createdAt: 'asc' } }, attempts: { orderBy: { createdAt: 'asc' } } },
    });
    if (!invoice) {
      process.stderr.write(`no invoice ${target}\n`);
      process.exitCode = 1;
    } else {
      const { frozenXml: _f, stampedXml: _s, tfdXml: _t, cadenaOriginal: _c, request: _r, ...summary } = invoice;
      out(
        summary,
        [
          `${invoice.serie}-${invoice.folio}  ${invoice.kind}  ${invoice.status}  ${invoice.uuid ?? '(no UUID)'}  total ${invoice.total.toFixed(2)} ${invoice.moneda}`,
          `stamp key ${invoice.stampKey}${invoice.pac ? `  pac ${invoice.pac}` : ''}`,
          ...invoice.outbox.map(
            (o) =>
              `  outbox ${o.kind} ${o.status} attempts=${o.attempts}${o.lastError ? ` last_error=${o.lastError}` : ''}`,
          ),
          ...invoice.attempts.map(
            (a) =>
              `  ${a.createdAt.toISOString()}  ${a.pac}  ${a.outcome}${a.code ? ` ${a.code}` : ''}${a.uuid ? ` ${a.uuid}` : ''}  ${a.durationMs} ms`,
          ),
        ].join('\n'),
      );
    }
  } else if (command === 'keys:create') {
    if (!target) throw new UsageError('keys:create <name> [--scopes read,write,cancel,admin]');
    const scopes = values.scopes ? values.scopes.split(',').map((s) => s.trim()) : [...DEFAULT_SCOPES];
    const unknown = scopes.filter((s) => !isScope(s));
    if (unknown.length > 0)
      throw new UsageError(`--scopes: ${unknown.join(', ')}: the scopes are ${SCOPES.join(', ')}`);
    try {
      const made = await createApiKey(prisma, target, [...new Set(scopes.filter(isScope))]);
      out(
        { key: made.key, ...made.apiKey },
        `${made.key}\n(API key ${made.apiKey.name}, scopes ${made.apiKey.scopes.join(', ')}: shown this once, stored hashed)`,
      );
    } catch (error) {
      if (!(error instanceof ApiKeyNameTaken)) throw error;
      process.stderr.write(`${error.message}\n`);
      process.exitCode = 1;
    }
  } else if (command === 'keys:list') {
    const keys = await listApiKeys(prisma);
    out(
      keys,
      keys
        .map(
          (k) =>
            `${k.name.padEnd(20)} ${(k.prefix ?? '—').padEnd(9)} ${k.scopes.join(',').padEnd(24)} ${k.source.padEnd(6)} last used ${k.lastUsedAt?.toISOString() ?? 'never'}${k.revokedAt ? `  REVOKED ${k.revokedAt.toISOString()}` : ''}`,
        )
        .join('\n') || 'no API keys',
    );
  } else if (command === 'keys:revoke') {
    if (!target) throw new UsageError('keys:revoke <name|prefix|id>');
    const revoked = await revokeApiKey(prisma, target);
    if (!revoked) {
      process.stderr.write(`no single API key named ${target} (name, prefix or id)\n`);
      process.exitCode = 1;
    } else out(revoked, `API key ${revoked.name} revoked at ${revoked.revokedAt!.toISOString()}`);
  } else if (command === 'keys:purge') {
    const count = await purgeExpiredIdempotencyKeys(prisma);
    out({ purged: count }, `purged ${count} expired idempotency keys`);
  } else if (command === 'reconcile' && values['ledger-url'] && values['admin-token']) {
    const ledger = await sandboxLedger(values['ledger-url'], values['admin-token']).list(values.since);
    const invoices = await prisma.invoice.findMany({
      where: { uuid: { not: null } },
      select: { id: true, uuid: true },
    });
    const invoiceOf = new Map(invoices.map((i) => [i.uuid!.toUpperCase(), i.id]));
    const result = reconcile(ledger, new Set(invoiceOf.keys()));
    const fixes = values.fix ? proposeFixes(result.duplicates, invoiceOf) : [];
    const executed = [];
    if (values.fix && values.execute) {
      for (const fix of fixes) {
        if (!('keep' in fix)) continue;
        for (const duplicateUuid of fix.cancel)
          executed.push({
            duplicateUuid,
            ...(await requestDuplicateCancellation(prisma, { invoiceId: fix.invoiceId, duplicateUuid })),
          });
      }
    }
    out(
      { ...result, ...(values.fix ? { fixes, executed } : {}) },
      [
        `${result.stamps} stamps in the ledger, ${invoiceOf.size} UUIDs in the database`,
        `orphans: ${result.orphans.length}${result.orphans.map((o) => `\n  ${o.uuid} (${o.instance}${o.customid ? `, key ${o.customid}` : ''})`).join('')}`,
        `duplicates: ${result.duplicates.length}${result.duplicates.map((d) => `\n  by ${d.by} ${d.key}: ${d.uuids.join(', ')}`).join('')}`,
        ...(values.fix
          ? [
              `fixes${values.execute ? ' (queued)' : ' (proposed; --execute queues them)'}: ${fixes.length}${fixes
                .map((f) =>
                  'keep' in f
                    ? `\n  keep ${f.keep}; cancel ${f.cancel.join(', ')} (motivo 01, replaced by ${f.keep})`
                    : `\n  skipped ${f.skipped.join(', ')}: ${f.reason}`,
                )
                .join('')}`,
            ]
          : []),
      ].join('\n'),
    );
    process.exitCode = result.orphans.length + result.duplicates.length > 0 ? 1 : 0;
  } else {
    process.stderr.write(
      'usage: npm run ops -- outbox:stats | dlq:list | dlq:retry <outboxId>|--all | invoice:show <id|uuid|serie-folio> | invoices:needs-data | invoice:versions <id|uuid|serie-folio> | invoice:correct <id|serie-folio> --api-url URL --api-key KEY [--set field=value]… [--reason TEXT] | keys:create <name> [--scopes …] | keys:list | keys:revoke <name|prefix|id> | keys:purge | webhooks:failed [--since ISO] | reconcile --ledger-url URL --admin-token T [--since ISO] [--fix [--execute]]  [--json]\n',
    );
    process.exitCode = 64;
  }
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exitCode = 64;
} finally {
  await prisma.$disconnect();
}

/** Which invoice a command names: its id or UUID, its serie-folio, or its stamp key. */
function invoiceWhere(target: string) {
  const serieFolio = /^(.+)-(\d+)$/.exec(target);
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(target))
    return { OR: [{ uuid: target.toUpperCase() }, { id: target.toLowerCase() }] };
  return serieFolio ? { serie: serieFolio[1]!, folio: Number(serieFolio[2]) } : { stampKey: target };
}
