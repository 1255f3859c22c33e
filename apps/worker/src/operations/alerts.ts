import type { Logger } from 'pino';
import type { DeadLetterData } from '../stamping/jobs.ts';

/**
 * The dead-letter alert: always a log line at error level (`alert: stamp_dead_letter`), and a POST of
 * the letter to `url` when one is configured (three tries, 5 s each; a failure is logged, never
 * thrown: the letter is already recorded in Postgres and the DLQ queue).
 */
export function deadLetterAlert(url: string | undefined, logger: Logger) {
  return async (letter: DeadLetterData): Promise<void> => {
    if (!url) return;
    let lastError: unknown;
    for (let attempt = 1; attempt <= 3; attempt++) {
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ alert: 'stamp_dead_letter', ...letter }),
          signal: AbortSignal.timeout(5_000),
        });
        if (response.ok) return;
        lastError = new Error(`HTTP ${response.status}`);
        if (response.status < 500 && response.status !== 429) break; // the receiver refused it: retrying won't help
      } catch (error) {
        lastError = error;
      }
    }
    logger.warn({ err: lastError, stampKey: letter.stampKey }, 'alert webhook failed');
  };
}
