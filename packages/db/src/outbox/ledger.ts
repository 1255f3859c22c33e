/**
 * The PAC-call ledger (pac_attempts): the write-ahead record of each call before it is made, and its
 * outcome after — with the stamp (stamping.ts, one statement) or with a failed attempt's error.
 */
import { z } from 'zod';
import { Prisma, type PrismaClient } from '../generated/client.ts';
import { col, queryRows, type Db, type RawDb } from '../sql.ts';
import { plannedOnce } from '../lean.ts';

const idRow = z.object({ id: col.uuid });

/**
 * Which organization a stamper's statement item belongs to; its rows are matched to it. Omitted, the
 * one its session names (or, for the owner's tools, the deployment's sole one), as a new row's
 * default. A statement batched across organizations (`OrganizationClients.across()`) names several,
 * so each item must give its own: one that gives none matches no row and writes none.
 */
export interface OfOrganization {
  organizationId?: string | undefined;
}

/** A PAC call as the ledger keeps it. `id` is the write-ahead row's, when one was written. */
export interface PacCallRecord {
  id?: string;
  pac: string;
  outcome: string;
  uuid?: string;
  code?: string;
  durationMs: number;
}

/**
 * Write-ahead: records a PAC call `in_flight` (committed) before it is made; its outcome is written on
 * the same row after. A worker killed during the call leaves the row, so the next attempt stays with
 * that PAC, which may have stamped.
 *
 * Only while the outbox row is pending or enqueued and the invoice still at `version`: a correction
 * holds the row (FOR SHARE here waits for it) before it asks the PACs whether they stamped the
 * version, so no call can start after that question. @returns false when the call must not be made.
 */
export async function recordPacCallInFlight(db: Db, call: PacCallInFlight): Promise<boolean> {
  return (await recordPacCallsInFlight(db, [call]))[0]!;
}

export interface PacCallInFlight extends OfOrganization {
  outboxId: string;
  invoiceId: string;
  version: number;
  pac: string;
  id: string;
}

/** `recordPacCallInFlight` for several calls in one statement (one commit); whether each may be made. */
export async function recordPacCallsInFlight(db: RawDb, calls: readonly PacCallInFlight[]): Promise<boolean[]> {
  const entries = calls.map((c) => ({
    id: c.id,
    outbox_id: c.outboxId,
    invoice_id: c.invoiceId,
    version: c.version,
    pac: c.pac,
    given: c.organizationId ?? null,
  }));
  // Planned once per session (lean.ts): planning was 39–56% of its time in batches of one (one
  // organization's calls among 1 000, pg_stat_statements).
  const written = await queryRows(
    db,
    idRow,
    plannedOnce(Prisma.sql`
      ${inFlightInsertSql(
        Prisma.sql`SELECT c.*, coalesce(c.given, (SELECT timbra_organization_or_sole())) AS org
                   FROM json_to_recordset(${JSON.stringify(entries)}::json)
                        AS c(id uuid, outbox_id uuid, invoice_id uuid, version int, pac text, given uuid)`,
        calls.map((c) => c.outboxId),
      )}
      RETURNING id`),
  );
  const ids = new Set(written.map((r) => r.id));
  return calls.map((c) => ids.has(c.id));
}

/**
 * The write-ahead insert, the one place its rule lives: each call of `calls` (rows with id,
 * outbox_id, org, invoice_id, version, pac) recorded `in_flight` only while its outbox row is
 * pending or enqueued and its invoice at that version, the row share-locked meanwhile (a
 * correction's hold waits for it, and stops every call after). `outboxIds`: the rows', so the
 * check starts from the outbox's key. Used by `recordPacCallsInFlight` and the stamper's load.
 */
export function inFlightInsertSql(calls: Prisma.Sql, outboxIds: readonly string[]): Prisma.Sql {
  return Prisma.sql`
    INSERT INTO pac_attempts (id, organization_id, invoice_id, pac, outcome, version, duration_ms)
    SELECT c.id, c.org, c.invoice_id, c.pac, 'in_flight', c.version, 0
    FROM (${calls}) c
    WHERE EXISTS (SELECT 1 FROM outbox o JOIN invoices i ON i.id = o.invoice_id AND i.organization_id = o.organization_id
                  WHERE o.id = ANY(${outboxIds}::uuid[]) AND o.id = c.outbox_id
                    AND o.organization_id = c.org AND i.id = c.invoice_id
                    AND o.status IN ('pending', 'enqueued') AND i.version = c.version
                  FOR SHARE OF o)`;
}

/**
 * The ledger write: each call's `in_flight` row (by its id) gets its outcome; a call without one (a
 * circuit-open skip) gets a row of its own.
 */
export function ledgerUpsertSql(
  calls: readonly (PacCallRecord & OfOrganization & { invoiceId: string; version: number })[],
): Prisma.Sql {
  const entries = calls.map((a) => ({
    id: a.id ?? null,
    given: a.organizationId ?? null,
    invoice_id: a.invoiceId,
    version: a.version,
    pac: a.pac,
    outcome: a.outcome,
    uuid: a.uuid ?? null,
    code: a.code ?? null,
    duration_ms: a.durationMs,
  }));
  return Prisma.sql`
    INSERT INTO pac_attempts (id, organization_id, invoice_id, pac, outcome, uuid, code, version, duration_ms)
    SELECT COALESCE(a.id, timbra_uuid7()), coalesce(a.given, (SELECT timbra_organization_or_sole())), a.invoice_id, a.pac, a.outcome,
           a.uuid, a.code, a.version, a.duration_ms
    FROM json_to_recordset(${JSON.stringify(entries)}::json)
         AS a(id uuid, given uuid, invoice_id uuid, version int, pac text, outcome text, uuid text, code text, duration_ms int)
    ON CONFLICT (id, organization_id) DO UPDATE
      SET outcome = EXCLUDED.outcome, uuid = EXCLUDED.uuid, code = EXCLUDED.code, duration_ms = EXCLUDED.duration_ms`;
}

/** Records a failed stamping attempt: its PAC calls in the ledger and the error on the row, together. */
export async function recordFailedAttempt(
  prisma: PrismaClient,
  row: { outboxId: string; invoiceId: string; version: number },
  calls: readonly PacCallRecord[],
  lastError: string,
): Promise<void> {
  // Interactive, not a batch: an organization client runs no batch transaction (organizations/clients.ts).
  await prisma.$transaction(async (tx) => {
    await tx.$executeRaw`${ledgerUpsertSql(calls.map((c) => ({ ...c, invoiceId: row.invoiceId, version: row.version })))}`;
    await tx.outboxRow.update({
      where: { id: row.outboxId },
      data: { attempts: { increment: 1 }, lastError: lastError.slice(0, 2000) },
    });
  });
}
