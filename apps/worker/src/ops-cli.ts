/**
 * `npm run ops -- <command>`: operations on the stamping pipeline. `npm run ops -- --help` lists the
 * commands, `npm run ops -- <command> --help` explains one. Settings are the worker's (DATABASE_URL,
 * REDIS_URL, QUEUE_PREFIX, each also as `<NAME>_FILE`). Exit codes: 0 done; 1 a problem found or an
 * operation refused; 2 bad usage; 3 could not check (the PAC ledger unreachable or not covering the
 * window asked for).
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { resolve } from 'node:path';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { CSD_EXPIRY_WARNING_DAYS, csdExpiry, noCertificadoOf, rfcOf } from '@timbra/cfdi-core/csd';
import {
  API_KEY_NAME_RULE,
  databaseTrouble,
  DEFAULT_SCOPES,
  isApiKeyName,
  isScope,
  isUuid,
  SCOPES,
} from '@timbra/db/light';
import type { PrismaClient } from '@timbra/db';
import type { Queue } from 'bullmq';
import { parseSince } from './since.ts';

// Only what parsing needs is imported above (the light entries of @timbra/db and cfdi-core's CSD
// module). The data layer, BullMQ, the reconciliation and the worker's settings (config-schema.ts:
// the worker's schema without the CFDI domain its start-up checks load) are loaded by the command
// that uses them: `--help` and a usage mistake need none of them.
const dbLib = () => import('@timbra/db');

/** Bad usage found after parsing (a malformed id, an unknown scope): exit 2, like the parser's own. */
class UsageError extends Error {}
/** A check that could not be made (or, for a command that acts, nothing done): exit 3. */
class CannotCheck extends Error {}

const uuidArg = (what: string) => (value: string) => {
  if (!isUuid(value)) throw new InvalidArgumentError(`${what} is a UUID (e.g. from dlq:list)`);
  return value.toLowerCase();
};

let json = false;
const out = (value: unknown, text: string) => process.stdout.write(`${json ? JSON.stringify(value) : text}\n`);
const fail = (message: string, code = 1) => {
  process.stderr.write(`${message}\n`);
  process.exitCode = code;
};

// The database (and Redis) are opened by the first command that needs them: --help needs neither.
let prismaClient: PrismaClient | undefined;
async function config() {
  const { loadOpsConfig } = await import('./config-schema.ts');
  try {
    return loadOpsConfig(process.env);
  } catch (error) {
    throw new CannotCheck((error as Error).message);
  }
}
async function db(): Promise<PrismaClient> {
  if (!prismaClient) {
    const { DATABASE_URL } = await config();
    prismaClient = (await dbLib()).createPrisma(DATABASE_URL, { poolSize: 2 });
  }
  return prismaClient;
}

/** Which invoice a command names: its id or UUID, its serie-folio, or its stamp key. */
function invoiceWhere(target: string) {
  const serieFolio = /^(.+)-(\d+)$/.exec(target);
  if (isUuid(target)) return { OR: [{ uuid: target.toUpperCase() }, { id: target.toLowerCase() }] };
  return serieFolio ? { serie: serieFolio[1]!, folio: Number(serieFolio[2]) } : { stampKey: target };
}

/** The stamp-dlq queue, for settling letters after a re-drive; undefined when Redis does not answer. */
async function deadLetterQueue(): Promise<{ dlq: Queue; close: () => Promise<void> } | undefined> {
  const { REDIS_URL, REDIS_CLUSTER, QUEUE_PREFIX } = await config();
  const [{ connectRedis, redisTarget, STAMP_DLQ }, { Queue }] = await Promise.all([dbLib(), import('bullmq')]);
  const redis = connectRedis(redisTarget(REDIS_URL, REDIS_CLUSTER), {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 3000,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
  } catch {
    redis.disconnect();
    return undefined;
  }
  const dlq = new Queue(STAMP_DLQ, { connection: redis, prefix: QUEUE_PREFIX });
  return {
    dlq,
    close: async () => {
      await dlq.close();
      await redis.quit();
    },
  };
}

const program = new Command('npm run ops --')
  .description("Operations on the stamping pipeline (the worker's settings: DATABASE_URL, REDIS_URL, QUEUE_PREFIX).")
  .option('--json', 'print JSON instead of text (run `npm run -s ops -- …`: without -s npm prints a banner first)')
  .showHelpAfterError('(npm run ops -- --help lists the commands)')
  .addHelpText(
    'after',
    '\nExit codes: 0 done; 1 a problem found or an operation refused; 2 bad usage; 3 could not check.',
  )
  .hook('preAction', (command) => {
    json = Boolean(command.optsWithGlobals().json);
  });

program
  .command('outbox:stats')
  .description('outbox rows by status, and the age of the oldest not done')
  .action(async () => {
    const prisma = await db();
    const { outboxCountsByStatus, oldestOpenOutboxAgeSeconds } = await dbLib();
    const rows = await outboxCountsByStatus(prisma, { includeDone: true });
    const stats = {
      byStatus: Object.fromEntries(rows.map((r) => [r.status, r.n])),
      oldestNotDoneSeconds: await oldestOpenOutboxAgeSeconds(prisma),
    };
    out(
      stats,
      `${rows.map((r) => `${r.status}: ${r.n}`).join('  ') || 'empty'}\noldest not done: ${Math.round(stats.oldestNotDoneSeconds)} s`,
    );
  });

program
  .command('dlq:list')
  .description('dead letters (outbox rows that failed for good), newest first')
  .action(async () => {
    const prisma = await db();
    const rows = await prisma.outboxRow.findMany({
      where: { status: 'failed' },
      orderBy: { updatedAt: 'desc' },
      take: 500,
      include: { invoice: { select: { serie: true, folio: true } } },
    });
    const { refusedForGood } = await dbLib();
    const permanent = await Promise.all(rows.map((r) => refusedForGood(prisma, r.invoiceId)));
    out(
      rows.map((r, i) => ({
        outboxId: r.id,
        invoiceId: r.invoiceId,
        serieFolio: `${r.invoice.serie}-${r.invoice.folio}`,
        attempts: r.attempts,
        lastError: r.lastError,
        failedAt: r.updatedAt,
        permanent: permanent[i],
      })),
      rows.length === 0
        ? 'no dead letters'
        : rows
            .map(
              (r, i) =>
                `${r.id}  ${r.invoice.serie}-${r.invoice.folio}  attempts=${r.attempts}  ${r.lastError ?? ''}${
                  permanent[i] ? '  — permanent: correct it (PATCH / invoice:correct); dlq:retry needs --force' : ''
                }`,
            )
            .join('\n'),
    );
  });

program
  .command('dlq:retry')
  .description(
    're-drive dead letters: back to pending with the same frozen bytes, recorded (you, now, --reason) in the invoice history',
  )
  .argument('[outboxId]', 'the dead letter (an outbox id from dlq:list)', uuidArg('outboxId'))
  .option('--all', 'every dead letter')
  .option('--reason <text>', 'why, for the audit trail')
  .option('--force', 'resend even what a PAC refused for good (permanent: correct the invoice instead)')
  .action(async (outboxId: string | undefined, options: { all?: boolean; reason?: string; force?: boolean }) => {
    if (!outboxId === !options.all) throw new UsageError('dlq:retry: give an outbox id or --all (not both)');
    const prisma = await db();
    const { redriveDeadLetter } = await dbLib();
    const ids = options.all
      ? (await prisma.outboxRow.findMany({ where: { status: 'failed' }, select: { id: true } })).map((r) => r.id)
      : [outboxId!];
    const queue = ids.length > 0 ? await deadLetterQueue() : undefined;
    const by = `ops:${process.env.TIMBRA_OPERATOR ?? userInfo().username}`;
    const results = [];
    try {
      for (const id of ids)
        results.push({
          id,
          ...(await redriveDeadLetter(prisma, id, { by, reason: options.reason, force: options.force }, queue?.dlq)),
        });
    } finally {
      await queue?.close();
    }
    out(
      results,
      results
        .map((r) =>
          r.ok
            ? `${r.id}  re-driven: pending${r.settled === undefined || r.settled === 'later' ? ' (its letter in stamp-dlq is settled by the worker)' : ''}`
            : r.reason === 'permanent_rejection'
              ? `${r.id}  not re-driven: permanent — the PAC refused it for good (${r.lastError ?? 'no reason kept'}): correct it (PATCH /v1/invoices/${r.invoiceId}, or npm run ops -- invoice:correct), or --force to resend the same bytes`
              : `${r.id}  not re-driven: ${r.reason}`,
        )
        .join('\n') || 'no dead letters',
    );
    process.exitCode = results.some((r) => !r.ok) ? 1 : 0;
  });

program
  .command('deliveries:list')
  .description('emails and webhooks not delivered (dead by default: they wait for a person), newest first')
  .addOption(
    new Option('--status <status>', 'dead, pending (not yet delivered) or delivered')
      .choices(['dead', 'pending', 'delivered'])
      .default('dead'),
  )
  .addOption(new Option('--channel <channel>', 'email or webhook').choices(['email', 'webhook']))
  .action(async (options: { status: 'dead' | 'pending' | 'delivered'; channel?: 'email' | 'webhook' }) => {
    const prisma = await db();
    const rows = await prisma.delivery.findMany({
      where: {
        status: options.status === 'pending' ? { in: ['pending', 'sending'] } : options.status,
        ...(options.channel ? { channel: options.channel } : {}),
      },
      orderBy: { updatedAt: 'desc' },
      take: 500,
      include: { event: { select: { type: true, invoiceId: true } }, endpoint: { select: { url: true } } },
    });
    out(
      rows.map((r) => ({
        deliveryId: r.id,
        channel: r.channel,
        event: r.event.type,
        invoiceId: r.event.invoiceId,
        to: r.recipient ?? r.endpoint?.url,
        status: r.status,
        attempts: r.attempts,
        lastError: r.lastError,
        at: r.updatedAt,
      })),
      rows.length === 0
        ? `no ${options.status} deliveries`
        : rows
            .map(
              (r) =>
                `${r.id}  ${r.channel.padEnd(7)}  ${r.event.type.padEnd(29)}  ${r.recipient ?? r.endpoint?.url ?? ''}  attempts=${r.attempts}  ${r.lastError ?? ''}`,
            )
            .join('\n'),
    );
  });

program
  .command('csd:check')
  .description(
    "when the emisor's CSD expires: exit 1 within --days of its end (30) or past it — renew it at the SAT (CertiSAT) before",
  )
  .option('--cer <path>', 'the certificate (.cer, DER or PEM); default CSD_CER_PATH')
  .addOption(
    new Option('--days <n>', 'how many days before the end it is reported (exit 1)')
      .default(CSD_EXPIRY_WARNING_DAYS)
      .argParser((v) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('a whole number of days');
        return n;
      }),
  )
  .action((options: { cer?: string; days: number }) => {
    const given = options.cer ?? process.env.CSD_CER_PATH;
    if (!given) return fail('csd:check: give --cer or set CSD_CER_PATH', 2);
    // npm runs the CLI from apps/worker; a relative path means where the operator typed it (INIT_CWD).
    const path = resolve(process.env.INIT_CWD ?? process.cwd(), given);
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(readFileSync(path));
    } catch (error) {
      return fail(`csd:check: ${path} is not a certificate (${(error as Error).message})`, 3);
    }
    const expiry = csdExpiry(
      { noCertificado: noCertificadoOf(cert), rfc: rfcOf(cert), validTo: new Date(cert.validTo) },
      new Date(),
      options.days,
    );
    out(
      expiry,
      `${expiry.rfc} CSD ${expiry.noCertificado}: valid until ${expiry.validTo.toISOString()} — ${
        expiry.expired
          ? 'EXPIRED'
          : `${expiry.daysLeft} days left${expiry.expiring ? ` (within ${options.days}: renew it now)` : ''}`
      }`,
    );
    process.exitCode = expiry.expiring ? 1 : 0;
  });

program
  .command('globals:list')
  .description(
    'público en general in global mode: the periods whose factura global was issued (newest first, with each global and its status), and the tickets still open by period',
  )
  .addOption(
    new Option('--since <when>', 'ISO 8601 date or time, or a duration back from now (30m, 12h, 7d)').argParser((v) =>
      parseSince(v),
    ),
  )
  .action(async (options: { since?: Date }) => {
    const prisma = await db();
    const periods = await prisma.globalPeriod.findMany({
      where: options.since ? { issuedAt: { gte: options.since } } : {},
      orderBy: [{ issuedAt: 'desc' }, { id: 'desc' }],
      take: 500,
      include: { invoices: { select: { id: true, serie: true, folio: true, status: true, uuid: true, total: true } } },
    });
    const open = await prisma.ticket.groupBy({
      by: ['periodicidad', 'periodStartsOn'],
      where: { status: 'open' },
      _count: { _all: true },
      orderBy: { periodStartsOn: 'asc' },
    });
    const day = (d: Date) => d.toISOString().slice(0, 10);
    out(
      {
        issued: periods.map((p) => ({
          id: p.id,
          periodicidad: p.periodicidad,
          startsOn: day(p.startsOn),
          endsOn: day(p.endsOn),
          status: p.status,
          tickets: p.tickets,
          total: p.total.toFixed(2),
          issuedBy: p.issuedBy,
          issuedAt: p.issuedAt,
          invoices: p.invoices.map((i) => ({ ...i, total: i.total.toFixed(2) })),
        })),
        open: open.map((o) => ({
          periodicidad: o.periodicidad,
          startsOn: day(o.periodStartsOn),
          tickets: o._count._all,
        })),
      },
      [
        ...(periods.length === 0 ? ['no global issued'] : []),
        ...periods.map(
          (p) =>
            `${day(p.startsOn)}..${day(p.endsOn)}  ${p.status.padEnd(6)}  tickets=${p.tickets}  total=${p.total.toFixed(2)}  by ${p.issuedBy}  ${p.invoices.map((i) => `${i.serie}-${i.folio} ${i.status}${i.uuid ? ` ${i.uuid}` : ''}`).join(', ')}`,
        ),
        ...open.map(
          (o) => `open: period ${day(o.periodStartsOn)} (Periodicidad ${o.periodicidad}): ${o._count._all} ticket(s)`,
        ),
      ].join('\n'),
    );
  });

program
  .command('deliveries:replay')
  .description(
    "send a delivery's event again to the same endpoint or address (a new delivery; receivers dedupe on the event id)",
  )
  .argument('[deliveryId]', 'a delivery (from deliveries:list)', uuidArg('deliveryId'))
  .option('--all-dead', 'every dead delivery (of --channel)')
  .addOption(new Option('--channel <channel>', 'with --all-dead: email or webhook').choices(['email', 'webhook']))
  .action(async (deliveryId: string | undefined, options: { allDead?: boolean; channel?: 'email' | 'webhook' }) => {
    if (!deliveryId === !options.allDead)
      throw new UsageError('deliveries:replay: give a delivery id or --all-dead (not both)');
    const prisma = await db();
    const { replayDelivery } = await dbLib();
    const ids = options.allDead
      ? (
          await prisma.delivery.findMany({
            where: {
              status: 'dead',
              ...(options.channel ? { channel: options.channel } : {}),
              replays: { none: { status: { in: ['pending', 'sending', 'delivered'] } } },
            },
            select: { id: true },
          })
        ).map((r) => r.id)
      : [deliveryId!];
    const by = `ops:${process.env.TIMBRA_OPERATOR ?? userInfo().username}`;
    const results = [];
    for (const id of ids) {
      const replay = await replayDelivery(prisma, id, by);
      results.push(
        !replay
          ? { id, ok: false, reason: 'no such delivery' }
          : 'refused' in replay
            ? { id, ok: false, reason: 'its endpoint is disabled: enable it first (PATCH /v1/webhook-endpoints/:id)' }
            : { id, ok: true, replay: replay.id },
      );
    }
    out(
      results,
      results
        .map((r) => (r.ok ? `${r.id}  replayed as ${r.replay}` : `${r.id}  not replayed: ${r.reason}`))
        .join('\n') || 'no dead deliveries',
    );
    process.exitCode = results.some((r) => !r.ok) ? 1 : 0;
  });

program
  .command('invoice:show')
  .description('an invoice and its history: outbox rows, re-drives, PAC attempts')
  .argument('<invoice>', 'its id, UUID, serie-folio (A-17) or stamp key')
  .action(async (target: string) => {
    const prisma = await db();
    const invoice = await prisma.invoice.findFirst({
      where: invoiceWhere(target),
      include: {
        outbox: { orderBy: { createdAt: 'asc' } },
        attempts: { orderBy: { createdAt: 'asc' } },
        redrives: { orderBy: { createdAt: 'asc' } },
      },
    });
    if (!invoice) return fail(`no invoice ${target}`);
    const { frozenXml: _f, stampedXml: _s, tfdXml: _t, cadenaOriginal: _c, request: _r, ...summary } = invoice;
    out(
      summary,
      [
        `${invoice.serie}-${invoice.folio}  ${invoice.kind}  ${invoice.status}  ${invoice.uuid ?? '(no UUID)'}  total ${invoice.total.toFixed(2)} ${invoice.moneda}`,
        `stamp key ${invoice.stampKey}${invoice.pac ? `  pac ${invoice.pac}` : ''}`,
        ...invoice.outbox.map(
          (o) =>
            `  outbox ${o.id} ${o.kind} ${o.status} attempts=${o.attempts}${o.lastError ? ` last_error=${o.lastError}` : ''}`,
        ),
        ...invoice.redrives.map(
          (r) =>
            `  ${r.createdAt.toISOString()}  re-driven by ${r.by}${r.reason ? ` (${r.reason})` : ''}${r.lastError ? `  after ${r.lastError}` : ''}`,
        ),
        ...invoice.attempts.map(
          (a) =>
            `  ${a.createdAt.toISOString()}  ${a.pac}  ${a.outcome}${a.code ? ` ${a.code}` : ''}${a.uuid ? ` ${a.uuid}` : ''}  ${a.durationMs} ms`,
        ),
      ].join('\n'),
    );
  });

program
  .command('invoices:needs-data')
  .description('invoices that need data (money arrived, no CFDI yet), oldest first')
  .action(async () => {
    const prisma = await db();
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
  });

program
  .command('invoice:versions')
  .description("the versions of an invoice's frozen document, and its corrections")
  .argument('<invoice>', 'its id, UUID, serie-folio (A-17) or stamp key')
  .action(async (target: string) => {
    const prisma = await db();
    const invoice = await prisma.invoice.findFirst({
      where: invoiceWhere(target),
      include: { versions: { orderBy: { version: 'asc' } }, corrections: { orderBy: { createdAt: 'asc' } } },
    });
    if (!invoice) return fail(`no invoice ${target}`);
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
  });

program
  .command('invoice:correct')
  .description(
    'PATCH /v1/invoices/:id through the API (the owner of the rules and the folio); --reason alone re-freezes with a fresh Fecha',
  )
  .argument('<invoice>', 'its id, serie-folio (A-17) or stamp key')
  .requiredOption('--api-url <url>', 'the API, e.g. http://127.0.0.1:3000')
  .requiredOption('--api-key <key>', 'an API key with the write scope')
  .option(
    '--set <field=value>',
    'a field to change (repeatable): receptor.rfc, receptor.nombre, receptor.codigoPostal, receptor.regimenFiscal, receptor.usoCfdi, tipoCambio, formaPago, concepto.claveProdServ, concepto.claveUnidad, concepto.descripcion',
    (value: string, previous: string[]) => [...previous, value],
    [] as string[],
  )
  .option('--reason <text>', 'why, kept with the correction')
  .action(async (target: string, options: { apiUrl: string; apiKey: string; set: string[]; reason?: string }) => {
    const body: Record<string, unknown> = options.reason ? { reason: options.reason } : {};
    for (const pair of options.set) {
      const [path, ...rest] = pair.split('=');
      const [head, field] = path!.split('.');
      if (!head || rest.length === 0) throw new UsageError(`--set ${pair}: expected field=value`);
      const value = rest.join('=');
      if (field) body[head] = { ...(body[head] ?? {}), [field]: value };
      else body[head] = value;
    }
    const prisma = await db();
    const invoice = await prisma.invoice.findFirst({ where: invoiceWhere(target), select: { id: true } });
    if (!invoice) return fail(`no invoice ${target}`);
    const response = await fetch(`${options.apiUrl.replace(/\/$/, '')}/v1/invoices/${invoice.id}`, {
      method: 'PATCH',
      headers: {
        authorization: `Bearer ${options.apiKey}`,
        'content-type': 'application/json',
        'idempotency-key': `ops-${invoice.id}-${Date.now()}`,
      },
      body: JSON.stringify(body),
    });
    const answer = await response.json();
    out(answer, `${response.status}  ${JSON.stringify(answer)}`);
    process.exitCode = response.ok ? 0 : 1;
  });

program
  .command('keys:create')
  .description('a new API key, printed once and stored hashed')
  .argument('<name>', 'its name (letters, digits, _ . -)')
  .option('--scopes <list>', `comma-separated: ${SCOPES.join(', ')}`, DEFAULT_SCOPES.join(','))
  .action(async (name: string, options: { scopes: string }) => {
    if (!isApiKeyName(name)) throw new UsageError(`<name>: ${JSON.stringify(name)} is not ${API_KEY_NAME_RULE}`);
    const scopes = options.scopes.split(',').map((s) => s.trim());
    const unknown = scopes.filter((s) => !isScope(s));
    if (unknown.length > 0)
      throw new UsageError(`--scopes: ${unknown.join(', ')}: the scopes are ${SCOPES.join(', ')}`);
    const prisma = await db();
    const { createApiKey, ApiKeyNameTaken } = await dbLib();
    try {
      const made = await createApiKey(prisma, name, [...new Set(scopes.filter(isScope))]);
      out(
        { key: made.key, ...made.apiKey },
        `${made.key}\n(API key ${made.apiKey.name}, scopes ${made.apiKey.scopes.join(', ')}: shown this once, stored hashed)`,
      );
    } catch (error) {
      if (!(error instanceof ApiKeyNameTaken)) throw error;
      fail(error.message);
    }
  });

program
  .command('keys:list')
  .description('every API key: name, prefix, scopes, source, last used, revoked (never the secret)')
  .action(async () => {
    const prisma = await db();
    const keys = await (await dbLib()).listApiKeys(prisma);
    out(
      keys,
      keys
        .map(
          (k) =>
            `${k.name.padEnd(20)} ${(k.prefix ?? '—').padEnd(9)} ${k.scopes.join(',').padEnd(24)} ${k.source.padEnd(6)} last used ${k.lastUsedAt?.toISOString() ?? 'never'}${k.revokedAt ? `  REVOKED ${k.revokedAt.toISOString()}` : ''}`,
        )
        .join('\n') || 'no API keys',
    );
  });

program
  .command('keys:revoke')
  .description('revoke an API key: refused at once on every API instance')
  .argument('<key>', 'its name, prefix or id')
  .action(async (target: string) => {
    const prisma = await db();
    const revoked = await (await dbLib()).revokeApiKey(prisma, target);
    if (!revoked) return fail(`no single API key named ${target} (name, prefix or id)`);
    out(revoked, `API key ${revoked.name} revoked at ${revoked.revokedAt!.toISOString()}`);
  });

program
  .command('keys:purge')
  .description('delete expired Idempotency-Key records')
  .action(async () => {
    const prisma = await db();
    const count = await (await dbLib()).purgeExpiredIdempotencyKeys(prisma);
    out({ purged: count }, `purged ${count} expired idempotency keys`);
  });

program
  .command('history:prune')
  .description(
    'apply the retention rules now (the sweeper role does it every RETENTION_INTERVAL_MS): done outbox rows, old PAC calls, old provider events; invoices are never deleted',
  )
  .option('--dry-run', 'count what would be deleted (up to 100 batches a table), delete nothing')
  .action(async (options: { dryRun?: boolean }) => {
    const prisma = await db();
    const { pruneHistory, RETENTION_TABLES, retentionDays } = await dbLib();
    const c = await config();
    const policy = (await import('./config-schema.ts')).retentionPolicy(c);
    const rows = await pruneHistory(prisma, policy, {
      batchSize: c.RETENTION_BATCH_SIZE,
      dryRun: Boolean(options.dryRun),
      onBatch: (table, n) => process.stderr.write(`  ${table}: ${n} deleted\n`),
    });
    const verb = options.dryRun ? 'would delete' : 'deleted';
    out(
      { dryRun: Boolean(options.dryRun), policy, [options.dryRun ? 'wouldDelete' : 'deleted']: rows },
      RETENTION_TABLES.map((t) => {
        const days = retentionDays(policy, t);
        return `${t.padEnd(15)} ${days > 0 ? `${verb} ${rows[t]} (kept ${days} days)` : 'kept for ever (0 days)'}`;
      }).join('\n'),
    );
  });

program
  .command('webhooks:failed')
  .description('signed provider events that could not be recorded (stored as failed), newest first, with their reasons')
  .addOption(
    new Option('--since <when>', 'ISO 8601 date or time, or a duration back from now (30m, 12h, 7d)').argParser((v) =>
      parseSince(v),
    ),
  )
  .action(async (options: { since?: Date }) => {
    const prisma = await db();
    const rows = await prisma.webhookEvent.findMany({
      where: { result: 'failed', ...(options.since ? { receivedAt: { gte: options.since } } : {}) },
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
  });

program
  .command('reconcile')
  .description(
    "compare a PAC ledger (the sandbox's) with our invoices: orphan stamps and duplicates (exit 1 when any; exit 3 when the ledger cannot be read or does not cover the window)",
  )
  .requiredOption('--ledger-url <url>', 'the PAC ledger (the sandbox admin URL)')
  .requiredOption('--admin-token <token>', 'its admin token')
  .addOption(
    new Option(
      '--since <when>',
      'the window: ISO 8601 date or time, or a duration (30m, 12h, 7d); default: since our first stamp',
    ).argParser((v) => parseSince(v)),
  )
  .option(
    '--fix',
    'propose the repair of each duplicate: cancel the other UUIDs (motivo 01, replaced by ours; never both)',
  )
  .option('--execute', 'with --fix: queue those cancellations for the worker')
  .action(
    async (options: { ledgerUrl: string; adminToken: string; since?: Date; fix?: boolean; execute?: boolean }) => {
      if (options.execute && !options.fix) throw new UsageError('--execute goes with --fix');
      const prisma = await db();
      const { proposeFixes, reconcile, sandboxLedger, stampInstant } = await import('./reconcile.ts');
      const invoices = await prisma.invoice.findMany({
        where: { uuid: { not: null } },
        select: { id: true, uuid: true, stampedAt: true },
      });
      // Our first stamp by the PAC's clock (its FechaTimbrado), the clock of the ledger's window.
      const first = invoices.reduce<{ id: string; stampedAt: Date } | undefined>(
        (f, i) => (i.stampedAt && (!f || i.stampedAt < f.stampedAt) ? { id: i.id, stampedAt: i.stampedAt } : f),
        undefined,
      );
      const firstTfd = first
        ? await prisma.invoice.findUniqueOrThrow({ where: { id: first.id }, select: { tfdXml: true } })
        : undefined;
      const windowStart = options.since ?? (firstTfd?.tfdXml ? stampInstant(firstTfd.tfdXml) : undefined);
      let ledger;
      try {
        ledger = await sandboxLedger(options.ledgerUrl, options.adminToken).list(options.since?.toISOString());
      } catch (error) {
        throw new CannotCheck(`cannot read the PAC ledger at ${options.ledgerUrl}: ${(error as Error).message}`);
      }
      if (!ledger.coversSince)
        throw new CannotCheck('the PAC ledger does not say which window it covers: nothing can be concluded');
      if (windowStart && new Date(ledger.coversSince) > windowStart)
        throw new CannotCheck(
          `the PAC ledger covers only since ${ledger.coversSince}; the window asked for starts ${windowStart.toISOString()}${options.since ? '' : ' (our first stamp)'}: stamps before it cannot be checked — narrow --since or use a ledger that covers it`,
        );
      const invoiceOf = new Map(invoices.map((i) => [i.uuid!.toUpperCase(), i.id]));
      const result = reconcile(ledger.stamps, new Set(invoiceOf.keys()));
      const fixes = options.fix ? proposeFixes(result.duplicates, invoiceOf) : [];
      const executed = [];
      if (options.fix && options.execute) {
        for (const fix of fixes) {
          if (!('keep' in fix)) continue;
          for (const duplicateUuid of fix.cancel)
            executed.push({
              duplicateUuid,
              ...(await (
                await dbLib()
              ).requestDuplicateCancellation(prisma, { invoiceId: fix.invoiceId, duplicateUuid })),
            });
        }
      }
      out(
        { ...result, coversSince: ledger.coversSince, ...(options.fix ? { fixes, executed } : {}) },
        [
          `${result.stamps} stamps in the ledger (it covers since ${ledger.coversSince}), ${invoiceOf.size} UUIDs in the database`,
          `orphans: ${result.orphans.length}${result.orphans.map((o) => `\n  ${o.uuid} (${o.instance}${o.customid ? `, key ${o.customid}` : ''})`).join('')}`,
          `duplicates: ${result.duplicates.length}${result.duplicates.map((d) => `\n  by ${d.by} ${d.key}: ${d.uuids.join(', ')}`).join('')}`,
          ...(options.fix
            ? [
                `fixes${options.execute ? ' (queued)' : ' (proposed; --execute queues them)'}: ${fixes.length}${fixes
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
    },
  );

// Every usage mistake — the parser's or ours — exits 2 with the message and a pointer to --help.
program.exitOverride();
for (const command of program.commands) command.exitOverride();
try {
  await program.parseAsync(process.argv.slice(2), { from: 'user' });
} catch (error) {
  if (error instanceof CommanderError) {
    // --help and --version end here with code 0; a parser error has printed its message already.
    process.exitCode = error.exitCode === 0 ? 0 : 2;
  } else if (error instanceof UsageError) {
    fail(`${error.message}\n(npm run ops -- --help lists the commands)`, 2);
  } else if (error instanceof CannotCheck) {
    fail(error.message, 3);
  } else {
    // The database down, missing, refusing the login or not migrated: nothing was done (exit 3), and
    // one line says what to fix, not Prisma's report of the call. Anything else is a failure of ours
    // or of a service: one line (exit 1). Neither prints a stack unless LOG_LEVEL=debug.
    const trouble = databaseTrouble(error);
    fail(`ops: ${trouble?.message ?? (error as Error).message}`, trouble ? 3 : 1);
    if (process.env.LOG_LEVEL === 'debug') process.stderr.write(`${(error as Error).stack}\n`);
  }
} finally {
  await prismaClient?.$disconnect();
}
