/**
 * The outbox: the only place rows are written to it and the relay is woken. A row carries one
 * document's stamp (`stamp`) or one cancel request (`cancel`) to the worker; it is written in the
 * same transaction as what it carries, and announced with a NOTIFY on OUTBOX_CHANNEL whose payload
 * is the organization the writing session names (timbra_organization(); empty when it names none) — a hint only:
 * the relay drains the organizations named, and also polls every one.
 */
import pg from 'pg';
import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { col, queryRows, type Db, type RawDb } from '../sql.ts';

// Row schemas, built once: zod compiles a schema on its first parse.
const enqueueOutboxRow = z.object({ id: col.uuid });
const notifyOutboxRow = z.object({ notified: col.bigint });
const claimOutboxBatchRow = z.object({
  id: col.uuid,
  stamp_key: col.text,
  kind: z.enum(['stamp', 'cancel']),
  version: col.int,
  serie_folio: col.text,
  available_at: z.date(),
});
const outboxCountsByStatusRow = z.object({ status: col.text, n: col.int });
const lockedOutboxColumns = z.object({ id: col.uuid, status: col.text, invoice_id: col.uuid });

/** The Postgres channel a new or re-driven outbox row is announced on. */
export const OUTBOX_CHANNEL = 'timbra_outbox';

export type OutboxKind = 'stamp' | 'cancel';

/**
 * The outbox INSERT, as a statement to put in a CTE: one row per row of `source`, a relation with the
 * columns (kind, invoice_id, stamp_key, cancel_request_id, organization_id — null: the session's). A
 * stamp key already in the outbox is skipped (the document has its row). `RETURNING id, organization_id`.
 */
export function outboxInsertSql(source: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`
    INSERT INTO outbox (id, organization_id, kind, invoice_id, stamp_key, cancel_request_id)
    SELECT timbra_uuid7(), coalesce(s.organization_id, (SELECT timbra_organization_or_sole())), s.kind, s.invoice_id,
           s.stamp_key, s.cancel_request_id
    FROM (${source}) AS s
    ON CONFLICT (stamp_key, organization_id) DO NOTHING
    RETURNING id, organization_id`;
}

/**
 * The NOTIFY of the rows in `relation` (a CTE name or subquery with `id` and `organization_id`
 * columns), as an expression counting them. Its payload is the row's organization, so the relay
 * wakes for those without asking Postgres which organizations have rows pending (a statement a
 * payment at a steady rate); Postgres sends one notification a transaction for each organization
 * (identical payloads fold).
 */
export function notifyOutboxSql(relation: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`(SELECT count(pg_notify(${OUTBOX_CHANNEL}, r.organization_id::text)) FROM ${relation} AS r)`;
}

export interface OutboxRowToWrite {
  kind: OutboxKind;
  invoiceId: string;
  stampKey: string;
  cancelRequestId?: string | null;
}

/** Writes outbox rows and announces them, in the caller's transaction. @returns the new rows' ids. */
export async function enqueueOutbox(tx: RawDb, rows: readonly OutboxRowToWrite[]): Promise<string[]> {
  if (rows.length === 0) return [];
  const source = Prisma.sql`
    SELECT *, NULL::uuid AS organization_id
    FROM unnest(${rows.map((r) => r.kind)}::text[], ${rows.map((r) => r.invoiceId)}::uuid[],
                ${rows.map((r) => r.stampKey)}::text[], ${rows.map((r) => r.cancelRequestId ?? null)}::uuid[])
      AS i(kind, invoice_id, stamp_key, cancel_request_id)`;
  const written = await queryRows(
    tx,
    enqueueOutboxRow,
    Prisma.sql`
      WITH outbox AS (${outboxInsertSql(source)})
      SELECT outbox.id, ${notifyOutboxSql(Prisma.sql`outbox`)} AS notified FROM outbox`,
  );
  return written.map((r) => r.id);
}

/** Announces existing outbox rows (a re-drive), delivered at the caller's commit. */
export async function notifyOutbox(db: RawDb, outboxIds: readonly string[]): Promise<void> {
  await queryRows(
    db,
    notifyOutboxRow,
    Prisma.sql`SELECT ${notifyOutboxSql(Prisma.sql`(SELECT id, organization_id FROM outbox WHERE id = ANY(${[...outboxIds]}::uuid[]))`)} AS notified`,
  );
}

/** An outbox row claimed by the relay. */
export interface ClaimedOutboxRow {
  id: string;
  stampKey: string;
  kind: OutboxKind;
  /** The document version it carries (see jobIdFor). */
  version: number;
  /** Its invoice's serie-folio (shown on the queue dashboard). */
  serieFolio: string;
}

/**
 * Claims up to `limit` pending rows that are due, oldest first, and marks them `enqueued`, in the
 * caller's transaction — one statement: the caller adds their jobs to the queue before it commits,
 * so a rollback (or a crash before the commit) leaves them pending for the next claim. FOR UPDATE
 * SKIP LOCKED: several relays never claim the same row. Never walks an id cursor: ids commit out of
 * order, so it asks for what is pending now. With `jobGroup`, its stamp rows are marked as published
 * in that `stamp-group` job (the sweeper looks for it: `staleEnqueuedOutboxRows`).
 */
export async function claimOutboxBatch(tx: RawDb, limit: number, jobGroup?: string): Promise<ClaimedOutboxRow[]> {
  const rows = await queryRows(
    tx,
    claimOutboxBatchRow,
    Prisma.sql`
      WITH claimed AS (
        SELECT id, available_at FROM outbox
        WHERE status = 'pending' AND available_at <= now()
        ORDER BY available_at
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )
      UPDATE outbox o SET status = 'enqueued', enqueued_at = now(), updated_at = now(),
        job_group = ${jobGroupSql(jobGroup)}
      FROM claimed c, invoices i
      WHERE o.id = c.id AND i.id = o.invoice_id
      RETURNING o.id, o.stamp_key, o.kind, o.version, i.serie || '-' || i.folio AS serie_folio,
                c.available_at`,
  );
  // RETURNING keeps no order: the jobs go to the queue oldest first, as claimed.
  rows.sort((a, b) => a.available_at.getTime() - b.available_at.getTime());
  return rows.map((r) => ({
    id: r.id,
    stampKey: r.stamp_key,
    kind: r.kind,
    version: r.version,
    serieFolio: r.serie_folio,
  }));
}

/** The claim's `job_group`: the group job for a stamp row, none for a cancel (always a job of its own). */
export function jobGroupSql(jobGroup: string | undefined): Prisma.Sql {
  return jobGroup === undefined ? Prisma.sql`NULL` : Prisma.sql`CASE WHEN o.kind = 'stamp' THEN ${jobGroup}::text END`;
}

const staleEnqueuedRow = z.object({
  id: col.uuid,
  stamp_key: col.text,
  version: col.int,
  job_group: col.text.nullable(),
});
const countRow = z.object({ n: col.int });

/**
 * Rows `enqueued` longer than `staleMs` ago by the database's clock (the clock that wrote
 * `enqueued_at`), oldest first: the sweeper's candidates for a job Redis lost. The query lives in
 * `timbra_stale_enqueued_outbox()` (migration 20270111000000), planned on the enqueued index
 * whatever the statistics say.
 */
export async function staleEnqueuedOutboxRows(db: RawDb, staleMs: number, limit: number) {
  const rows = await queryRows(
    db,
    staleEnqueuedRow,
    Prisma.sql`SELECT id, stamp_key, version, job_group FROM timbra_stale_enqueued_outbox(${staleMs}::float8, ${limit}::int)`,
  );
  return rows.map((r) => ({ id: r.id, stampKey: r.stamp_key, version: r.version, jobGroup: r.job_group }));
}

/**
 * Puts rows still `enqueued` back to `pending`, available now (the database's now: the relay claims
 * with it) and announces them. @returns how many moved (a worker may have finished one meanwhile).
 */
export async function republishEnqueuedOutboxRows(db: RawDb, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const [row] = await queryRows(
    db,
    countRow,
    Prisma.sql`WITH moved AS (
        UPDATE outbox SET status = 'pending', available_at = now(), updated_at = now()
        WHERE id = ANY(${[...ids]}::uuid[]) AND status = 'enqueued' RETURNING id, organization_id)
      SELECT count(*)::int AS n, ${notifyOutboxSql(Prisma.sql`moved`)} AS notified FROM moved`,
  );
  return row?.n ?? 0;
}

/** Outbox rows by status (without `done` unless asked: it grows for ever). */
export async function outboxCountsByStatus(db: RawDb, options: { includeDone?: boolean } = {}) {
  return queryRows(
    db,
    outboxCountsByStatusRow,
    options.includeDone
      ? Prisma.sql`SELECT status, count(*)::int AS n FROM outbox GROUP BY status ORDER BY status`
      : Prisma.sql`SELECT status, count(*)::int AS n FROM outbox WHERE status <> 'done' GROUP BY status ORDER BY status`,
  );
}

/**
 * LISTENs on `channel` (the outbox's unless told) and calls `onNotify` with each NOTIFY's payload. A lost connection (Postgres
 * restarted, the backend terminated) is re-established with backoff (0.25 s doubling to 10 s); in
 * the meantime the caller polls. After each (re)connect `onNotify` is called once without a payload:
 * rows of any organization may have committed while nobody listened. `ready` resolves after the
 * first attempt, successful or not.
 */
export function listenForOutbox(
  databaseUrl: string,
  logger: { warn: (fields: object, message: string) => void; info: (message: string) => void },
  onNotify: (payload?: string) => void,
  channel: string = OUTBOX_CHANNEL,
) {
  let closed = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  let delayMs = 250;
  let lost = false;
  const connect = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: databaseUrl });
    client = c;
    let dropped = false;
    const drop = (error?: unknown) => {
      if (dropped || closed) return;
      dropped = true;
      if (!lost) logger.warn({ err: error, channel }, 'LISTEN connection lost; polling until it is back');
      lost = true;
      c.end().catch(() => undefined);
      retry = setTimeout(() => void connect(), delayMs);
      delayMs = Math.min(delayMs * 2, 10_000);
    };
    c.on('notification', (message) => onNotify(message.payload));
    c.on('error', drop);
    c.on('end', () => drop(new Error('connection ended')));
    try {
      await c.connect();
      await c.query(`LISTEN ${channel}`);
    } catch (error) {
      drop(error);
      return;
    }
    if (closed) return;
    delayMs = 250;
    if (lost) logger.info(`LISTEN ${channel} connection re-established`);
    lost = false;
    onNotify();
  };
  const ready = connect();
  return {
    ready,
    close: async () => {
      closed = true;
      clearTimeout(retry);
      await client?.end().catch(() => undefined);
    },
  };
}

/** Locks an outbox row until commit and returns it, or undefined. */
export async function lockOutboxRow(
  tx: RawDb,
  outboxId: string,
): Promise<{ id: string; status: string; invoiceId: string } | undefined> {
  const [row] = await queryRows(
    tx,
    lockedOutboxColumns,
    Prisma.sql`SELECT id, status, invoice_id FROM outbox WHERE id = ${outboxId}::uuid FOR UPDATE`,
  );
  return row && { id: row.id, status: row.status, invoiceId: row.invoice_id };
}

/** The id of an invoice's stamp row (its outbox row of kind `stamp`); throws when it has none. */
export async function stampRowIdOf(db: Db, invoiceId: string): Promise<string> {
  const row = await db.outboxRow.findFirstOrThrow({ where: { invoiceId, kind: 'stamp' }, select: { id: true } });
  return row.id;
}
