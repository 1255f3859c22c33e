/**
 * What every `npm run ops --` command shares: how it prints (`--json`), fails (exit codes), and opens
 * the database and the dead-letter queue — lazily, so `--help` and a usage mistake load neither.
 */
import { InvalidArgumentError } from 'commander';
import { isUuid } from '@timbra/db/light';
import type { PrismaClient } from '@timbra/db';
import type { Queue } from 'bullmq';

// Only what parsing needs is imported above (the light entries of @timbra/db and cfdi-core's CSD
// module). The data layer, BullMQ, the reconciliation and the worker's settings (config-schema.ts:
// the worker's schema without the CFDI domain its start-up checks load) are loaded by the command
// that uses them: `--help` and a usage mistake need none of them.
export const dbLib = {
  client: () => import('@timbra/db'),
  outbox: () => import('@timbra/db/outbox'),
  deliveries: () => import('@timbra/db/deliveries'),
  keys: () => import('@timbra/db/keys'),
  csds: () => import('@timbra/db/csds'),
  organizations: () => import('@timbra/db/organizations'),
  invoices: () => import('@timbra/db/invoices'),
  retention: () => import('@timbra/db/retention'),
  tickets: () => import('@timbra/db/tickets'),
  webhookEvents: () => import('@timbra/db/webhook-events'),
  redis: () => import('@timbra/db/redis'),
};

/** Bad usage found after parsing (a malformed id, an unknown scope): exit 2, like the parser's own. */
export class UsageError extends Error {}
/** A check that could not be made (or, for a command that acts, nothing done): exit 3. */
export class CannotCheck extends Error {}

export const uuidArg = (what: string) => (value: string) => {
  if (!isUuid(value)) throw new InvalidArgumentError(`${what} is a UUID (e.g. from dlq:list)`);
  return value.toLowerCase();
};

/** Where a run reads its settings and writes: this process's own (processIo), or a test's. */
export interface OpsIo {
  env: NodeJS.ProcessEnv;
  stdout(text: string): void;
  stderr(text: string): void;
}
export const processIo: OpsIo = {
  env: process.env,
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
};

// One run at a time (runOps): its output, its `--json`, its exit code.
let io = processIo;
let json = false;
let code = 0;
export function beginRun(given: OpsIo): void {
  io = given;
  json = false;
  code = 0;
}
/** The run's settings (the worker's environment variables). */
export const env = (): NodeJS.ProcessEnv => io.env;
export const exitCode = (): number => code;
export const setExitCode = (value: number): void => {
  code = value;
};
/** `--json` given: commands print JSON. */
export const printJson = (on: boolean) => {
  json = on;
};
export const out = (value: unknown, text: string) => io.stdout(`${json ? JSON.stringify(value) : text}\n`);
/** A line on stderr: progress, or what went wrong. */
export const note = (text: string) => io.stderr(text);
export const fail = (message: string, exit = 1) => {
  io.stderr(`${message}\n`);
  code = exit;
};

// The database (and Redis) are opened by the first command that needs them: --help needs neither.
let prismaClient: PrismaClient | undefined;
export async function config() {
  const { loadOpsConfig } = await import('../config-schema.ts');
  try {
    return loadOpsConfig(io.env);
  } catch (error) {
    throw new CannotCheck((error as Error).message);
  }
}
export async function db(): Promise<PrismaClient> {
  if (!prismaClient) {
    const { DATABASE_URL } = await config();
    prismaClient = (await dbLib.client()).createPrisma(DATABASE_URL, { poolSize: 2 });
  }
  return prismaClient;
}

/**
 * A client of one organization: its role and session (row-level security, and its id as the default
 * of every row written), as the apps write. What the commands that write run on: the owner's session
 * names no organization, and a platform's database holds many.
 */
const organizationClients = new Map<string, PrismaClient>();
export async function organizationDb(organizationId: string): Promise<PrismaClient> {
  let client = organizationClients.get(organizationId);
  if (!client) {
    const { DATABASE_URL } = await config();
    client = (await dbLib.client()).createPrisma(DATABASE_URL, { poolSize: 1, organization: organizationId });
    organizationClients.set(organizationId, client);
  }
  return client;
}

/**
 * The organization `given` names (its id or RFC), else EMISOR_RFC's, else the only live one there
 * is; a usage error when none matches or several could. An RFC names the live organization: its
 * test twin (test keys' data, same RFC) is named by its id.
 */
export async function organizationNamed(given: string | undefined): Promise<{ id: string; rfc: string }> {
  const owner = await db();
  const wanted = given ?? env().EMISOR_RFC;
  const { isUuid } = await dbLib.client();
  const rows = wanted
    ? await owner.emisor.findMany({
        where: isUuid(wanted.toLowerCase())
          ? { id: wanted.toLowerCase() }
          : { rfc: wanted.toUpperCase(), mode: 'live' },
        select: { id: true, rfc: true },
      })
    : await owner.emisor.findMany({ where: { mode: 'live' }, select: { id: true, rfc: true }, take: 2 });
  if (rows.length === 1) return rows[0]!;
  if (wanted) throw new UsageError(`--organization: no organization ${wanted} (its id, or a live one's RFC)`);
  throw new UsageError(
    rows.length === 0
      ? 'no organization in the database yet: the API makes the first at its start'
      : 'several organizations: name one with --organization <id or RFC> (or set EMISOR_RFC)',
  );
}

/** The organization a row of `table` belongs to, as the owner sees it; undefined when there is no such row. */
export async function organizationOfRow(table: 'outbox' | 'deliveries', id: string): Promise<string | undefined> {
  const owner = await db();
  const row =
    table === 'outbox'
      ? await owner.outboxRow.findUnique({ where: { id }, select: { organizationId: true } })
      : await owner.delivery.findUnique({ where: { id }, select: { organizationId: true } });
  return row?.organizationId;
}

/** The stamp-dlq queue, for settling letters after a re-drive; undefined when Redis does not answer. */
export async function deadLetterQueue(): Promise<{ dlq: Queue; close: () => Promise<void> } | undefined> {
  const { REDIS_URL, REDIS_CLUSTER, QUEUE_PREFIX } = await config();
  const [{ connectRedis, redisTarget }, { STAMP_DLQ }, { Queue }] = await Promise.all([
    dbLib.redis(),
    dbLib.outbox(),
    import('bullmq'),
  ]);
  const redis = connectRedis(redisTarget(REDIS_URL, REDIS_CLUSTER), {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 3000,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
  } catch {
    redis.disconnect();
    return undefined;
  }
  const dlq = new Queue(STAMP_DLQ, { connection: redis, prefix: QUEUE_PREFIX });
  return {
    dlq,
    close: async () => {
      await dlq.close();
      await redis.quit();
    },
  };
}

/** Closes what the commands opened. */
export async function closeAll(): Promise<void> {
  await prismaClient?.$disconnect();
  prismaClient = undefined;
  for (const client of organizationClients.values()) await client.$disconnect();
  organizationClients.clear();
}
