import { z } from 'zod';

/**
 * Faults one PAC instance injects, set through the admin API. Rates are probabilities per stamp
 * request (0–1), drawn from a seeded generator so a run can be reproduced.
 */
export const faultsSchema = z
  .object({
    /**
     * Added latency: a fixed number of ms, a uniform [min, max] range, or a real PAC's long tail:
     * `{ p50, p99 }`, a log-normal distribution with those percentiles (p99 ≥ p50 > 0).
     */
    latencyMs: z
      .union([
        z.number().int().nonnegative(),
        z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]),
        z
          .object({ p50: z.number().int().positive(), p99: z.number().int().positive() })
          .strict()
          .refine((d) => d.p99 >= d.p50, { message: 'p99 must be at least p50' }),
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

/** z of the 99th percentile of the standard normal distribution. */
const Z99 = 2.326_347_874;

/**
 * The latency to add for one request. A `{ p50, p99 }` distribution is log-normal: p50 · e^(σ·z) with
 * σ = ln(p99 / p50) / z₉₉ and z a standard normal draw (Box–Muller on the seeded generator). Its mean
 * is p50 · e^(σ²/2): 582 ms for { p50: 400, p99: 3000 }.
 */
export function latencyFor(faults: Faults, random: () => number): number {
  const l = faults.latencyMs;
  if (typeof l === 'number') return l;
  if (Array.isArray(l)) {
    const [min, max] = l;
    return Math.round(min + random() * Math.max(0, max - min));
  }
  const sigma = Math.log(l.p99 / l.p50) / Z99;
  const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  return Math.round(l.p50 * Math.exp(sigma * z));
}

/** The mean of a latency setting in ms (what concurrency ÷ latency divides by). */
export function meanLatency(latency: Faults['latencyMs']): number {
  if (typeof latency === 'number') return latency;
  if (Array.isArray(latency)) return (latency[0] + latency[1]) / 2;
  const sigma = Math.log(latency.p99 / latency.p50) / Z99;
  return latency.p50 * Math.exp((sigma * sigma) / 2);
}
