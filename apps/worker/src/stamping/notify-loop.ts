import type { Logger } from 'pino';
import { listenForOutbox } from '@timbra/db/outbox';

/**
 * Runs `round` on every NOTIFY on `channel` (a hint only) and every `pollMs` as the fallback. A
 * NOTIFY that lands while a round runs is remembered: the next round starts at once instead of after
 * the poll (the round may have looked before that row committed). `stop()` ends the loop and waits
 * for the round in progress. The relay and the delivery dispatcher both run this way.
 */
export function runOnNotify(
  round: () => Promise<unknown>,
  options: {
    databaseUrl: string;
    channel?: string;
    pollMs: number;
    logger: Logger;
    what: string;
    /** After a round, whether to look again after `soonMs` rather than `pollMs` (work held back, not done). */
    soon?: () => boolean;
    soonMs?: number;
  },
) {
  let stopped = false;
  let running: Promise<unknown> = Promise.resolve();
  let wake: (() => void) | undefined;
  let notified = false;
  const listener = listenForOutbox(
    options.databaseUrl,
    options.logger,
    () => {
      notified = true;
      wake?.();
    },
    ...(options.channel ? [options.channel] : []),
  );

  const loop = async () => {
    await listener.ready;
    while (!stopped) {
      notified = false;
      running = round().catch((error: unknown) => options.logger.error({ err: error }, `${options.what} round failed`));
      await running;
      if (stopped) break;
      if (notified) continue;
      await new Promise<void>((resolve) => {
        const soon = options.soon?.() ? Math.min(options.soonMs ?? options.pollMs, options.pollMs) : options.pollMs;
        const timer = setTimeout(resolve, soon);
        wake = () => {
          wake = undefined;
          clearTimeout(timer);
          resolve();
        };
      });
    }
  };
  const done = loop();
  return {
    stop: async () => {
      stopped = true;
      wake?.();
      await done;
      await running;
      await listener.close();
    },
  };
}
