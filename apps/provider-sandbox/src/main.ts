/** Composition root: `npm run provider-sandbox` / `node dist/main.js`. */
import { pino } from 'pino';
import { loadConfig } from './config.ts';
import { ProviderSandbox } from './provider-sandbox.ts';

const config = loadConfig(process.env);
const logger = pino({ level: config.LOG_LEVEL, name: 'provider-sandbox' });

const sandbox = new ProviderSandbox({
  host: config.PROVIDER_SANDBOX_HOST,
  port: config.PROVIDER_SANDBOX_PORT,
  stripe: {
    secretKey: config.PROVIDER_SANDBOX_STRIPE_SECRET_KEY,
    webhookUrl: config.PROVIDER_SANDBOX_STRIPE_WEBHOOK_URL,
    webhookSecret: config.PROVIDER_SANDBOX_STRIPE_WEBHOOK_SECRET,
    liveSecretKey: config.PROVIDER_SANDBOX_STRIPE_LIVE_SECRET_KEY,
    connect: {
      webhookUrl: config.PROVIDER_SANDBOX_STRIPE_CONNECT_WEBHOOK_URL,
      webhookSecret: config.PROVIDER_SANDBOX_STRIPE_CONNECT_WEBHOOK_SECRET,
    },
  },
  mercadoPago: {
    accessToken: config.PROVIDER_SANDBOX_MP_ACCESS_TOKEN,
    webhookUrl: config.PROVIDER_SANDBOX_MP_WEBHOOK_URL,
    webhookSecret: config.PROVIDER_SANDBOX_MP_WEBHOOK_SECRET,
  },
  banxico: { token: config.PROVIDER_SANDBOX_BANXICO_TOKEN },
  retryDelaysMs: config.PROVIDER_SANDBOX_RETRY_DELAYS_MS.split(',').map(Number),
  logger,
});

const port = await sandbox.start();
logger.info({ port }, 'ready');

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
