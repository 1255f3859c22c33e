/** Composition root of the worker: relay and stamp processors, each switchable by WORKER_ROLES. */
import { csdExpiry, csdExpiryWarning } from '@timbra/cfdi-core';
import { emisorCsd, readCsdFiles, vaultOf } from '@timbra/cfdi-node';
import { activeCsd, sealingCsd } from '@timbra/db/csds';
import {
  correctionOrganizations,
  joinOrganizationIn,
  NotIsolatedError,
  OrganizationClients,
  deliveryOrganizations,
  organizationById,
  organizationIds,
  ownInvoicing,
  pendingOrganizations,
} from '@timbra/db/organizations';
import { connectRedis, logRedisOutages, maxmemoryPolicies, redisTarget } from '@timbra/db/redis';
import { retentionPolicy } from './config.ts';
import { fatal, loadConfigOrExit, pacClients, workerLogger } from './start-up.ts';
import { deadLetterAlert } from './operations/alerts.ts';
import { createWorker } from './create-worker.ts';
import { createHealth, listenHealth, waitFor, type Readiness } from './operations/health.ts';
import { createWorkerMetrics } from './operations/metrics.ts';
import { PacChain } from './stamping/pac-chain.ts';
import { runRelay } from './stamping/relay.ts';
import { runSweeper } from './stamping/sweeper.ts';
import { runRetention } from './operations/retention.ts';
import { startSatSchedule } from './operations/sat-schedule.ts';
import { runCorrections } from './invoices/corrections.ts';
import { globalCloserMetrics, runGlobalCloser } from './globals/close-globals.ts';
import { startDeliverer } from './deliveries/deliverer.ts';

const { config, pacs, testPac, catalogs } = loadConfigOrExit();
const logger = workerLogger(config.LOG_LEVEL);
process.on('uncaughtException', (error) => fatal(logger, error, 'uncaught exception'));
process.on('unhandledRejection', (error) => fatal(logger, error, 'unhandled rejection'));
const roles = new Set(config.WORKER_ROLES.split(',').map((r) => r.trim()));

// The health port answers at once: not ready (saying why) until Redis and Postgres answer.
const startup: Record<string, string> = {};
// What the health port serves: the start-up checks until the worker runs, then the real ones.
const live: { readiness: Readiness; metrics?: ReturnType<typeof createWorkerMetrics> } = {
  readiness: () => Promise.resolve({ ok: false, checks: { startup: 'starting', ...startup } }),
};
const healthServer =
  config.WORKER_HTTP_PORT > 0
    ? await listenHealth(config.WORKER_HTTP_PORT, config.WORKER_HTTP_HOST, {
        readiness: () => live.readiness(),
        metrics: () => live.metrics?.registry,
      }).catch((error: unknown) => fatal(logger, error, 'the health port could not be opened'))
    : undefined;
if (healthServer) logger.info({ address: healthServer.address() }, 'health listening');

// BullMQ loses jobs if Redis evicts keys: refuse to run on an evicting Redis unless told otherwise.
const policy = await waitFor('redis', logger, startup, async () => {
  const probe = connectRedis(redisTarget(config.REDIS_URL, config.REDIS_CLUSTER), {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 5_000,
  });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    // A cluster: every master (each evicts on its own); the first that evicts is the answer.
    const policies = await maxmemoryPolicies(probe);
    return policies.find((p) => p !== 'noeviction') ?? 'noeviction';
  } finally {
    probe.disconnect();
  }
});
if (policy !== 'noeviction') {
  if (!config.ALLOW_EVICTING_REDIS)
    fatal(
      logger,
      new Error(`maxmemory-policy is ${policy}`),
      'Redis maxmemory-policy must be noeviction (set ALLOW_EVICTING_REDIS=true to run anyway)',
    );
  logger.warn(
    { policy },
    'Redis may evict queued jobs: Postgres stays the record and the sweeper re-publishes, but expect delays',
  );
}
const redis = connectRedis(redisTarget(config.REDIS_URL, config.REDIS_CLUSTER), { maxRetriesPerRequest: null });
logRedisOutages(redis, logger);
const clients = pacClients(pacs, config);
// Every organization's client over one pool: row-level security holds each to its organization's
// rows (@timbra/db/organizations). The home organization is EMISOR_RFC's, which the API's first
// start makes; the others' jobs and rows are served on their own clients (organizations/across.ts).
const orgClients = new OrganizationClients(config.DATABASE_URL, { poolSize: config.DATABASE_POOL_SIZE });
const { prisma, organizationId } = await waitFor('organization', logger, startup, async () => {
  const opened = await joinOrganizationIn(orgClients, config.DATABASE_URL, config.EMISOR_RFC).catch(
    (error: unknown) => {
      if (error instanceof NotIsolatedError) fatal(logger, error, 'the database would not isolate the worker');
      throw error;
    },
  );
  if (!opened)
    throw new Error(`no organization for EMISOR_RFC ${config.EMISOR_RFC} yet: the API makes it at its first start`);
  return opened;
});

// The CSD it seals and cancels with, chosen as the API chooses it (cfdi-node's emisorCsd): the stored
// one active now when VAULT_KEYS is set, else the CSD_* files. A stored CSD that does not open stops it.
const vault = vaultOf(config.VAULT_KEYS);
const sealing = await emisorCsd({
  stored: vault ? await activeCsd(prisma, organizationId, new Date()) : undefined,
  vault,
  files: readCsdFiles(config),
}).catch((error: unknown) => fatal(logger, error, 'the stored CSD does not open under VAULT_KEYS'));
const csd = sealing?.csd;
if (!csd) logger.warn('no CSD configured: dependent documents (Egreso, Pago) will wait; cancellations will fail');
else logger.info({ noCertificado: csd.noCertificado, source: sealing.source }, 'sealing with this CSD');
const csdWarning = csd ? csdExpiryWarning(csdExpiry(csd, new Date())) : undefined;
if (csdWarning) logger.warn({ alert: 'csd_expiring', noCertificado: csd!.noCertificado }, csdWarning);
const circuit = { threshold: config.CIRCUIT_THRESHOLD, coolDownMs: config.CIRCUIT_COOLDOWN_MS };
const chain = new PacChain(clients, circuit);
// Test organizations' documents: the test PAC's chain alone, never the live one's (organizations.md).
const testChain = testPac ? new PacChain(pacClients([testPac], config), circuit) : undefined;
const workerMetrics = createWorkerMetrics({
  prisma,
  // Every organization's backlog, a series each (the home one's always).
  everywhere: { db: orgClients.unscoped, home: organizationId },
  chain,
  lateMarginMs: config.LATE_MARGIN_HOURS * 3_600_000,
});
/**
 * Another organization's client and the stored CSD active now (its dependents and cancellations);
 * a test organization's, its own CSD or else its live one's, and the test PAC.
 */
async function openOrganization(id: string) {
  const client = orgClients.for(id);
  const organization = await organizationById(client, id);
  if (organization?.mode === 'test' && !testChain)
    throw new Error(`organization ${id} is a test organization and PAC_TEST_* is not set: its documents wait`);
  const stored =
    vault && organization ? await sealingCsd((o) => orgClients.for(o), organization, new Date()) : undefined;
  const opened = stored ? await emisorCsd({ stored, vault, files: undefined }) : undefined;
  return {
    prisma: client,
    ...(opened ? { csd: opened.csd, csdCredentials: opened.credentials } : {}),
    ...(organization?.mode === 'test' ? { chain: testChain! } : {}),
  };
}

const w = createWorker(
  {
    prisma,
    redis,
    prefix: config.QUEUE_PREFIX,
    chain,
    onAttempts: (attempts) => workerMetrics.record(attempts),
    onCancellation: (outcome) => workerMetrics.recordCancellation(outcome),
    retry: {
      attempts: config.STAMP_ATTEMPTS,
      baseDelayMs: config.STAMP_BACKOFF_BASE_MS,
      maxDelayMs: config.STAMP_BACKOFF_MAX_MS,
    },
    concurrency: config.WORKER_CONCURRENCY,
    relayBatchSize: config.RELAY_BATCH_SIZE,
    stampGroups: config.STAMP_JOB_GROUPS,
    ...(config.RELAY_MAX_ENQUEUED_PER_ORGANIZATION > 0
      ? { relayShare: { maxEnqueued: config.RELAY_MAX_ENQUEUED_PER_ORGANIZATION, windowMs: 60_000 } }
      : {}),
    sweeperStaleMs: config.SWEEPER_STALE_MS,
    lockMs: config.STAMP_LOCK_MS,
    logger,
    alert: deadLetterAlert(config.ALERT_WEBHOOK_URL, logger),
    ...(sealing ? { csd: sealing.csd, csdCredentials: sealing.credentials } : {}),
    catalogs,
    organizations: {
      home: organizationId,
      // Another organization's client and the stored CSD active now (its dependents and cancellations).
      open: (id: string) => openOrganization(id),
      ids: () => organizationIds(orgClients.unscoped),
      pending: () => pendingOrganizations(orgClients.unscoped),
      corrections: (lateBefore) => correctionOrganizations(orgClients.unscoped, lateBefore),
    },
    cancelPoll: { baseMs: config.CANCEL_POLL_BASE_MS, maxMs: config.CANCEL_POLL_MAX_MS },
    across: orgClients.across(), // every organization's stamp writes and relay claims, shared statements
    corrections: {
      inFlightGraceMs: config.PROOF_IN_FLIGHT_GRACE_MS,
      retry: { baseMs: config.CORRECTION_RETRY_BASE_MS, maxMs: config.CORRECTION_RETRY_MAX_MS },
      ...(config.AUTO_REFREEZE_LATE ? { autoRefreezeLateMarginMs: config.LATE_MARGIN_HOURS * 3_600_000 } : {}),
    },
  },
  { autorun: roles.has('stamper') },
);
const relay = roles.has('relay')
  ? runRelay(w.relay, { databaseUrl: config.DATABASE_URL, pollMs: config.RELAY_POLL_MS, logger })
  : undefined;
const sweeper = roles.has('sweeper')
  ? runSweeper(w.sweeper, { intervalMs: config.SWEEPER_INTERVAL_MS, logger })
  : undefined;
// The sweeper role's background duties, each a pass over every organization in turn: retention
// (packages/db/src/retention.ts), corrections, and the facturas globales' close timer.
const retention = roles.has('sweeper')
  ? runRetention(
      {
        each: w.eachOrganization,
        policy: retentionPolicy(config),
        batchSize: config.RETENTION_BATCH_SIZE,
        logger,
        onPass: (deleted) => workerMetrics.recordPrune(deleted),
      },
      { intervalMs: config.RETENTION_INTERVAL_MS },
    )
  : undefined;
// Reconciliation with the SAT's own record (docs/sat-record.md), for organizations with an e.firma.
const satRecord = roles.has('sweeper')
  ? startSatSchedule(config, w.eachOrganization, workerMetrics.registry, logger, vault)
  : undefined;
const corrections =
  roles.has('sweeper') && w.corrections
    ? runCorrections(w.corrections, { intervalMs: config.CORRECTION_POLL_MS, logger })
    : undefined;
// Facturas globales: every due period issued (exactly once across workers) and the lag measured.
const globals = roles.has('sweeper')
  ? runGlobalCloser(
      {
        each: w.eachOrganization,
        catalogs,
        serieIngreso: config.SERIE_INGRESO,
        maxConceptosPerGlobal: config.GLOBAL_MAX_CONCEPTOS,
        closeDelayMs: config.GLOBAL_CLOSE_DELAY_MINUTES * 60_000,
        logger,
        settingsOf: async (id) => (await ownInvoicing((o) => orgClients.for(o), id)).settings,
      },
      globalCloserMetrics(workerMetrics.registry),
      { intervalMs: config.GLOBAL_CLOSE_POLL_SECONDS * 1000 },
    )
  : undefined;
// Emails and webhooks, every organization's: without SMTP_URL the emails wait (timbra_deliveries_pending says so).
const deliverer = roles.has('deliverer')
  ? startDeliverer(config, {
      clientOf: (id) => orgClients.for(id),
      due: () => deliveryOrganizations(orgClients.unscoped),
      logger,
      onAttempt: (channel, outcome, ms) => workerMetrics.recordDelivery(channel, outcome, ms),
    })
  : undefined;
const health = createHealth({
  prisma,
  redis,
  queue: w.queue,
  ...(roles.has('stamper') ? { worker: w.worker } : {}),
  stallMs: config.WORKER_STALL_MS,
});
live.readiness = health.readiness;
live.metrics = workerMetrics;
logger.info(
  { roles: [...roles], pacs: [...pacs, ...(testPac ? [testPac] : [])].map((p) => `${p.name}:${p.kind}`) },
  'worker started',
);

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping: no new claims, finishing in-flight jobs');
    // What the shutdown waits on now: said when it does not finish, so the operator knows why it
    // exited 1 (e.g. BullMQ's close waiting on a Redis that is unreachable). Jobs left in flight are
    // not lost: they stall and are retried, and the PAC answers a re-sent stamp with the same UUID.
    let waitingOn = 'the relay';
    const timer = setTimeout(() => {
      logger.error(
        { waitingOn, redis: redis.status, timeoutMs: config.WORKER_SHUTDOWN_TIMEOUT_MS },
        `shutdown did not finish in time (still waiting on ${waitingOn}): exiting 1; in-flight jobs will be retried`,
      );
      process.exit(1);
    }, config.WORKER_SHUTDOWN_TIMEOUT_MS);
    timer.unref();
    (async () => {
      healthServer?.close();
      sweeper?.stop();
      retention?.stop();
      satRecord?.stop();
      corrections?.stop();
      waitingOn = 'the facturas globales being issued';
      await globals?.stop();
      waitingOn = 'the relay';
      await relay?.stop();
      waitingOn = 'the deliveries';
      await deliverer?.stop();
      waitingOn = "BullMQ's close of the worker and its queues";
      await w.close();
      waitingOn = "Postgres's disconnect";
      await orgClients.close();
      waitingOn = "Redis's quit";
      await redis.quit();
    })().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}
