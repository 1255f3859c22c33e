/** `@timbra/db/tickets`: sales in global mode and the periods their factura global covers. */
export {
  TICKET_STATUSES,
  insertTickets,
  lockGlobalPeriod,
  lockOpenTickets,
  lockTicket,
  markTicketSelfInvoiced,
  periodsWithOpenTickets,
  recordGlobalPeriod,
  refundOpenTicket,
  ticketByDownloadToken,
  type NewGlobalPeriod,
  type NewTicket,
  type PeriodKey,
  type TicketState,
  type TicketStatus,
} from './tickets.ts';
export {
  globalBacklog,
  globalPeriodsIssued,
  globalPeriodWithTickets,
  issuedGlobalPeriod,
  listGlobalPeriods,
  listTickets,
  openTicketsByPeriod,
  ticketById,
  type TicketFilter,
} from './reads.ts';
