import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { col, execute, queryRows, type Db, type RawDb } from '../sql.ts';

// Row schemas, built once: zod compiles a schema on its first parse.
const takeFolioRow = z.object({ first_folio: col.int });

/**
 * The folio counter, and the only statement that moves it. A serie's folios are gapless: the counter
 * row is locked and incremented inside the transaction that writes the invoices (a rollback gives
 * the numbers back; no Postgres sequence, which would leave gaps).
 *
 * As a fragment, for a set-wise statement: `counts` yields (organization_id uuid, serie text, n
 * int), one row per counter; each counter with n > 0 is locked and moved (none otherwise).
 * `RETURNING organization_id, serie, first_folio`, the first of the n consecutive folios taken.
 */
export function takeFoliosOfSql(counts: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`
    UPDATE series SET next_folio = series.next_folio + taken.n
    FROM (${counts}) AS taken
    WHERE series.organization_id = taken.organization_id AND series.serie = taken.serie AND taken.n > 0
    RETURNING series.organization_id, series.serie, series.next_folio - taken.n AS first_folio`;
}

/** `takeFoliosOfSql` for one counter: `count` folios of `serie` (a scalar subquery or expression). */
export function takeFoliosSql(organizationId: string, serie: string, count: Prisma.Sql): Prisma.Sql {
  return takeFoliosOfSql(
    Prisma.sql`SELECT ${organizationId}::uuid AS organization_id, ${serie}::text AS serie, (${count})::int AS n`,
  );
}

export class SerieNotConfiguredError extends Error {
  readonly code = 'SERIE_NOT_CONFIGURED';
  constructor(readonly serie: string) {
    super(`serie ${serie} is not configured`);
    this.name = 'SerieNotConfiguredError';
  }
}

/**
 * Takes the next folio of `serie` in the caller's transaction (its counter row stays locked until
 * commit). @throws SerieNotConfiguredError
 */
export async function takeFolio(tx: RawDb, organizationId: string, serie: string): Promise<number> {
  const [counter] = await queryRows(tx, takeFolioRow, takeFoliosSql(organizationId, serie, Prisma.sql`1`));
  if (!counter) throw new SerieNotConfiguredError(serie);
  return counter.first_folio;
}

/** Makes sure each configured serie has its counter row (start-up; idempotent). */
export async function ensureSeries(
  db: RawDb,
  organizationId: string,
  series: readonly { serie: string; kind: 'I' | 'E' | 'P' }[],
): Promise<void> {
  for (const s of series) {
    await execute(
      db,
      Prisma.sql`
        INSERT INTO series (id, organization_id, serie, kind) VALUES (timbra_uuid7(), ${organizationId}::uuid, ${s.serie}, ${s.kind})
        ON CONFLICT (organization_id, serie) DO NOTHING`,
    );
  }
}

/** What the worker reads of an emisor: its row's facts. */
export interface EmisorRow {
  id: string;
  rfc: string;
  nombre: string;
  regimenFiscal: string;
  lugarExpedicion: string;
}
const emisorFacts = { id: true, rfc: true, nombre: true, regimenFiscal: true, lugarExpedicion: true } as const;

/** The emisor as the API last recorded it (`ensureEmisor`), by its RFC; undefined before the API's first start. */
export async function emisorByRfc(db: Db, rfc: string): Promise<EmisorRow | undefined> {
  return (await db.emisor.findFirst({ where: { rfc, mode: 'live' }, select: emisorFacts })) ?? undefined;
}

/** The emisor (an organization's own row), by its id; undefined when the session cannot see it. */
export async function emisorById(db: Db, id: string): Promise<EmisorRow | undefined> {
  return (await db.emisor.findUnique({ where: { id }, select: emisorFacts })) ?? undefined;
}

/** The emisor's row, made or brought up to date from the configuration; returns its id. */
export async function ensureEmisor(
  db: Db,
  emisor: { rfc: string; nombre: string; regimenFiscal: string; lugarExpedicion: string },
): Promise<string> {
  // One statement, so two first starts at once make one row; its test twin, if any, keeps the same facts.
  const [row] = await queryRows(
    db,
    z.object({ id: z.string() }),
    Prisma.sql`INSERT INTO emisores (id, rfc, nombre, regimen_fiscal, lugar_expedicion)
               VALUES (timbra_uuid7(), ${emisor.rfc}, ${emisor.nombre}, ${emisor.regimenFiscal}, ${emisor.lugarExpedicion})
               ON CONFLICT (rfc) WHERE mode = 'live'
               DO UPDATE SET nombre = EXCLUDED.nombre, regimen_fiscal = EXCLUDED.regimen_fiscal,
                             lugar_expedicion = EXCLUDED.lugar_expedicion
               RETURNING id::text AS id`,
  );
  await execute(
    db,
    Prisma.sql`UPDATE emisores SET nombre = ${emisor.nombre}, regimen_fiscal = ${emisor.regimenFiscal},
                                  lugar_expedicion = ${emisor.lugarExpedicion}
               WHERE live_id = ${row!.id}::uuid`,
  );
  return row!.id;
}
