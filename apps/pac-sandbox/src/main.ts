/** Composition root: `npm run sandbox` / `node dist/main.js`. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { loadCsd } from '@timbra/cfdi-core';
import { loadConfig } from './config.ts';
import { Sandbox } from './sandbox.ts';

const config = loadConfig(process.env);
const logger = pino({ level: config.LOG_LEVEL, name: 'pac-sandbox', redact: ['faults.rejectRfcs'] });

const csdFiles = {
  cer: config.SANDBOX_PAC_CER ?? join(config.SAT_DIR, 'csd/CACX7605101P8.cer'),
  key: config.SANDBOX_PAC_KEY ?? join(config.SAT_DIR, 'csd/CACX7605101P8.key'),
  password: config.SANDBOX_PAC_KEY_PASSWORD_FILE ?? join(config.SAT_DIR, 'csd/CACX7605101P8.password.txt'),
};
const pacCsd = loadCsd(
  readFileSync(csdFiles.cer),
  readFileSync(csdFiles.key),
  readFileSync(csdFiles.password, 'utf8').trim(),
);

const sandbox = new Sandbox({
  host: config.SANDBOX_HOST,
  instancePorts: { primary: config.SANDBOX_PRIMARY_PORT, backup: config.SANDBOX_BACKUP_PORT },
  adminPort: config.SANDBOX_ADMIN_PORT,
  ...(config.SANDBOX_ADMIN_TOKEN ? { adminToken: config.SANDBOX_ADMIN_TOKEN } : {}),
  sw: { user: config.SANDBOX_SW_USER, password: config.SANDBOX_SW_PASSWORD },
  finkok: { username: config.SANDBOX_FINKOK_USER, password: config.SANDBOX_FINKOK_PASSWORD },
  pacCsd,
  rfcProvCertif: config.SANDBOX_RFC_PROV_CERTIF,
  tokenTtlMs: config.SANDBOX_TOKEN_TTL_S * 1000,
  policy: {
    acceptanceAbove: config.SANDBOX_CANCEL_ACCEPTANCE_ABOVE,
    acceptDelayMs: config.SANDBOX_CANCEL_ACCEPT_DELAY_MS,
  },
  seed: config.SANDBOX_SEED,
  satDir: config.SAT_DIR,
  validation: {
    xsd: config.SANDBOX_VALIDATION === 'on',
    rules: config.SANDBOX_VALIDATION !== 'off',
  },
  ...(config.SANDBOX_STATE_FILE ? { stateFile: config.SANDBOX_STATE_FILE } : {}),
  ...(config.SANDBOX_TRUSTED_CA_FILE ? { trustedCa: readFileSync(config.SANDBOX_TRUSTED_CA_FILE, 'utf8') } : {}),
  descarga: { lagMs: config.SANDBOX_SAT_LAG_MS, processMs: config.SANDBOX_DESCARGA_PROCESS_MS },
  logger,
});

const ports = await sandbox.start();
if (!config.SANDBOX_ADMIN_TOKEN) logger.warn('SANDBOX_ADMIN_TOKEN is not set: the admin API (/__admin) is off');
logger.info({ ports, noCertificadoSat: pacCsd.noCertificado }, 'ready');

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    sandbox.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'stop failed');
        process.exit(1);
      },
    );
  });
}
