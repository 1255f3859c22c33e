import { InvalidArgumentError } from 'commander';

const DURATION = /^(\d+)(m|h|d|w)$/;
const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

/** `--since`: an ISO 8601 date or time, or a duration back from now (30m, 12h, 7d, 2w). */
export function parseSince(value: string, now = Date.now()): Date {
  const duration = DURATION.exec(value);
  if (duration) return new Date(now - Number(duration[1]) * UNIT_MS[duration[2] as keyof typeof UNIT_MS]);
  const time = /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value) ? new Date(value) : undefined;
  if (!time || Number.isNaN(time.getTime()))
    throw new InvalidArgumentError(
      'an ISO 8601 date or time (2026-11-30, 2026-11-30T12:00:00Z) or a duration (30m, 12h, 7d, 2w)',
    );
  return time;
}
