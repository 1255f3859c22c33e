import { z } from 'zod';
import { API_FISCAL, API_HTTP, API_OPERATOR, API_PROVIDERS, API_PUBLICO_GENERAL } from './api.ts';
import { DATA, EMISOR, INVOICING, OUTBOUND, PROCESS } from './shared.ts';
import {
  WORKER_CORRECTIONS,
  WORKER_DELIVERIES,
  WORKER_GLOBALS,
  WORKER_PROCESS,
  WORKER_RETENTION,
  WORKER_SAT_RECORD,
  WORKER_STAMPING,
} from './worker.ts';

const shared = { ...DATA.shape, ...PROCESS.shape, ...EMISOR.shape, ...INVOICING.shape, ...OUTBOUND.shape };

/** Every setting the API reads: the shared sections and its own. */
export const apiSettings = z.object({
  ...shared,
  ...API_HTTP.shape,
  ...API_FISCAL.shape,
  ...API_PUBLICO_GENERAL.shape,
  ...API_PROVIDERS.shape,
  ...API_OPERATOR.shape,
});

/** Every setting the worker (and `npm run ops`, a part of them) reads: the shared sections and its own. */
export const workerSettings = z.object({
  ...shared,
  ...WORKER_PROCESS.shape,
  ...WORKER_STAMPING.shape,
  ...WORKER_CORRECTIONS.shape,
  ...WORKER_GLOBALS.shape,
  ...WORKER_RETENTION.shape,
  ...WORKER_DELIVERIES.shape,
  ...WORKER_SAT_RECORD.shape,
});

export type ApiSettings = z.output<typeof apiSettings>;
export type WorkerSettings = z.output<typeof workerSettings>;
