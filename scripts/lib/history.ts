/**
 * History for the benchmarks: a database as production's looks after months of payments, written in
 * SQL (bench:history, and bench:e2e before its clock: a stamp's generic plan is then made on tables
 * of a realistic size).
 */
import pg from 'pg';
import type { PrismaClient } from '@timbra/db';
import { pruneHistory, retentionDays, type RetentionPolicy, type RetentionTable } from '@timbra/db/retention';

const ms = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;

/**
 * The rows of a table the history holds: those written within its retention window (an hour short of
 * it, so none has crossed the rule's cutoff when the dry run checks, minutes later), or all of them.
 */
function keptWhere(retention: RetentionPolicy | undefined, table: RetentionTable): string {
  const days = retention ? retentionDays(retention, table) : 0;
  return days > 0 ? `WHERE at >= now() - make_interval(days => ${days}) + interval '1 hour'` : '';
}

/**
 * Writes `n` stamped invoices of history of `organizationId`, with everything around them (payments,
 * done outbox rows, PAC calls and provider events as `retention` leaves them, or all with none; a
 * day's Idempotency-Key records), in chunks of `chunk` (a transaction each), dated over the last two
 * years; then VACUUM ANALYZE and a CHECKPOINT. Through `say`, its progress.
 */
export async function writeHistory(options: {
  prisma: PrismaClient;
  databaseUrl: string;
  organizationId: string;
  invoices: number;
  chunk: number;
  retention: RetentionPolicy | undefined;
  say: (line: string) => void;
}): Promise<void> {
  const { prisma, databaseUrl, organizationId, invoices: n, chunk, retention, say } = options;
  const kept = (table: RetentionTable) => keptWhere(retention, table);
  const client = new pg.Client({ connectionString: databaseUrl });
  const written = { outbox: 0, attempts: 0, events: 0 };
  const rowsWritten = async (sql: string) => (await client.query(sql)).rowCount ?? 0;
  await client.connect();
  try {
    await client.query("SET session_replication_role = 'replica'");
    const apiClient = (
      await client.query<{ id: string }>(
        `INSERT INTO api_clients (id, name, key_hash) VALUES (timbra_uuid7(), 'history', repeat('h', 64)) RETURNING id`,
      )
    ).rows[0]!.id;
    const started = process.hrtime.bigint();
    // Spread over the last two years, oldest first.
    const spanSeconds = 2 * 365 * 86_400;
    for (let from = 1; from <= n; from += chunk) {
      const to = Math.min(n, from + chunk - 1);
      const at = `now() - make_interval(secs => ${spanSeconds} * (1 - g::float8 / ${n}))`;
      await client.query('BEGIN');
      // Ids as Postgres gives them (timbra_uuid7, dated when each row was written), decided once a row.
      // The provider's ids as Stripe's look to an index: in no order (the ingest sends the same kind),
      // so the unique indexes that deduplicate payments and events take each insert at a random page.
      await client.query(
        `CREATE TEMP TABLE h ON COMMIT DROP AS
         SELECT g, at, timbra_uuid7(at) AS payment_id, timbra_uuid7(at) AS invoice_id, upper(gen_random_uuid()::text) AS uuid,
                'pi_' || substr(md5('p' || g), 1, 24) AS external_id, 'evt_' || substr(md5('e' || g), 1, 24) AS event_id
         FROM (SELECT g, ${at} AS at FROM generate_series($1::int, $2::int) g) AS s`,
        [from, to],
      );
      await client.query(
        `INSERT INTO payments (id, provider, external_id, amount, currency, occurred_at, created_at)
         SELECT payment_id, 'stripe', external_id, 116.00, 'MXN', at, at FROM h`,
      );
      await client.query(
        `INSERT INTO invoices (id, organization_id, payment_id, kind, serie, folio, fecha, moneda, sub_total, total, status, stamp_key,
                               frozen_xml, cadena_original, uuid, tfd_xml, pac, stamped_at, created_at, updated_at)
         SELECT invoice_id, $1::uuid, payment_id, 'I', 'H', g, to_char(at, 'YYYY-MM-DD"T"HH24:MI:SS'),
                'MXN', 100.00, 116.00, 'stamped', 'hist-' || g,
                repeat(md5('x' || g), 16), repeat(md5('c' || g), 4), uuid, repeat(md5('t' || g), 8), 'primary', at, at, at
         FROM h`,
        [organizationId],
      );
      written.outbox += await rowsWritten(
        `INSERT INTO outbox (id, kind, invoice_id, stamp_key, status, attempts, enqueued_at, created_at, updated_at)
         SELECT timbra_uuid7(at), 'stamp', invoice_id, 'hist-' || g, 'done', 1, at, at, at FROM h ${kept('outbox')}`,
      );
      written.attempts += await rowsWritten(
        `INSERT INTO pac_attempts (id, invoice_id, pac, outcome, uuid, code, duration_ms, created_at)
         SELECT timbra_uuid7(at), invoice_id, 'primary', 'stamped', uuid, NULL, 120, at FROM h ${kept('pac_attempts')}`,
      );
      written.events += await rowsWritten(
        `INSERT INTO webhook_events (id, provider, event_id, type, result, payload, received_at)
         SELECT timbra_uuid7(at), 'stripe', event_id, 'payment_intent.succeeded', 'accepted',
                jsonb_build_object('id', event_id, 'amount', 11600), at
         FROM h ${kept('webhook_events')}`,
      );
      await client.query('COMMIT');
      const seconds = ms(started) / 1000;
      say(
        `    ${to.toLocaleString('en')} invoices of history (${(to / seconds).toFixed(0)}/s, ${seconds.toFixed(0)} s)`,
      );
    }
    // A busy day's Idempotency-Key records (they live 24 h): a tenth of the invoices, at most 1 M.
    const keys = Math.min(1_000_000, Math.ceil(n / 10));
    await client.query(
      `INSERT INTO idempotency_keys (id, client_id, key, fingerprint, response_status, response_body, created_at, expires_at)
       SELECT timbra_uuid7(now() - make_interval(secs => g % 86400)), $1::uuid, 'k' || g, md5('f' || g) || md5('g' || g), 201, '{"ok":true}',
              now() - make_interval(secs => g % 86400), now() + make_interval(secs => 86400 - g % 86400)
       FROM generate_series(1, $2::int) g`,
      [apiClient, keys],
    );
    say(`    ${keys.toLocaleString('en')} Idempotency-Key records`);
    await client.query('RESET session_replication_role');
    say(
      `    kept (retention ${retention ? 'defaults' : 'off'}): ${written.outbox.toLocaleString('en')} done outbox rows, ${written.attempts.toLocaleString('en')} PAC calls, ${written.events.toLocaleString('en')} provider events`,
    );
    if (retention) {
      // The history is what the rules leave: their own dry run (the function the worker's sweeper
      // calls) finds nothing more to delete.
      const left = await pruneHistory(prisma, retention, { dryRun: true });
      if (Object.values(left).some((n) => n > 0))
        throw new Error(
          `the retention rules would still delete ${JSON.stringify(left)}: the history is not what they leave`,
        );
    }
    say('    VACUUM ANALYZE…');
    await client.query('VACUUM ANALYZE');
    // The bulk write's WAL is flushed now, not by a checkpoint in the middle of the next measurement.
    await client.query('CHECKPOINT');
    const sizes = await client.query<{ size: string }>(
      'SELECT pg_size_pretty(pg_database_size(current_database())) AS size',
    );
    say(`    database ${sizes.rows[0]!.size} after ${(ms(started) / 1000).toFixed(0)} s`);
  } finally {
    await client.end();
  }
}
