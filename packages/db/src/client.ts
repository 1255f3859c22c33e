/**
 * A Prisma client over a node-postgres pool we hold, with the lean runner of the hot path on the same
 * connections (lean.ts). `createPrisma` builds one over a pool of its own; platform mode builds one
 * an organization over a shared pool (organizations/clients.ts).
 */
import { PrismaPg } from '@prisma/adapter-pg';
import type pg from 'pg';
import { leanDbOver, registerLeanDb } from './lean.ts';
import { PrismaClient } from './generated/client.ts';

/**
 * Prisma on `pool` (and the lean runner, whose `plannedOnce` statements go to `plannedOnceSessions`).
 * `$disconnect()` ends `pool` (`end`), even when Prisma itself never connected: a client used only
 * through the lean runner would otherwise keep its connections, and its process, alive.
 */
export function prismaOver(pool: pg.Pool, plannedOnceSessions?: pg.Pool): PrismaClient {
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool, { disposeExternalPool: true }) });
  registerLeanDb(prisma, leanDbOver(pool, undefined, plannedOnceSessions));
  const disconnect = prisma.$disconnect.bind(prisma);
  prisma.$disconnect = async () => {
    await disconnect();
    if (!pool.ending) await pool.end();
  };
  return prisma;
}
