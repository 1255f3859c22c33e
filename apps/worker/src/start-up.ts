/**
 * What the worker's start needs before it composes anything: its configuration (or exit 1), its
 * logger and its PAC clients (its CSD is chosen as the API's is: cfdi-node's emisorCsd).
 */
import { pino } from 'pino';
import type { PacClient } from '@timbra/cfdi-core';
import { FinkokClient, SwClient } from '@timbra/cfdi-node';
import { loadConfig, type PacConfig, type WorkerConfig } from './config.ts';

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
