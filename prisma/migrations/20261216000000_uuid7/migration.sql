-- Time-ordered ids (UUID version 7, RFC 9562) for the rows Postgres itself names. Prisma's
-- @default(uuid(7)) already gives the application's rows version-7 ids; the set-wise statements of
-- @timbra/db (a payment's payment, invoice and outbox row, a provider event, a PAC call) and the
-- triggers' events and deliveries used gen_random_uuid(), a random version 4. A random primary key
-- puts every insert, and every lookup of a recent row (the relay's join to the invoice), on a random
-- page of an index that outgrows memory as history grows; a time-ordered one keeps them on the
-- index's last pages (`npm run bench:history`).
--
-- 48 bits of Unix milliseconds, the version (7), then the random bits of a version-4 UUID with its
-- variant kept. `at` lets a bulk load date its rows (the history benchmark).
CREATE FUNCTION timbra_uuid7(at timestamptz DEFAULT clock_timestamp()) RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  SELECT (lpad(to_hex(floor(extract(epoch FROM at) * 1000)::bigint), 12, '0') || '7'
          || substr(r, 14, 3) || substr(r, 17, 16))::uuid
  FROM (SELECT replace(gen_random_uuid()::text, '-', '') AS r) AS random
$$;

ALTER TABLE "events" ALTER COLUMN "id" SET DEFAULT timbra_uuid7();
ALTER TABLE "deliveries" ALTER COLUMN "id" SET DEFAULT timbra_uuid7();
ALTER TABLE "delivery_attempts" ALTER COLUMN "id" SET DEFAULT timbra_uuid7();
ALTER TABLE "global_periods" ALTER COLUMN "id" SET DEFAULT timbra_uuid7();
ALTER TABLE "tickets" ALTER COLUMN "id" SET DEFAULT timbra_uuid7();
