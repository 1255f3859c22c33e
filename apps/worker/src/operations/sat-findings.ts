/**
 * Timbra's invoices against the SAT's own record (pure): what the SAT lists that we do not hold,
 * what we stamped that the SAT does not list past its lag, and where the two disagree on status,
 * total or receptor. Orphans are resolved afterwards with their XML (sat-reconcile.ts).
 */
import { attr, childElements, NS, parseXml } from '@timbra/cfdi-core';
import type { InvoiceForSat } from '@timbra/db/invoices';
import type { SatRecordRow } from '@timbra/cfdi-node';

/** Why an orphan timbre could not be adopted. */
export type OrphanReason =
  /** No invoice has the serie-folio its XML names. */
  | 'no_invoice'
  /** An invoice has it, but none of its frozen versions is these bytes: not Timbra's document. */
  | 'not_our_bytes'
  /** The invoice holds another UUID: two CFDIs for one sale. */
  | 'stamped_twice'
  /** The bytes are a version a correction replaced: the sale's current version waits for its own. */
  | 'superseded_version'
  /** The invoice is not waiting for a stamp (e.g. cancelled before it was stamped). */
  | 'not_waiting'
  /** The SAT lists the UUID but gave no XML for it. */
  | 'xml_unavailable';

interface InvoiceRef {
  invoiceId: string;
  serieFolio: string;
  uuid: string;
}

export type SatFinding =
  | (InvoiceRef & { kind: 'adopted' })
  | {
      kind: 'orphan';
      reason: OrphanReason;
      uuid: string;
      sat: SatRecordRow;
      invoiceId?: string;
      serieFolio?: string;
      /** The UUID the invoice holds (stamped_twice). */
      invoiceUuid?: string;
      /** The CFDI as the SAT gave it: kept so a later run need not ask again (the SAT allows a request twice). */
      xml?: string;
    }
  | (InvoiceRef & { kind: 'missing'; stampedAt: string })
  | (InvoiceRef & { kind: 'cancelled_at_sat'; fechaCancelacion: string; cancellationUnderWay: boolean })
  | (InvoiceRef & { kind: 'vigente_at_sat' })
  | (InvoiceRef & { kind: 'total_differs'; ours: string; sat: string })
  | (InvoiceRef & { kind: 'receptor_differs'; ours: string; sat: string });

/** Which findings wait on a person (an alert each); the others are recorded or settle themselves. */
export function needsPerson(finding: SatFinding): boolean {
  if (finding.kind === 'adopted') return false;
  if (finding.kind === 'cancelled_at_sat') return !finding.cancellationUnderWay;
  return true;
}

/** 1200.50 and 1200.5 are the same amount: compared as decimals, by text (never as floats). */
export function sameAmount(a: string, b: string): boolean {
  const norm = (s: string) => {
    const [whole = '', fraction = ''] = s.trim().split('.');
    const w = whole.replace(/^0+(?=\d)/, '');
    const f = fraction.replace(/0+$/, '');
    return f ? `${w}.${f}` : w;
  };
  return norm(a) === norm(b);
}

/** The receptor's RFC as frozen. */
export function receptorRfcOf(frozenXml: string | null): string | undefined {
  if (!frozenXml) return undefined;
  const receptor = childElements(parseXml(frozenXml), NS.cfdi, 'Receptor')[0];
  return receptor ? attr(receptor, 'Rfc') : undefined;
}

const STAMPED = new Set(['stamped', 'cancel_requested', 'cancelled']);

/**
 * Compares (pure). `ours` are the invoices frozen in the period plus any holding a UUID the SAT
 * lists; an invoice stamped less than `lagMs` before `now` is not called missing yet.
 * @returns the findings, and the UUIDs the SAT lists that we do not hold (to resolve with their XML).
 */
export function compareWithSat(
  sat: readonly SatRecordRow[],
  ours: readonly InvoiceForSat[],
  options: { now: Date; lagMs: number },
): { findings: SatFinding[]; orphans: SatRecordRow[]; matched: number } {
  const byUuid = new Map(ours.filter((i) => i.uuid).map((i) => [i.uuid!, i]));
  const listed = new Set(sat.map((r) => r.uuid.toUpperCase()));
  const findings: SatFinding[] = [];
  const orphans: SatRecordRow[] = [];
  let matched = 0;
  for (const row of sat) {
    const invoice = byUuid.get(row.uuid.toUpperCase());
    if (!invoice) {
      orphans.push(row);
      continue;
    }
    matched++;
    const ref = {
      invoiceId: invoice.id,
      serieFolio: `${invoice.serie}-${invoice.folio}`,
      uuid: row.uuid.toUpperCase(),
    };
    if (!row.vigente && invoice.status !== 'cancelled') {
      const underWay = invoice.status === 'cancel_requested' || invoice.cancelPending;
      findings.push({
        ...ref,
        kind: 'cancelled_at_sat',
        fechaCancelacion: row.fechaCancelacion,
        cancellationUnderWay: underWay,
      });
    }
    if (row.vigente && invoice.status === 'cancelled') findings.push({ ...ref, kind: 'vigente_at_sat' });
    if (!sameAmount(row.total, invoice.total)) {
      findings.push({ ...ref, kind: 'total_differs', ours: invoice.total, sat: row.total });
    }
    const receptor = receptorRfcOf(invoice.frozenXml);
    if (receptor !== undefined && receptor !== row.rfcReceptor) {
      findings.push({ ...ref, kind: 'receptor_differs', ours: receptor, sat: row.rfcReceptor });
    }
  }
  const settled = options.now.getTime() - options.lagMs;
  for (const invoice of ours) {
    if (!invoice.uuid || !STAMPED.has(invoice.status) || listed.has(invoice.uuid)) continue;
    if (!invoice.stampedAt || invoice.stampedAt.getTime() > settled) continue;
    findings.push({
      kind: 'missing',
      invoiceId: invoice.id,
      serieFolio: `${invoice.serie}-${invoice.folio}`,
      uuid: invoice.uuid,
      stampedAt: invoice.stampedAt.toISOString(),
    });
  }
  return { findings, orphans, matched };
}
