import type { Db } from './sql.ts';

/** Whether Postgres answers (readiness checks). @throws when it does not */
export async function pingDatabase(db: Db): Promise<void> {
  await db.$queryRaw`SELECT 1`;
}
