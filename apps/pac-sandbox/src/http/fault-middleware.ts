import { setTimeout as sleep } from 'node:timers/promises';
import type { Response } from 'express';
import { latencyFor } from '../faults.ts';
import type { PacInstance } from '../pac-instance.ts';

/**
 * Faults applied before a stamp request is processed: added latency, then (with `errorRate`) a 503
 * or 429 without looking at the request. Returns false when it answered.
 */
export async function beforeProcessing(instance: PacInstance, res: Response): Promise<boolean> {
  const faults = instance.faults;
  const delay = latencyFor(faults, instance.random);
  if (delay > 0) await sleep(delay);
  if (faults.errorRate > 0 && instance.random() < faults.errorRate) {
    instance.counts.injectedErrors++;
    if (faults.errorStatus === 429) res.set('Retry-After', '1');
    res.status(faults.errorStatus).json({
      status: 'error',
      message: faults.errorStatus === 429 ? 'Too Many Requests' : 'Service Unavailable',
      messageDetail: 'fault injected before processing',
    });
    return false;
  }
  return true;
}

/**
 * Stamp-then-drop: the stamp is already recorded; with `dropRate` the answer never arrives — the
 * connection is reset, or held past the client's timeout. Returns true when it dropped.
 */
export function dropAfterProcessing(instance: PacInstance, res: Response): boolean {
  const faults = instance.faults;
  if (!(faults.dropRate > 0 && instance.random() < faults.dropRate)) return false;
  instance.counts.drops++;
  if (faults.dropMode === 'destroy') {
    res.socket?.destroy();
  } else {
    setTimeout(() => res.socket?.destroy(), faults.dropDelayMs).unref();
  }
  return true;
}
