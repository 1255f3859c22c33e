import { z } from 'zod';

/**
 * Faults one PAC instance injects, set through the admin API. Rates are probabilities per stamp
 * request (0–1), drawn from a seeded generator so a run can be reproduced.
 */
export const faultsSchema = z
  .object({
    /** Added latency: a fixed number of ms, or a [min, max] range. */
    latencyMs: z
      .union([
        z.number().int().nonnegative(),
        z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]),
      ])
      .default(0),
    /** Share of requests answered with an error *before* any processing. */
    errorRate: z.number().min(0).max(1).default(0),
    /** Status of those errors: 503 (unavailable) or 429 (rate limited). */
    errorStatus: z.union([z.literal(503), z.literal(429)]).default(503),
    /** Share of stamps recorded and then not answered (the ambiguous case). */
    dropRate: z.number().min(0).max(1).default(0),
    /** `destroy`: reset the connection; `delay`: answer after `dropDelayMs` (past the client's timeout). */
    dropMode: z.enum(['destroy', 'delay']).default('destroy'),
    dropDelayMs: z.number().int().nonnegative().default(60_000),
    /** Until this epoch (ms) the instance refuses connections (its port is closed). */
    outageUntil: z.number().int().nonnegative().default(0),
    /** RFCs the "SAT" reports as not in the LCO (402): a permanent rejection on purpose. */
    rejectRfcs: z.array(z.string()).default([]),
    /**
     * Receptor RFCs that reject a cancellation needing their acceptance: requested through this
     * instance, it ends "Solicitud rechazada" (the CFDI stays Vigente) instead of accepted.
     */
    rejectCancellationBy: z.array(z.string()).default([]),
    /** Finkok: answer 307 with the previous XML (true) or without it, forcing a `stamped` call (false). */
    finkok307WithXml: z.boolean().default(false),
  })
  .strict();

export type Faults = z.output<typeof faultsSchema>;
export const NO_FAULTS: Faults = faultsSchema.parse({});

/** mulberry32: a small, fast, seedable generator (fault decisions only; never for UUIDs). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The latency to add for one request. */
export function latencyFor(faults: Faults, random: () => number): number {
  const l = faults.latencyMs;
  if (typeof l === 'number') return l;
  const [min, max] = l;
  return Math.round(min + random() * Math.max(0, max - min));
}
