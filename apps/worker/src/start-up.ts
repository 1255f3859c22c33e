/**
 * What the worker's start needs before it composes anything: its configuration (or exit 1), its
 * logger, its PAC clients and its emisor's CSD.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { loadCsd, type Csd, type PacClient } from '@timbra/cfdi-core';
import { FinkokClient, SwClient } from '@timbra/cfdi-node';
import { loadConfig, type PacConfig, type WorkerConfig } from './config.ts';
import type { CsdCredentials } from './invoices/cancel-processor.ts';

// Every fatal error is one JSON line (the configuration's problems too) and a non-zero exit.
export const fatal = (logger: pino.Logger, error: unknown, message: string): never => {
  logger.fatal({ err: error }, message);
  process.exit(1);
};

/** The worker's configuration, or exit 1 logging each problem as one JSON line. */
export function loadConfigOrExit(): ReturnType<typeof loadConfig> {
  try {
    return loadConfig(process.env);
  } catch (error) {
    // What is missing or wrong, one problem an item, and no stack: a configuration mistake, not a bug.
    const [title, ...problems] = (error as Error).message.split('\n');
    pino({ name: 'worker' }).fatal({ problems: problems.map((p) => p.trim()) }, title);
    return process.exit(1);
  }
}

/**
 * The worker's logger: JSON lines, with every field that could hold a secret redacted (nothing logs
 * them today: so that a future `logger.info({ pac })` cannot leak them).
 */
export function workerLogger(level: string): pino.Logger {
  return pino({
    level,
    name: 'worker',
    redact: {
      paths: [
        'password',
        '*.password',
        'smtpUrl',
        '*.smtpUrl',
        'secret',
        '*.secret',
        'csd',
        '*.csd',
        'authorization',
        '*.authorization',
        '*.headers.authorization',
      ],
      censor: '[redacted]',
    },
  });
}

/** A client for each configured PAC (SW or Finkok), with the configured timeouts. */
export function pacClients(pacs: readonly PacConfig[], config: WorkerConfig): PacClient[] {
  const timeouts = { connectMs: config.PAC_CONNECT_TIMEOUT_MS, responseMs: config.PAC_RESPONSE_TIMEOUT_MS };
  return pacs.map((p) =>
    p.kind === 'sw'
      ? new SwClient({
          name: p.name,
          baseUrl: p.url,
          user: p.user,
          password: p.password,
          satStatusUrl: config.SAT_STATUS_URL,
          timeouts,
        })
      : new FinkokClient({
          name: p.name,
          baseUrl: p.url,
          username: p.user,
          password: p.password,
          satStatusUrl: config.SAT_STATUS_URL,
          timeouts,
        }),
  );
}

// The CSD freezes dependent documents and signs cancellations. Without one (and no test CSD for
// EMISOR_RFC) dependents stay waiting and cancellations fail.
export function readEmisorCsd(config: WorkerConfig): { csd: Csd; credentials: CsdCredentials } | undefined {
  const cer = config.CSD_CER_PATH ?? join(config.SAT_DIR, 'csd', `${config.EMISOR_RFC}.cer`);
  const key = config.CSD_KEY_PATH ?? join(config.SAT_DIR, 'csd', `${config.EMISOR_RFC}.key`);
  const passwordFile = config.CSD_PASSWORD_FILE ?? join(config.SAT_DIR, 'csd', `${config.EMISOR_RFC}.password.txt`);
  if (!existsSync(cer) || !existsSync(key) || (!config.CSD_PASSWORD && !existsSync(passwordFile))) return undefined;
  const credentials = {
    cer: readFileSync(cer),
    key: readFileSync(key),
    password: config.CSD_PASSWORD ?? readFileSync(passwordFile, 'utf8').trim(),
  };
  return { csd: loadCsd(credentials.cer, credentials.key, credentials.password), credentials };
}
