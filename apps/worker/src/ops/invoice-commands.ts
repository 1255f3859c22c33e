/** `npm run ops --` commands: Invoices: one with its history, the needs_data queue, versions, corrections. */
import { type Command } from 'commander';
import { dbLib, UsageError, out, fail, db, setExitCode } from './context.ts';

/** `invoice:show`: an invoice and its history: outbox rows, re-drives, PAC attempts. */
function invoiceShow(program: Command): void {
  program
    .command('invoice:show')
    .description('an invoice and its history: outbox rows, re-drives, PAC attempts')
    .argument('<invoice>', 'its id, UUID, serie-folio (A-17) or stamp key')
    .action(async (target: string) => {
      const prisma = await db();
      const invoice = await (await dbLib.invoices()).namedInvoiceWithHistory(prisma, target);
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
}

/** `invoices:needs-data`: invoices that need data (money arrived, no CFDI yet), oldest first. */
function invoicesNeedsData(program: Command): void {
  program
    .command('invoices:needs-data')
    .description('invoices that need data (money arrived, no CFDI yet), oldest first')
    .action(async () => {
      const prisma = await db();
      const rows = await (await dbLib.invoices()).invoicesInNeedsData(prisma, 500);
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
}

/** `invoice:versions`: the versions of an invoice's frozen document, and its corrections. */
function invoiceVersions(program: Command): void {
  program
    .command('invoice:versions')
    .description("the versions of an invoice's frozen document, and its corrections")
    .argument('<invoice>', 'its id, UUID, serie-folio (A-17) or stamp key')
    .action(async (target: string) => {
      const prisma = await db();
      const invoice = await (await dbLib.invoices()).namedInvoiceWithVersions(prisma, target);
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
}

/** `invoice:correct`: PATCH /v1/invoices/:id through the API (the owner of the rules and the folio); --reason alone re-freezes with a fresh Fecha. */
function invoiceCorrect(program: Command): void {
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
      const invoiceId = await (await dbLib.invoices()).namedInvoiceId(prisma, target);
      if (!invoiceId) return fail(`no invoice ${target}`);
      const response = await fetch(`${options.apiUrl.replace(/\/$/, '')}/v1/invoices/${invoiceId}`, {
        method: 'PATCH',
        headers: {
          authorization: `Bearer ${options.apiKey}`,
          'content-type': 'application/json',
          'idempotency-key': `ops-${invoiceId}-${Date.now()}`,
        },
        body: JSON.stringify(body),
      });
      const answer = await response.json();
      out(answer, `${response.status}  ${JSON.stringify(answer)}`);
      setExitCode(response.ok ? 0 : 1);
    });
}

export function invoiceCommands(program: Command): void {
  invoiceShow(program);
  invoicesNeedsData(program);
  invoiceVersions(program);
  invoiceCorrect(program);
}
