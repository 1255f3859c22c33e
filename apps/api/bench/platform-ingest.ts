/**
 * bench:ingest's platform mode (`--organizations K`): K organizations made through
 * `/v1/organizations` (each with a CSD by the tests' CA and a Stripe account, its webhooks at
 * `/webhooks/stripe/<id>`), then the same signed deliveries sent to one of them and spread over all
 * K, in the same API process; the figures side by side. Target: K within 10% of one.
 */
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';

/** One measurement of bench:ingest: committed a second, latencies, CPU and WAL. */
export interface IngestFigures {
  rate: number;
  p50: number;
  p99: number;
  committed: number;
  cpu: { api: number; postgres: number; load: number };
  /** WAL written during the run, bytes a committed payment (or ticket). */
  walPerPayment: number;
}

export interface PlatformFigures {
  organizations: number;
  /** Seconds to make them (organization, CSD, Stripe account each). */
  makeSeconds: number;
  /** Seconds for one delivery to each, in turn: each organization's API built on its first request. */
  warmSeconds: number;
  /** The API process's resident memory (MiB) before the organizations' first requests, and after. */
  rssMiB: { before: number; after: number };
  one: IngestFigures;
  many: IngestFigures;
}

/** A process's resident memory, MiB (Linux). */
export function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
}

export function printPlatform(f: PlatformFigures, seconds: number, concurrency: number): string {
  const row = (name: string, x: IngestFigures) =>
    `  ${name.padEnd(36)}${x.rate.toFixed(0).padStart(6)} payments/s   p50 ${x.p50.toFixed(1)} ms, p99 ${x.p99.toFixed(1)} ms   CPU a payment: API ${(x.cpu.api / x.committed).toFixed(2)} ms, Postgres ${(x.cpu.postgres / x.committed).toFixed(2)} ms   (${x.committed} committed)`;
  const share = f.many.rate / f.one.rate;
  return [
    `bench:ingest --organizations ${f.organizations} — ${new Date().toISOString()} — ${cpus()[0]?.model ?? 'cpu'} ×${cpus().length}, node ${process.version}`,
    `platform mode, one API process; ${seconds} s each, ${concurrency} concurrent senders, signed Stripe payment_intent.succeeded webhooks at /webhooks/stripe/<organization>`,
    '',
    `  ${f.organizations} organizations made (organization, CSD, Stripe account) in ${f.makeSeconds.toFixed(1)} s; a first delivery to each in ${f.warmSeconds.toFixed(1)} s`,
    `  API resident memory: ${f.rssMiB.before.toFixed(0)} MiB before their first requests, ${f.rssMiB.after.toFixed(0)} MiB after (${(((f.rssMiB.after - f.rssMiB.before) * 1024) / f.organizations).toFixed(0)} KiB an organization)`,
    row('all to one organization', f.one) + '   ← reference',
    row(`spread over ${f.organizations}`, f.many),
    '',
    `  ${f.organizations} organizations / one = ${(share * 100).toFixed(1)}%   (target ≥ 90%)  ${share >= 0.9 ? 'OK' : 'MISSED'}`,
    '',
  ].join('\n');
}
