/**
 * Webhook endpoints and deliveries as the API shows them, and the endpoint's own fields (its URL,
 * events, description). Its status and secret change through operator-actions.ts (a disable is logged, a
 * rotation keeps the old secret for its grace).
 */
import type { Db } from '../sql.ts';
import { afterCursor, pageWindow, type PageQuery } from '../pages.ts';

export const DELIVERY_STATUSES = ['pending', 'sending', 'delivered', 'dead'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface NewEndpoint {
  url: string;
  events: string[];
  description: string | null;
  secret: string;
}

export function insertEndpoint(db: Db, endpoint: NewEndpoint) {
  return db.webhookEndpoint.create({ data: endpoint });
}

export function endpointById(db: Db, id: string) {
  return db.webhookEndpoint.findUnique({ where: { id } });
}

export function listEndpoints(db: Db, page: PageQuery) {
  return db.webhookEndpoint.findMany({ where: afterCursor(page.cursor), ...pageWindow(page) });
}

/** Changes an endpoint's URL, events or description. */
export async function updateEndpoint(
  db: Db,
  id: string,
  fields: { url?: string | undefined; events?: string[] | undefined; description?: string | null | undefined },
): Promise<void> {
  if (Object.keys(fields).length > 0) await db.webhookEndpoint.update({ where: { id }, data: fields });
}

export interface DeliveryFilter {
  invoiceId?: string | undefined;
  paymentId?: string | undefined;
  endpointId?: string | undefined;
  channel?: 'email' | 'webhook' | undefined;
  status?: DeliveryStatus | undefined;
}

export interface EventFilter {
  type?: string | undefined;
  invoiceId?: string | undefined;
  paymentId?: string | undefined;
  refundId?: string | undefined;
}

/** The outbound events, newest first: what webhooks carried (or would have), kept as long as retention keeps them. */
export function listEvents(db: Db, filter: EventFilter, page: PageQuery) {
  return db.event.findMany({
    where: {
      ...(filter.type ? { type: filter.type } : {}),
      ...(filter.invoiceId ? { invoiceId: filter.invoiceId } : {}),
      ...(filter.paymentId ? { paymentId: filter.paymentId } : {}),
      ...(filter.refundId ? { refundId: filter.refundId } : {}),
      ...afterCursor(page.cursor),
    },
    ...pageWindow(page),
  });
}

export function eventById(db: Db, id: string) {
  return db.event.findUnique({ where: { id } });
}

/** Deliveries (emails and webhooks) with their events, newest first. */
export function listDeliveries(db: Db, filter: DeliveryFilter, page: PageQuery) {
  return db.delivery.findMany({
    where: {
      event: {
        ...(filter.invoiceId ? { invoiceId: filter.invoiceId } : {}),
        ...(filter.paymentId ? { paymentId: filter.paymentId } : {}),
      },
      ...(filter.endpointId ? { endpointId: filter.endpointId } : {}),
      ...(filter.channel ? { channel: filter.channel } : {}),
      ...(filter.status ? { status: filter.status } : {}),
      ...afterCursor(page.cursor),
    },
    ...pageWindow(page),
    include: { event: true },
  });
}

/** A delivery with its event and, with `log`, every attempt oldest first. */
export function deliveryById(db: Db, id: string, options: { log?: boolean } = {}) {
  return db.delivery.findUnique({
    where: { id },
    include: { event: true, ...(options.log ? { log: { orderBy: { attempt: 'asc' as const } } } : {}) },
  });
}

/** Deliveries by where they stand (`pending` includes those being sent), last changed first, with their endpoint's URL. */
export function deliveriesStanding(
  db: Db,
  filter: { status: 'dead' | 'pending' | 'delivered'; channel?: 'email' | 'webhook' | undefined },
  limit = 500,
) {
  return db.delivery.findMany({
    where: {
      status: filter.status === 'pending' ? { in: ['pending', 'sending'] } : filter.status,
      ...(filter.channel ? { channel: filter.channel } : {}),
    },
    orderBy: { updatedAt: 'desc' },
    take: limit,
    include: { event: { select: { type: true, invoiceId: true } }, endpoint: { select: { url: true } } },
  });
}

/** Dead deliveries no replay has answered yet (none pending, sending or delivered). */
export async function deadDeliveriesUnreplayed(db: Db, channel?: 'email' | 'webhook'): Promise<string[]> {
  const rows = await db.delivery.findMany({
    where: {
      status: 'dead',
      ...(channel ? { channel } : {}),
      replays: { none: { status: { in: ['pending', 'sending', 'delivered'] } } },
    },
    select: { id: true },
  });
  return rows.map((r) => r.id);
}
