import type { Logger } from 'pino';
import { listenForOutbox } from '@timbra/db/outbox';

/**
 * Runs `round` on every NOTIFY on `channel` (a hint only) and every `pollMs` as the fallback. A
 * NOTIFY that lands while a round runs is remembered: the next round starts at once instead of after
 * the poll (the round may have looked before that row committed). A round woken only by NOTIFYs is
 * given their payloads (`named`: for the relay, the organizations that wrote rows); one woken by the
 * poll, by a NOTIFY without a payload or after a reconnect is given none, and looks at everything.
 * `stop()` ends the loop and waits for the round in progress. The relay and the delivery dispatcher
 * both run this way.
 */
export function runOnNotify(
  round: (named?: ReadonlySet<string>) => Promise<unknown>,
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
  // What woke the next round: the payloads of its NOTIFYs, or everything (undefined).
  let named: Set<string> | undefined;
  const listener = listenForOutbox(
    options.databaseUrl,
    options.logger,
    (payload) => {
      if (!payload) named = undefined;
      else if (!notified || named) (named ??= new Set()).add(payload);
      notified = true;
      wake?.();
    },
    ...(options.channel ? [options.channel] : []),
  );

  const loop = async () => {
    await listener.ready;
    // The first round looks at everything (rows may have committed before the LISTEN).
    let woken: Set<string> | undefined;
    while (!stopped) {
      notified = false;
      named = undefined;
      running = round(woken).catch((error: unknown) =>
        options.logger.error({ err: error }, `${options.what} round failed`),
      );
      await running;
      if (stopped) break;
      if (notified) {
        woken = named;
        continue;
      }
      woken = await new Promise<Set<string> | undefined>((resolve) => {
        const soon = options.soon?.() ? Math.min(options.soonMs ?? options.pollMs, options.pollMs) : options.pollMs;
        // The poll: everything.
        const timer = setTimeout(() => {
          wake = undefined;
          resolve(undefined);
        }, soon);
        wake = () => {
          wake = undefined;
          clearTimeout(timer);
          resolve(named);
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
