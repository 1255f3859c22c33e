/**
 * The factura global: one Ingreso to público en general (XAXX010101000, PUBLICO EN GENERAL, régimen
 * 616, UsoCFDI S01, DomicilioFiscalReceptor = LugarExpedicion) with InformacionGlobal for its period
 * and one concepto per ticket, as the SAT's Anexo 20 guide (apéndice "factura global") asks:
 * ClaveProdServ 01010101, ClaveUnidad ACT, Cantidad 1, Descripcion "Venta", NoIdentificacion the
 * ticket's number, its taxes shown separately. A ticket whose lines carry different taxes gives one
 * concepto per tax profile (same NoIdentificacion): a concepto has one IVA rate.
 *
 * FormaPago (guide: a payment received in several forms takes the one with which the larger amount
 * was paid; equal amounts, one of them at the taxpayer's choice): the forma de pago of the largest
 * sum of the global's tickets; on a tie, the lowest code.
 */
import type { ValidationIssue } from '../errors.ts';
import { NOMBRE_PUBLICO_GENERAL } from '../rules/index.ts';
import { RFC_PUBLICO_GENERAL } from '../validate/rfc.ts';
import type { InvoiceRequestInput } from '../validate/request-schema.ts';
import { Dec, fixed, sum } from '../build/money.ts';
import { conceptosForSale, type LineTaxes, type SaleLine } from '../build/sale-lines.ts';
import type { GlobalPeriod } from './periods.ts';

/** A ticket's gross (tax included) by tax profile: what its concepto(s) in a global carry. */
export interface TicketPart {
  taxes: LineTaxes;
  amount: string;
}

/** A ticket as its period's global needs it. */
export interface GlobalTicket {
  code: string;
  /** Paid, tax included. */
  total: string;
  /** Refunded before the global was issued: the global carries total − refunded. */
  refunded: string;
  parts: readonly TicketPart[];
  formaPago: string;
}

export interface GlobalEmisor {
  rfc: string;
  nombre: string;
  regimenFiscal: string;
  lugarExpedicion: string;
}

/**
 * Splits `total` in proportion to `weights`, to `decimals` places (largest remainders get the
 * leftover units; ties to the earlier weight). The parts add up to `total` exactly.
 */
export function splitInProportion(weights: readonly string[], total: string, decimals: number): string[] {
  const w = weights.map((x) => new Dec(x));
  const all = sum(w);
  if (all.isZero()) return weights.map(() => fixed(new Dec(0), decimals));
  const unit = new Dec(1).shiftedBy(-decimals);
  const exact = w.map((x) => x.times(total).dividedBy(all));
  const shares = exact.map((e) => e.decimalPlaces(decimals, Dec.ROUND_FLOOR));
  let left = new Dec(total).minus(sum(shares));
  const order = exact
    .map((e, i) => ({ i, rest: e.minus(shares[i]!) }))
    .sort((a, b) => (b.rest.comparedTo(a.rest) ?? 0) || a.i - b.i);
  for (const { i } of order) {
    if (!left.isGreaterThan(0)) break;
    shares[i] = shares[i]!.plus(unit);
    left = left.minus(unit);
  }
  return shares.map((s) => fixed(s, decimals));
}

/** The key two lines share when their taxes are the same (they go in one concepto). */
export function taxProfileKey(taxes: LineTaxes): string {
  return JSON.stringify([taxes.iva, taxes.ieps, taxes.retencionIsr, taxes.retencionIva]);
}

/** A sale's lines' grosses (conceptosForSale) summed by tax profile, in the order first seen. */
export function ticketParts(lines: readonly SaleLine[], grosses: readonly string[]): TicketPart[] {
  const byProfile = new Map<string, { taxes: LineTaxes; amount: Dec }>();
  lines.forEach((line, i) => {
    const key = taxProfileKey(line.taxes);
    const entry = byProfile.get(key) ?? { taxes: line.taxes, amount: new Dec(0) };
    entry.amount = entry.amount.plus(grosses[i] ?? 0);
    byProfile.set(key, entry);
  });
  return [...byProfile.values()].map(({ taxes, amount }) => ({ taxes, amount: fixed(amount, 2) }));
}

/** What a ticket adds to its global: total − refunded, by tax profile. Empty when all was refunded. */
export function netTicketParts(ticket: Pick<GlobalTicket, 'total' | 'refunded' | 'parts'>): TicketPart[] {
  const net = new Dec(ticket.total).minus(ticket.refunded);
  if (!net.isGreaterThan(0)) return [];
  const amounts = new Dec(ticket.refunded).isZero()
    ? ticket.parts.map((p) => p.amount)
    : splitInProportion(
        ticket.parts.map((p) => p.amount),
        fixed(net, 2),
        2,
      );
  return ticket.parts
    .map((p, i) => ({ taxes: p.taxes, amount: amounts[i]! }))
    .filter((p) => new Dec(p.amount).isGreaterThan(0));
}

/** The global's FormaPago: the forma de pago of the largest sum of tickets (net); on a tie, the lowest code. */
export function globalFormaPago(tickets: readonly GlobalTicket[]): string {
  const byForma = new Map<string, Dec>();
  for (const t of tickets)
    byForma.set(t.formaPago, (byForma.get(t.formaPago) ?? new Dec(0)).plus(new Dec(t.total).minus(t.refunded)));
  const [best] = [...byForma.entries()].sort(
    ([fa, a], [fb, b]) => (b.comparedTo(a) ?? 0) || (fa < fb ? -1 : fa > fb ? 1 : 0),
  );
  return best?.[0] ?? '01';
}

/**
 * The stamp key's source of a period's global, part `part` (1 …): the same for every retry. `book`
 * names the books it is issued from (the deployment's emisor row): two databases that issue the same
 * period (a fresh one beside an old one, on one Redis or one PAC account) never share a key, while a
 * database restored from a backup keeps its own.
 */
export function globalSourceId(
  book: string,
  period: Pick<GlobalPeriod, 'periodicidad' | 'startsOn'>,
  part: number,
): string {
  return `global:${book}:${period.periodicidad}:${period.startsOn}:${part}`;
}

/**
 * The request of one factura global (one part of a period) for `tickets`, each with something left
 * after its refunds. @returns the request, or why it cannot be built.
 */
export function buildGlobalRequest(input: {
  emisor: GlobalEmisor;
  /** The books the global is issued from (globalSourceId). */
  book: string;
  period: GlobalPeriod;
  part: number;
  tickets: readonly GlobalTicket[];
  serie: string;
  folio: number;
  issuedAt: Date;
}): { request: InvoiceRequestInput; problems?: undefined } | { request?: undefined; problems: ValidationIssue[] } {
  const lines: SaleLine[] = input.tickets.flatMap((t) =>
    netTicketParts(t).map((p) => ({
      claveProdServ: '01010101',
      claveUnidad: 'ACT',
      noIdentificacion: t.code,
      descripcion: 'Venta',
      cantidad: '1',
      amount: p.amount,
      taxIncluded: true,
      taxes: p.taxes,
    })),
  );
  if (lines.length === 0) return { problems: [{ path: 'tickets', message: 'no ticket has anything to invoice' }] };
  const total = fixed(sum(lines.map((l) => new Dec(l.amount!))), 2);
  // Each ticket's concepto is that ticket's amount: no ticket carries another's cents.
  const plan = conceptosForSale(lines, 'MXN', total, { eachLineItsGross: true });
  if (!plan.ok) return { problems: plan.issues };
  const { emisor, period } = input;
  return {
    request: {
      tipoDeComprobante: 'I',
      sourceId: globalSourceId(input.book, period, input.part),
      issuedAt: input.issuedAt.toISOString(),
      serie: input.serie,
      folio: String(input.folio),
      lugarExpedicion: emisor.lugarExpedicion,
      moneda: 'MXN',
      formaPago: globalFormaPago(input.tickets),
      metodoPago: 'PUE',
      emisor: { rfc: emisor.rfc, nombre: emisor.nombre, regimenFiscal: emisor.regimenFiscal },
      receptor: {
        rfc: RFC_PUBLICO_GENERAL,
        nombre: NOMBRE_PUBLICO_GENERAL,
        domicilioFiscalReceptor: emisor.lugarExpedicion,
        regimenFiscalReceptor: '616',
        usoCFDI: 'S01',
      },
      informacionGlobal: { periodicidad: period.periodicidad, meses: period.meses, año: period.año },
      conceptos: plan.conceptos,
    },
  };
}

/** Conceptos per CFDI the request schema accepts: a period with more is split in several globals. */
export const MAX_CONCEPTOS = 1000;

/**
 * Tickets in chunks (each one global of the period), in the given order, each carrying at most
 * `maxConceptos` conceptos (a ticket gives one per tax profile; tickets refunded in full, none).
 */
export function chunkTickets<T extends Pick<GlobalTicket, 'total' | 'refunded' | 'parts'>>(
  tickets: readonly T[],
  maxConceptos: number = MAX_CONCEPTOS,
): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let conceptos = 0;
  for (const ticket of tickets) {
    const n = netTicketParts(ticket).length;
    if (n === 0) continue;
    if (current.length > 0 && conceptos + n > maxConceptos) {
      chunks.push(current);
      current = [];
      conceptos = 0;
    }
    current.push(ticket);
    conceptos += n;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
