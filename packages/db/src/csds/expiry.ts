/**
 * What the expiry metrics watch: each organization's CSD and e.firma about to end, read by a session
 * that names no organization through the database functions timbra_csd_validity and
 * timbra_efirma_validity (the certificates' public facts only, never a sealed key).
 */
import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { queryRows, type RawDb } from '../sql.ts';
import { csdToWatch } from './csds.ts';
import { efirmaToWatch } from './efirmas.ts';

/** A certificate an expiry metric watches: whose, which, and when it ends. */
export interface Watched {
  organizationId: string;
  rfc: string;
  noCertificado: string;
  validTo: Date;
}

const validityRow = z.object({
  organization_id: z.string(),
  rfc: z.string(),
  no_certificado: z.string(),
  valid_from: z.date(),
  valid_to: z.date(),
  /** A CSD's activeFrom, an e.firma's uploadedAt: what tells the one in use among the valid. */
  since: z.date(),
});

/** Every organization's CSD to watch (`csdToWatch`): the source of timbra_csd_expires_in_seconds. */
export function csdsToWatch(db: RawDb, at: Date): Promise<Watched[]> {
  return toWatch(
    db,
    Prisma.sql`SELECT organization_id, rfc, no_certificado, valid_from, valid_to, active_from AS since
               FROM timbra_csd_validity()`,
    (mine) =>
      csdToWatch(
        mine.map((c) => ({ ...c, activeFrom: c.since })),
        at,
      ),
  );
}

/** Every organization's e.firma to watch (`efirmaToWatch`): the source of timbra_efirma_expires_in_seconds. */
export function efirmasToWatch(db: RawDb, at: Date): Promise<Watched[]> {
  return toWatch(
    db,
    Prisma.sql`SELECT organization_id, rfc, no_certificado, valid_from, valid_to, uploaded_at AS since
               FROM timbra_efirma_validity()`,
    (mine) =>
      efirmaToWatch(
        mine.map((e) => ({ ...e, uploadedAt: e.since })),
        at,
      ),
  );
}

type Certificate = Watched & { validFrom: Date; since: Date };

/** The one certificate `choose` picks of each organization's. */
async function toWatch(db: RawDb, query: Prisma.Sql, choose: (mine: Certificate[]) => Watched | undefined) {
  const byOrganization = new Map<string, Certificate[]>();
  for (const r of await queryRows(db, validityRow, query)) {
    const certificate = {
      organizationId: r.organization_id,
      rfc: r.rfc,
      noCertificado: r.no_certificado,
      validFrom: r.valid_from,
      validTo: r.valid_to,
      since: r.since,
    };
    byOrganization.set(r.organization_id, [...(byOrganization.get(r.organization_id) ?? []), certificate]);
  }
  return [...byOrganization.values()].flatMap((mine) => {
    const watched = choose(mine);
    return watched
      ? [
          {
            organizationId: watched.organizationId,
            rfc: watched.rfc,
            noCertificado: watched.noCertificado,
            validTo: watched.validTo,
          },
        ]
      : [];
  });
}
