/**
 * The deliverer role: every organization's emails and webhooks, each organization on its own
 * dispatcher and client (organizations/deliveries-across.ts), on every NOTIFY of a new delivery and
 * every DELIVERY_POLL_MS.
 */
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { brandedPdf } from '@timbra/cfdi-core';
import { dejavuFonts } from '@timbra/cfdi-node';
import type { PrismaClient } from '@timbra/db';
import { allowedAddressesFor } from '@timbra/db/deliveries';
import { effectiveSection, ownInvoicing } from '@timbra/db/organizations';
import type { WorkerConfig } from '../config.ts';
import { DeliveriesAcross } from '../organizations/deliveries-across.ts';
import { createEmailSender } from './email.ts';
import { Dispatcher, runDispatcher, type DispatcherDeps } from './dispatcher.ts';

export function startDeliverer(
  config: WorkerConfig,
  deps: {
    clientOf: (organizationId: string) => PrismaClient;
    /** The organizations with deliveries open. */
    due: () => Promise<string[]>;
    logger: Logger;
    onAttempt: DispatcherDeps['onAttempt'];
  },
) {
  const { logger } = deps;
  const smtp = config.SMTP_URL && config.EMAIL_FROM ? { url: config.SMTP_URL, from: config.EMAIL_FROM } : undefined;
  if (!smtp) logger.warn("no SMTP_URL: customers' emails wait (pending) until a worker with SMTP sends them");
  const pdf = {
    fonts: dejavuFonts(),
    ...(config.INVOICE_LOGO_FILE ? { logo: readFileSync(config.INVOICE_LOGO_FILE) } : {}),
    ...(config.INVOICE_COLOR ? { color: config.INVOICE_COLOR } : {}),
  };
  // An organization's own sender, logo and colour (PATCH and PUT /v1/organizations/:id…), else the
  // deployment's; read when its dispatcher is built, at its first delivery and every few minutes.
  const dispatcherOf = async (organizationId: string) => {
    const prisma = deps.clientOf(organizationId);
    // A test twin's are its live organization's (its logo its own, if it has one).
    const { settings: own, logo } = await ownInvoicing(deps.clientOf, organizationId);
    const sender = smtp
      ? effectiveSection(own, 'email', {
          from: smtp.from,
          ...(config.EMAIL_REPLY_TO ? { replyTo: config.EMAIL_REPLY_TO } : {}),
        })
      : undefined;
    const email =
      smtp && sender?.from
        ? createEmailSender(prisma, {
            smtpUrl: smtp.url,
            from: sender.from,
            ...(sender.replyTo ? { replyTo: sender.replyTo } : {}),
            timeoutMs: config.EMAIL_TIMEOUT_MS,
            pdf: brandedPdf(pdf, logo, own.branding?.color),
          })
        : undefined;
    const dispatcher = new Dispatcher({
      prisma,
      logger: logger.child({ organization: organizationId }),
      ...(email ? { email } : {}),
      webhook: {
        timeoutMs: config.WEBHOOK_TIMEOUT_MS,
        retry: {
          baseMs: config.WEBHOOK_RETRY_BASE_MS,
          maxMs: config.WEBHOOK_RETRY_MAX_MS,
          forMs: config.WEBHOOK_RETRY_FOR_HOURS * 3_600_000,
        },
        disable: {
          afterMs: config.WEBHOOK_DISABLE_AFTER_HOURS * 3_600_000,
          minFailures: config.WEBHOOK_DISABLE_MIN_FAILURES,
        },
        allowedAddresses: allowedAddressesFor(config.WEBHOOK_ALLOWED_ADDRESSES, config.TIMBRA_PROFILE),
      },
      emailRetry: {
        baseMs: config.EMAIL_RETRY_BASE_MS,
        maxMs: config.EMAIL_RETRY_MAX_MS,
        forMs: config.EMAIL_RETRY_FOR_HOURS * 3_600_000,
      },
      concurrency: config.DELIVERY_CONCURRENCY,
      pollMs: config.DELIVERY_POLL_MS,
      leaseMs: config.DELIVERY_LEASE_MS,
      ...(deps.onAttempt ? { onAttempt: deps.onAttempt } : {}),
    });
    return Object.assign(dispatcher, { close: () => email?.close() });
  };
  const across = new DeliveriesAcross({ due: deps.due, build: dispatcherOf, logger });
  const loop = runDispatcher(across, { databaseUrl: config.DATABASE_URL, pollMs: config.DELIVERY_POLL_MS, logger });
  return {
    stop: async () => {
      await loop.stop();
      await across.close();
    },
  };
}
