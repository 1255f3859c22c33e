/**
 * A period's factura global: its open tickets locked, chunked, frozen and written with their folios
 * in one transaction (exactly once: the period's row) — on request (the API's POST /v1/globals) or
 * on the close timer (the worker, for every period that ended long enough ago) — and how late the
 * periods are against the SAT's 72 hours.
 */
import { randomUUID } from 'node:crypto';
import { BigNumber } from 'bignumber.js';
import {
  buildGlobalRequest,
  chunkTickets,
  globalPeriodByStart,
  globalSourceId,
  GLOBAL_DEADLINE_MS,
  stampKeyFor,
  type GlobalPeriod,
  type GlobalTicket,
  type Periodicidad,
  type TicketPart,
  timeZoneForCodigoPostal,
  tryFreeze,
  type Csd,
  type OperatorCatalogs,
} from '@timbra/cfdi-core';
import type { PrismaClient, Tx } from '@timbra/db';
import { insertInvoices, takeFolio } from '@timbra/db/invoices';
import {
  globalBacklog,
  issuedGlobalPeriod,
  lockGlobalPeriod,
  lockOpenTickets,
  periodsWithOpenTickets,
  recordGlobalPeriod,
  type TicketState,
} from '@timbra/db/tickets';

/** Who issues the globals, and with what: the emisor, the serie their folios come from, the CSD. */
export interface GlobalIssuer {
  organizationId: string;
  emisor: { rfc: string; nombre: string; regimenFiscal: string; lugarExpedicion: string };
  /** The Ingreso serie (SERIE_INGRESO): each part takes its next folio. */
  serieIngreso: string;
  /** Conceptos per factura global (≤ 1000, GLOBAL_MAX_CONCEPTOS): a period with more is split in parts. */
  maxConceptosPerGlobal: number;
  /** Seals each part (the emisor's CSD). */
  csd: Csd;
  /** The operator's SAT catalogues, given to the SAT rules (absent: shape checks). */
  catalogs?: OperatorCatalogs | undefined;
}

/** `startsOn` is not the first day of a period of that Periodicidad. */
export class NotAPeriodError extends Error {
  constructor(
    readonly startsOn: string,
    readonly periodicidad: string,
  ) {
    super(`${startsOn} does not start a period of Periodicidad ${periodicidad}`);
  }
}

/** The emisor's zone (its LugarExpedicion's): the periods are in local time. */
const zoneOf = (issuer: GlobalIssuer) => timeZoneForCodigoPostal(issuer.emisor.lugarExpedicion);

export interface IssuedGlobal {
  periodId: string;
  periodicidad: string;
  startsOn: string;
  endsOn: string;
  /** False when the period's globals were issued before (by another instance, or an earlier call). */
  created: boolean;
  invoiceIds: string[];
  tickets: number;
  total: string;
}

/**
 * Issues the factura global of one period, exactly once: under the period's exclusive lock, its row
 * (unique key) is written with its globals — one per `maxConceptosPerGlobal` conceptos, each with a folio
 * of the Ingreso serie, frozen, with its outbox row — and its open tickets move into them, all in one
 * transaction. A period with no open ticket is recorded `empty`. Issuing an issued period returns it.
 *
 * @throws NotAPeriodError when `startsOn` does not start a period of that periodicidad
 */
export async function issueGlobal(
  prisma: PrismaClient,
  issuer: GlobalIssuer,
  { periodicidad, startsOn }: { periodicidad: Periodicidad; startsOn: string },
  issuedBy: string,
): Promise<IssuedGlobal> {
  const period = globalPeriodByStart(startsOn, periodicidad, zoneOf(issuer));
  if (!period) throw new NotAPeriodError(startsOn, periodicidad);
  return prisma.$transaction(
    async (tx) => {
      const key = { organizationId: issuer.organizationId, periodicidad, startsOn };
      if (await lockGlobalPeriod(tx, key, 'exclusive')) return issuedPeriod(tx, key);
      const parts = await writeParts(tx, issuer, period, await lockOpenTickets(tx, key), new Date());
      const periodId = randomUUID();
      const ids = parts.map((p) => p.invoiceId);
      const assignments = parts.flatMap((p) => p.ticketIds.map((ticketId) => ({ ticketId, invoiceId: p.invoiceId })));
      const total = parts.reduce((sum, p) => sum.plus(p.total), new BigNumber(0)).toFixed(2);
      await recordGlobalPeriod(
        tx,
        {
          id: periodId,
          ...key,
          endsOn: period.endsOn,
          startsAt: period.startsAt,
          endsAt: period.endsAt,
          meses: period.meses,
          year: period.año,
          tickets: assignments.length,
          total,
          parts: ids.length,
          issuedBy,
        },
        assignments,
        ids,
      );
      return {
        periodId,
        periodicidad,
        startsOn,
        endsOn: period.endsOn,
        created: true,
        invoiceIds: ids,
        tickets: assignments.length,
        total,
      };
    },
    { timeout: 120_000, maxWait: 30_000 },
  );
}

/**
 * The parts of a period's global, written: its tickets chunked at `maxConceptosPerGlobal` conceptos,
 * each part with the next folio of the Ingreso serie, frozen (or `needs_data` with the problems, its
 * request kept to be corrected from) and inserted with its outbox row.
 */
async function writeParts(
  tx: Tx,
  issuer: GlobalIssuer,
  period: GlobalPeriod,
  tickets: readonly TicketState[],
  issuedAt: Date,
): Promise<{ invoiceId: string; ticketIds: string[]; total: string }[]> {
  const chunks = chunkTickets(
    tickets.map((t) => ({ row: t, ...globalTicket(t) })),
    issuer.maxConceptosPerGlobal,
  );
  const parts = [];
  for (const [n, chunk] of chunks.entries()) {
    const folio = await takeFolio(tx, issuer.organizationId, issuer.serieIngreso);
    const built = buildGlobalRequest({
      emisor: issuer.emisor,
      book: issuer.organizationId,
      period,
      part: n + 1,
      tickets: chunk,
      serie: issuer.serieIngreso,
      folio,
      issuedAt,
    });
    const { frozen, problems } = built.request
      ? tryFreeze(built.request, issuer.csd, issuer.catalogs)
      : { problems: built.problems };
    const total = chunk.reduce((sum, t) => sum.plus(t.total).minus(t.refunded), new BigNumber(0)).toFixed(2);
    parts.push({ chunk, folio, frozen, problems, request: built.request, total });
  }
  const ids = await insertInvoices(
    tx,
    issuer.organizationId,
    parts.map((p, n) => ({
      kind: 'I' as const,
      serie: issuer.serieIngreso,
      folio: p.folio,
      paymentId: null,
      stampKey: stampKeyFor(issuer.emisor.rfc, 'I', globalSourceId(issuer.organizationId, period, n + 1)),
      moneda: 'MXN',
      status: p.frozen ? ('pending' as const) : ('needs_data' as const),
      frozen: p.frozen,
      totals: p.frozen ? { subTotal: p.frozen.subTotal, total: p.frozen.total } : { subTotal: p.total, total: p.total },
      problems: p.problems,
      // Kept: a global in needs_data is corrected (re-frozen) from it.
      request: p.request,
    })),
  );
  return parts.map((p, n) => ({ invoiceId: ids[n]!, ticketIds: p.chunk.map((t) => t.row.id), total: p.total }));
}

async function issuedPeriod(
  tx: Tx,
  key: { organizationId: string; periodicidad: string; startsOn: string },
): Promise<IssuedGlobal> {
  const row = await issuedGlobalPeriod(tx, key);
  return {
    periodId: row.id,
    periodicidad: row.periodicidad,
    startsOn: key.startsOn,
    endsOn: row.endsOn.toISOString().slice(0, 10),
    created: false,
    invoiceIds: row.invoices.map((i) => i.id),
    tickets: row.tickets,
    total: row.total.toFixed(2),
  };
}

/** A ticket row as cfdi-core's global builder takes it. */
function globalTicket(t: TicketState): GlobalTicket {
  return { code: t.code, total: t.total, refunded: t.refunded, parts: t.parts as TicketPart[], formaPago: t.formaPago };
}

/**
 * The periods whose globals are due: they have open tickets and ended `closeDelayMs` ago or more.
 * Oldest first; each with the Periodicidad its tickets were recorded in.
 */
export async function duePeriods(
  prisma: PrismaClient,
  issuer: GlobalIssuer,
  closeDelayMs: number,
  now: Date,
): Promise<GlobalPeriod[]> {
  const zone = zoneOf(issuer);
  const open = await periodsWithOpenTickets(prisma, issuer.organizationId);
  return open
    .map((p) => globalPeriodByStart(p.startsOn, p.periodicidad as Periodicidad, zone))
    .filter((p): p is GlobalPeriod => p !== undefined && p.endsAt.getTime() + closeDelayMs <= now.getTime());
}

/**
 * Issues every due period's global: the close timer (the worker's; several may run it at once:
 * still one global per period).
 */
export async function issueDueGlobals(
  prisma: PrismaClient,
  issuer: GlobalIssuer,
  closeDelayMs: number,
  now = new Date(),
): Promise<IssuedGlobal[]> {
  const issued = [];
  for (const period of await duePeriods(prisma, issuer, closeDelayMs, now))
    issued.push(
      await issueGlobal(prisma, issuer, { periodicidad: period.periodicidad, startsOn: period.startsOn }, 'schedule'),
    );
  return issued;
}

/**
 * Where the globals stand, for the overdue alert: seconds since the end of the oldest period whose
 * tickets are not all in a stamped global (0: none), against the SAT's 72 hours.
 */
export async function globalLag(
  prisma: PrismaClient,
  issuer: Pick<GlobalIssuer, 'organizationId' | 'emisor'>,
  now = new Date(),
): Promise<{ oldestUnstampedSeconds: number; deadlineSeconds: number }> {
  const backlog = await globalBacklog(prisma, issuer.organizationId);
  const zone = timeZoneForCodigoPostal(issuer.emisor.lugarExpedicion);
  const ends: number[] = [];
  if (backlog.oldestOpen) {
    const p = globalPeriodByStart(backlog.oldestOpen.startsOn, backlog.oldestOpen.periodicidad as Periodicidad, zone);
    if (p) ends.push(p.endsAt.getTime());
  }
  if (backlog.oldestUnstampedEndsAt) ends.push(backlog.oldestUnstampedEndsAt.getTime());
  const oldest = ends.length > 0 ? Math.min(...ends) : now.getTime();
  return {
    oldestUnstampedSeconds: Math.max(0, (now.getTime() - oldest) / 1000),
    deadlineSeconds: GLOBAL_DEADLINE_MS / 1000,
  };
}
