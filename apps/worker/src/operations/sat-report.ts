/** A reconciliation with the SAT as a person reads it: counts, then each finding with what to do. */
import { needsPerson, type OrphanReason, type SatFinding } from './sat-findings.ts';
import type { SatReconciliation } from './sat-reconcile.ts';

const ORPHAN: Record<OrphanReason, string> = {
  no_invoice: 'no invoice has the serie-folio its XML names: not issued through Timbra',
  not_our_bytes: 'its serie-folio is an invoice of ours, but its bytes are none of its frozen versions',
  stamped_twice: 'a second CFDI for a sale that already has one: cancel one (motivo 01, replaced by ours)',
  superseded_version: 'a version a correction replaced was stamped after all: the sale may get two CFDIs',
  not_waiting: 'its invoice was not waiting for a stamp (cancelled or corrected meanwhile)',
  xml_unavailable: 'the SAT lists it but gave no XML for it',
};

/** One line per finding. */
export function describeFinding(f: SatFinding): string {
  switch (f.kind) {
    case 'adopted':
      return `${f.serieFolio} ${f.uuid}: the SAT held its timbre and we did not; recorded as its CFDI`;
    case 'orphan':
      return `${f.uuid}${f.serieFolio ? ` (${f.serieFolio})` : ''}: ${ORPHAN[f.reason]}${f.invoiceUuid ? `; ours is ${f.invoiceUuid}` : ''} — receptor ${f.sat.rfcReceptor}, total ${f.sat.total}, issued ${f.sat.fechaEmision}, certified ${f.sat.fechaCertificacion} by ${f.sat.rfcPac}`;
    case 'missing':
      return `${f.serieFolio} ${f.uuid}: stamped ${f.stampedAt} and not in the SAT's record`;
    case 'cancelled_at_sat':
      return `${f.serieFolio} ${f.uuid}: cancelled at the SAT on ${f.fechaCancelacion}; ${f.cancellationUnderWay ? 'our cancellation is under way and will settle' : 'not cancelled here: cancelled outside Timbra'}`;
    case 'vigente_at_sat':
      return `${f.serieFolio} ${f.uuid}: cancelled here, vigente at the SAT`;
    case 'total_differs':
      return `${f.serieFolio} ${f.uuid}: total ${f.ours} here, ${f.sat} at the SAT`;
    case 'receptor_differs':
      return `${f.serieFolio} ${f.uuid}: receptor ${f.ours} here, ${f.sat} at the SAT`;
  }
}

const HEADINGS: Record<SatFinding['kind'], string> = {
  adopted: 'adopted (recorded as the invoice’s CFDI)',
  orphan: 'orphan timbres (the SAT has them, we do not)',
  missing: 'missing at the SAT (stamped here, past the lag)',
  cancelled_at_sat: 'cancelled at the SAT',
  vigente_at_sat: 'cancelled here, vigente at the SAT',
  total_differs: 'totals that differ',
  receptor_differs: 'receptors that differ',
};

/** The report: what was compared, then each kind of finding found. */
export function satReport(rfc: string, r: SatReconciliation): string {
  const lines = [
    `SAT record of ${rfc}: CFDIs with Fecha ${r.period.from} to ${r.period.to} (Mexico City)`,
    `  the SAT lists ${r.sat}; Timbra has ${r.ours} invoices in the period or holding those UUIDs; ${r.matched} on both sides`,
  ];
  for (const kind of Object.keys(HEADINGS) as SatFinding['kind'][]) {
    const of = r.findings.filter((f) => f.kind === kind);
    if (of.length === 0) continue;
    const alerting = of.filter(needsPerson).length;
    lines.push(`  ${HEADINGS[kind]}: ${of.length}${alerting > 0 ? ` (${alerting} for a person)` : ''}`);
    for (const f of of) lines.push(`    ${describeFinding(f)}`);
  }
  const people = r.findings.filter(needsPerson).length;
  lines.push(
    people === 0 ? '  nothing for a person' : `  ${people} finding(s) for a person: docs/sat-record.md says what to do`,
  );
  return lines.join('\n');
}
