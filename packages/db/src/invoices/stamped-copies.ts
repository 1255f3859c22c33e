/**
 * Stamped CFDIs stored whole. A stamp stores only the PAC's TFD beside the frozen XML, and the stamped
 * document is rebuilt from the two when read (cfdi-core's `stampedXmlOf`); versions before that
 * stored the whole document in `stamped_xml` too (~4 KB an invoice). `ops stamped-xml:compact`
 * reads those copies in batches and forgets each one its rebuild matches byte for byte — a copy that
 * differs, or one without its TFD, is the document itself and is kept.
 */
import type { Db } from '../sql.ts';

export interface StampedCopy {
  id: string;
  organizationId: string;
  serie: string;
  folio: number;
  frozenXml: string | null;
  tfdXml: string | null;
  stampedXml: string;
}

/** Up to `limit` invoices that still store their stamped XML whole, by id after `after`, across organizations (the owner's session). */
export async function stampedCopies(db: Db, after: string | undefined, limit: number): Promise<StampedCopy[]> {
  const rows = await db.invoice.findMany({
    where: { stampedXml: { not: null }, ...(after ? { id: { gt: after } } : {}) },
    orderBy: { id: 'asc' },
    take: limit,
    select: {
      id: true,
      organizationId: true,
      serie: true,
      folio: true,
      frozenXml: true,
      tfdXml: true,
      stampedXml: true,
    },
  });
  return rows.flatMap((r) => (r.stampedXml === null ? [] : [{ ...r, stampedXml: r.stampedXml }]));
}

/**
 * Forgets the stored copies of these invoices, each kept while it has no TFD to rebuild it from.
 * @returns how many were forgotten.
 */
export async function forgetStampedCopies(
  db: Db,
  invoices: readonly { id: string; organizationId: string }[],
): Promise<number> {
  if (invoices.length === 0) return 0;
  const { count } = await db.invoice.updateMany({
    where: {
      OR: invoices.map((i) => ({ id: i.id, organizationId: i.organizationId })),
      stampedXml: { not: null },
      tfdXml: { not: null },
      frozenXml: { not: null },
    },
    data: { stampedXml: null },
  });
  return count;
}
