/** `npm run ops --` commands: Factura global periods: issued and open. */
import { parseSince } from '../operations/since.ts';
import { type Command, Option } from 'commander';
import { dbLib, out, db } from './context.ts';

/** `globals:list`: público en general in global mode: the periods whose factura global was issued (newest first, with each global and its status), and the tickets still open by period. */
function globalsList(program: Command): void {
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
      const { globalPeriodsIssued, openTicketsByPeriod } = await dbLib.tickets();
      const periods = await globalPeriodsIssued(prisma, options.since, 500);
      const open = await openTicketsByPeriod(prisma);
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
}

export function globalCommands(program: Command): void {
  globalsList(program);
}
