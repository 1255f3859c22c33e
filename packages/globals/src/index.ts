/** @timbra/globals — a period's factura global issued exactly once, and how late the periods are. */
export {
  duePeriods,
  globalLag,
  issueDueGlobals,
  issueGlobal,
  NotAPeriodError,
  type GlobalIssuer,
  type IssuedGlobal,
} from './issue-global.ts';
