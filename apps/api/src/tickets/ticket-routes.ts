import { Router } from 'express';
import { periodLabel, type Periodicidad } from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import {
  globalPeriodWithTickets,
  listGlobalPeriods,
  listTickets,
  ticketById,
  TICKET_STATUSES,
} from '@timbra/db/tickets';
import { ApiError, fromDomainError } from '../http/errors.ts';
import { uuidParams } from '../http/ids.ts';
import type { Metrics } from '../http/metrics.ts';
import { DomainError } from '../domain-errors.ts';
import type { RecordPaymentDeps } from '../payments/record-payment.ts';
import { issueGlobal, NotAPeriodError } from '@timbra/globals';
import { globalIssuer, type GlobalSettings } from './record-tickets.ts';
import { listParams, pageOf } from '../http/lists.ts';

type GlobalDeps = RecordPaymentDeps & { global?: GlobalSettings };

/**
 * Tickets and factura global periods (público en general in global mode):
 *
 * - `GET /v1/tickets` (`status`, `period` = its first day, `limit`, `cursor`), `GET /v1/tickets/:id`;
 * - `GET /v1/globals` — the periods whose globals were issued, newest first — and `GET /v1/globals/:id`
 *   with its invoices and the tickets each one holds;
 * - `POST /v1/globals` `{ "startsOn": "YYYY-MM-DD" }` (admin): issue that period's global now, before
 *   its close timer (exactly once: a period already issued is returned as it is, 200).
 */
export function ticketRoutes(deps: { prisma: PrismaClient; payments: GlobalDeps; metrics: Metrics }): Router {
  const { prisma } = deps;
  const router = Router();
  uuidParams(router, 'id');
  const requireGlobal = (): RecordPaymentDeps & { global: GlobalSettings } => {
    if (!deps.payments.global) throw new ApiError('global_mode_off');
    return deps.payments as RecordPaymentDeps & { global: GlobalSettings };
  };

  router.get('/tickets', async (req, res) => {
    requireGlobal();
    const { limit, cursor } = listParams(req, ['status', 'period']);
    const status = TICKET_STATUSES.find((s) => s === req.query.status);
    const period = typeof req.query.period === 'string' ? req.query.period : undefined;
    const problems = [
      ...(req.query.status !== undefined && !status ? [{ path: 'status', message: TICKET_STATUSES.join(', ') }] : []),
      ...(period !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(period)
        ? [{ path: 'period', message: 'the first day of a period, YYYY-MM-DD' }]
        : []),
    ];
    if (problems.length > 0) throw new ApiError('validation_failed', undefined, problems);
    const rows = await listTickets(prisma, { status, period }, { limit, cursor });
    res.json(pageOf(rows, limit, ticketView));
  });

  router.get('/tickets/:id', async (req, res) => {
    requireGlobal();
    const ticket = await ticketById(prisma, String(req.params.id));
    if (!ticket) throw new ApiError('not_found');
    res.json(ticketView(ticket));
  });

  router.get('/globals', async (req, res) => {
    requireGlobal();
    const { limit, cursor } = listParams(req);
    // Newest issued first: a period's row is written once, when issued.
    const rows = await listGlobalPeriods(prisma, { limit, cursor });
    res.json(
      pageOf(
        rows.map((r) => ({ ...r, createdAt: r.issuedAt })),
        limit,
        periodView,
      ),
    );
  });

  router.get('/globals/:id', async (req, res) => {
    requireGlobal();
    const period = await globalPeriodWithTickets(prisma, String(req.params.id));
    if (!period) throw new ApiError('not_found');
    res.json({
      ...periodView(period),
      invoices: period.invoices.map((i) => ({
        ...invoiceRef(i),
        tickets: period.ticketRows.filter((t) => t.invoiceId === i.id).map(ticketView),
      })),
    });
  });

  router.post('/globals', async (req, res) => {
    const issued = await issueGlobalOnRequest(
      prisma,
      requireGlobal(),
      req.body,
      `admin:${req.client?.id ?? 'unknown'}`,
    );
    if (issued.created) deps.metrics.globalsIssued.inc({ by: 'admin' });
    res.status(issued.created ? 201 : 200).json(issued);
  });
  return router;
}

/** `POST /v1/globals`: the period its body names (its first day), issued now with the API's settings. */
async function issueGlobalOnRequest(
  prisma: PrismaClient,
  globalDeps: RecordPaymentDeps & { global: GlobalSettings },
  body: unknown,
  issuedBy: string,
) {
  const startsOn = (body as { startsOn?: unknown } | undefined)?.startsOn;
  if (typeof startsOn !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(startsOn))
    throw new ApiError('validation_failed', undefined, [
      { path: 'startsOn', message: 'the first day of the period, YYYY-MM-DD' },
    ]);
  const periodicidad = globalDeps.settings.periodicidad as Periodicidad;
  try {
    return await issueGlobal(prisma, globalIssuer(globalDeps), { periodicidad, startsOn }, issuedBy);
  } catch (error) {
    if (error instanceof NotAPeriodError)
      throw new ApiError('validation_failed', undefined, [{ path: 'startsOn', message: error.message }]);
    if (error instanceof DomainError) throw fromDomainError(error);
    throw error;
  }
}

interface TicketRow {
  id: string;
  paymentId: string;
  code: string;
  total: { toFixed(d: number): string };
  refunded: { toFixed(d: number): string };
  formaPago: string;
  periodicidad: string;
  periodStartsOn: Date;
  status: string;
  invoiceId: string | null;
  globalPeriodId: string | null;
  occurredAt: Date;
  createdAt: Date;
}

function ticketView(t: TicketRow) {
  return {
    id: t.id,
    paymentId: t.paymentId,
    code: t.code,
    total: t.total.toFixed(2),
    refunded: t.refunded.toFixed(2),
    formaPago: t.formaPago,
    periodicidad: t.periodicidad,
    period: t.periodStartsOn.toISOString().slice(0, 10),
    status: t.status,
    invoiceId: t.invoiceId,
    globalId: t.globalPeriodId,
    occurredAt: t.occurredAt.toISOString(),
    createdAt: t.createdAt.toISOString(),
  };
}

interface InvoiceRef {
  id: string;
  serie: string;
  folio: number;
  status: string;
  total: { toFixed(d: number): string };
  uuid: string | null;
}

function invoiceRef(i: InvoiceRef) {
  return { id: i.id, serie: i.serie, folio: i.folio, status: i.status, total: i.total.toFixed(2), uuid: i.uuid };
}

function periodView(p: {
  id: string;
  periodicidad: string;
  startsOn: Date;
  endsOn: Date;
  startsAt: Date;
  endsAt: Date;
  meses: string;
  year: number;
  status: string;
  tickets: number;
  total: { toFixed(d: number): string };
  parts: number;
  issuedBy: string;
  issuedAt: Date;
  invoices: InvoiceRef[];
}) {
  const startsOn = p.startsOn.toISOString().slice(0, 10);
  const endsOn = p.endsOn.toISOString().slice(0, 10);
  return {
    id: p.id,
    periodicidad: p.periodicidad,
    startsOn,
    endsOn,
    label: periodLabel({ startsOn, endsOn }),
    startsAt: p.startsAt.toISOString(),
    endsAt: p.endsAt.toISOString(),
    meses: p.meses,
    año: p.year,
    status: p.status,
    tickets: p.tickets,
    total: p.total.toFixed(2),
    parts: p.parts,
    issuedBy: p.issuedBy,
    issuedAt: p.issuedAt.toISOString(),
    invoices: p.invoices.map(invoiceRef),
  };
}
