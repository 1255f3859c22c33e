/**
 * The one way this package runs a raw statement: its rows are checked against a zod schema, never
 * asserted, so a column renamed in a migration fails loudly at the statement that reads it. Row
 * schemas are module constants (zod compiles a schema on its first parse: building one per call
 * would compile it per call).
 */
import { z } from 'zod';
import type { Prisma, PrismaClient } from './generated/client.ts';

/** A transaction or the client itself: statements that need no transaction of their own take either. */
export type Db = PrismaClient | Prisma.TransactionClient;
export type Tx = Prisma.TransactionClient;

/**
 * What a raw statement needs: Prisma's client or one of its transactions, or the lean runner on
 * node-postgres (lean.ts) that the relay and the stamper use. A statement that is raw SQL only
 * takes this, so either can send it.
 */
export interface RawDb {
  $queryRaw<T = unknown>(query: Prisma.Sql): PromiseLike<T>;
  $executeRaw(query: Prisma.Sql): PromiseLike<number>;
}

/** Runs `query` and parses each row with `row` (a schema built once, at module level). */
export async function queryRows<T extends z.ZodType>(db: RawDb, row: T, query: Prisma.Sql): Promise<z.infer<T>[]> {
  const rows = await db.$queryRaw<unknown[]>(query);
  return rows.map((r) => row.parse(r));
}

/** Runs `query` for its effect; returns the rows affected. */
export function execute(db: RawDb, query: Prisma.Sql): Promise<number> {
  return Promise.resolve(db.$executeRaw(query));
}

/** Column parsers for what Postgres sends back through the driver adapter. */
export const col = {
  uuid: z.string(),
  text: z.string(),
  int: z.number().int(),
  /** `count(*)` and other bigint results. */
  bigint: z.union([z.bigint(), z.number(), z.string()]).transform((v) => Number(v)),
  bool: z.boolean(),
  json: z.unknown(),
} as const;
