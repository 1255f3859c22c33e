/**
 * The periods of the factura global (c_Periodicidad), in the emisor's local time.
 *
 * RMF regla 2.7.1.21 (público en general): an emisor may issue one CFDI per day, week, fortnight or
 * month (bimester for Incorporación Fiscal, régimen 621) with the operations with the general public
 * of that period, within 72 hours of its close. InformacionGlobal names the period by Periodicidad,
 * Meses (a month 01–12, or a bimester 13–18 for Periodicidad 05) and Año.
 *
 * Timbra's choice for the periods no catalogue pins down:
 * - a week starts on Monday, and **is cut at a month's end**: the week of Monday 28 December to Sunday
 *   3 January is two periods (28–31 December, Meses 12 of that year; 1–3 January, Meses 01 of the
 *   next). A global then always belongs to one month — the one its Meses names and the one whose
 *   monthly declaration it goes in — and Meses/Año are never a guess;
 * - a fortnight is the 1st–15th or the 16th–end of a month;
 * - a period starts and ends at local midnight in the emisor's zone (its LugarExpedicion's).
 */
import { formatFecha, instantOf } from '../fecha.ts';

/** c_Periodicidad. */
export type Periodicidad = '01' | '02' | '03' | '04' | '05';

/** What c_Periodicidad calls each period, for people. */
export const PERIODICIDAD_NAMES: Readonly<Record<Periodicidad, string>> = {
  '01': 'diario',
  '02': 'semanal',
  '03': 'quincenal',
  '04': 'mensual',
  '05': 'bimestral',
};

/** How long after a period closes its global may still be issued (RMF 2.7.1.21): 72 hours. */
export const GLOBAL_DEADLINE_MS = 72 * 3600_000;

export interface GlobalPeriod {
  periodicidad: Periodicidad;
  /** First local day of the period, `YYYY-MM-DD`: with the periodicidad and the emisor, its key. */
  startsOn: string;
  /** Last local day of the period (inclusive), `YYYY-MM-DD`. */
  endsOn: string;
  /** The instants it covers: [startsAt, endsAt). */
  startsAt: Date;
  endsAt: Date;
  /** InformacionGlobal/@Meses: the month 01–12, or the bimester 13–18 for Periodicidad 05. */
  meses: string;
  /** InformacionGlobal/@Año. */
  año: number;
}

/** The period of `periodicidad` that holds `instant`, in `timeZone`. */
export function globalPeriodOf(instant: Date, periodicidad: Periodicidad, timeZone: string): GlobalPeriod {
  const local = formatFecha(instant, timeZone).slice(0, 10);
  return globalPeriodStartingOn(periodStartOn(local, periodicidad), periodicidad, timeZone);
}

/**
 * The period that starts on `startsOn` (a local date), or undefined when no period of
 * `periodicidad` starts on that day.
 */
export function globalPeriodByStart(
  startsOn: string,
  periodicidad: Periodicidad,
  timeZone: string,
): GlobalPeriod | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(startsOn) || !isDate(startsOn)) return undefined;
  if (periodStartOn(startsOn, periodicidad) !== startsOn) return undefined;
  return globalPeriodStartingOn(startsOn, periodicidad, timeZone);
}

/** The period after `period`. */
export function nextGlobalPeriod(period: GlobalPeriod, timeZone: string): GlobalPeriod {
  return globalPeriodStartingOn(addDays(period.endsOn, 1), period.periodicidad, timeZone);
}

/** How a period is named for people (and in the PDF's concepto descriptions): `2026-12-01 a 2026-12-06`. */
export function periodLabel(period: Pick<GlobalPeriod, 'startsOn' | 'endsOn'>): string {
  return period.startsOn === period.endsOn ? period.startsOn : `${period.startsOn} a ${period.endsOn}`;
}

function globalPeriodStartingOn(startsOn: string, periodicidad: Periodicidad, timeZone: string): GlobalPeriod {
  const endsOn = periodEndOn(startsOn, periodicidad);
  const [year, month] = [Number(startsOn.slice(0, 4)), Number(startsOn.slice(5, 7))];
  return {
    periodicidad,
    startsOn,
    endsOn,
    startsAt: instantOf(`${startsOn}T00:00:00`, timeZone),
    endsAt: instantOf(`${addDays(endsOn, 1)}T00:00:00`, timeZone),
    meses: periodicidad === '05' ? String(12 + Math.ceil(month / 2)) : String(month).padStart(2, '0'),
    año: year,
  };
}

/** The first day of the period holding the local day `day`. */
function periodStartOn(day: string, periodicidad: Periodicidad): string {
  const [y, m, d] = [day.slice(0, 4), Number(day.slice(5, 7)), Number(day.slice(8, 10))];
  switch (periodicidad) {
    case '01':
      return day;
    case '02': {
      // Monday of its week, but not before the 1st of its month.
      const weekday = (new Date(`${day}T00:00:00Z`).getUTCDay() + 6) % 7; // Monday 0 … Sunday 6
      return weekday >= d ? `${day.slice(0, 8)}01` : addDays(day, -weekday);
    }
    case '03':
      return `${day.slice(0, 8)}${d <= 15 ? '01' : '16'}`;
    case '04':
      return `${day.slice(0, 8)}01`;
    case '05':
      return `${y}-${String(m % 2 === 0 ? m - 1 : m).padStart(2, '0')}-01`;
  }
}

/** The last day (inclusive) of the period starting on `startsOn`. */
function periodEndOn(startsOn: string, periodicidad: Periodicidad): string {
  const monthEnd = lastDayOfMonth(startsOn);
  switch (periodicidad) {
    case '01':
      return startsOn;
    case '02': {
      const weekday = (new Date(`${startsOn}T00:00:00Z`).getUTCDay() + 6) % 7;
      const sunday = addDays(startsOn, 6 - weekday);
      return sunday < monthEnd ? sunday : monthEnd;
    }
    case '03':
      return Number(startsOn.slice(8, 10)) === 1 ? `${startsOn.slice(0, 8)}15` : monthEnd;
    case '04':
      return monthEnd;
    case '05':
      return lastDayOfMonth(addMonths(startsOn, 1));
  }
}

function addDays(day: string, days: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
}

function addMonths(firstOfMonth: string, months: number): string {
  const d = new Date(`${firstOfMonth.slice(0, 8)}01T00:00:00Z`);
  d.setUTCMonth(d.getUTCMonth() + months);
  return d.toISOString().slice(0, 10);
}

function lastDayOfMonth(day: string): string {
  return addDays(addMonths(`${day.slice(0, 8)}01`, 1), -1);
}

function isDate(day: string): boolean {
  const t = Date.parse(`${day}T00:00:00Z`);
  return !Number.isNaN(t) && new Date(t).toISOString().slice(0, 10) === day;
}
