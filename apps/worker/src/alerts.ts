import got from 'got';
import type { Logger } from 'pino';
import type { DeadLetterData } from './jobs.ts';

/**
 * The dead-letter alert: always a log line at error level (`alert: stamp_dead_letter`), and a POST of
 * the letter to `url` when one is configured (retried twice; a failure is logged, never thrown: the
 * letter is already recorded in Postgres and the DLQ queue).
 */
export function deadLetterAlert(url: string | undefined, logger: Logger) {
  return async (letter: DeadLetterData): Promise<void> => {
    if (!url) return;
    try {
      await got.post(url, {
        json: { alert: 'stamp_dead_letter', ...letter },
        timeout: { request: 5_000 },
        retry: { limit: 2 },
      });
    } catch (error) {
      logger.warn({ err: error, stampKey: letter.stampKey }, 'alert webhook failed');
    }
  };
}
