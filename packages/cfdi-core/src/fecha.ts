/**
 * Fecha of a comprobante: the business event's instant shown as wall-clock time in the time zone of
 * LugarExpedicion, formatted `YYYY-MM-DDThh:mm:ss` without offset (Anexo 20, t_FechaH).
 *
 * Never computed from "now": the same event always gives the same Fecha, which is what makes a frozen
 * comprobante reproducible.
 */

/** Zone used when a código postal is not in the table below (Zona Centro). */
export const DEFAULT_TIME_ZONE = 'America/Mexico_City';

/**
 * How long after its Fecha a CFDI can be stamped: a PAC refuses an older one (error 401, Anexo 20).
 * After it, a document that was not stamped can never be.
 */
export const STAMP_WINDOW_MS = 72 * 3600_000;

// Código postal ranges per state whose time zone differs from Zona Centro. The first two digits of a
// CP identify the state (SEPOMEX); this table is state-level, which is exact except for a few border
// municipalities (see docs). Ranges are inclusive on the 5-digit CP.
const CP_ZONES: readonly (readonly [number, number, string])[] = [
  [21000, 22999, 'America/Tijuana'], // Baja California (Zona Noroeste)
  [23000, 23999, 'America/Mazatlan'], // Baja California Sur (Zona Pacífico)
  [31000, 31999, 'America/Chihuahua'], // Chihuahua (Zona Centro since 2022, own tzdb zone)
  [32000, 32999, 'America/Ciudad_Juarez'], // Ciudad Juárez (border, follows US DST)
  [33000, 33999, 'America/Chihuahua'],
  [63000, 63999, 'America/Mazatlan'], // Nayarit (Zona Pacífico)
  [77000, 77999, 'America/Cancun'], // Quintana Roo (Zona Sureste)
  [80000, 82999, 'America/Mazatlan'], // Sinaloa (Zona Pacífico)
  [83000, 85999, 'America/Hermosillo'], // Sonora (Pacífico without DST)
];

/** The IANA time zone for a 5-digit código postal; `DEFAULT_TIME_ZONE` when not in the table. */
export function timeZoneForCodigoPostal(codigoPostal: string): string {
  const cp = Number.parseInt(codigoPostal, 10);
  for (const [from, to, zone] of CP_ZONES) {
    if (cp >= from && cp <= to) return zone;
  }
  return DEFAULT_TIME_ZONE;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** Whether `timeZone` is an IANA zone the runtime knows. */
export function isKnownTimeZone(timeZone: string): boolean {
  try {
    formatterFor(timeZone);
    return true;
  } catch {
    return false;
  }
}

/**
 * Formats an instant as local wall-clock time in `timeZone`: `YYYY-MM-DDThh:mm:ss`. Sub-second
 * precision is dropped (truncated), as the SAT format has none.
 */
export function formatFecha(instant: Date, timeZone: string): string {
  // Intl formatting costs microseconds; a PAC or a worker formats "now" for every stamp, so the last
  // second per zone is remembered.
  const second = Math.floor(instant.getTime() / 1000);
  const last = lastFormatted.get(timeZone);
  if (last?.second === second) return last.text;
  const parts: Record<string, string> = {};
  for (const p of formatterFor(timeZone).formatToParts(instant)) parts[p.type] = p.value;
  const year = (parts.year ?? '').padStart(4, '0');
  const text = `${year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}`;
  lastFormatted.set(timeZone, { second, text });
  return text;
}

const lastFormatted = new Map<string, { second: number; text: string }>();

/** The instant a local wall-clock time (`YYYY-MM-DDThh:mm:ss`) denotes in `timeZone`. */
export function instantOf(fecha: string, timeZone: string): Date {
  // Zone offsets change at most on the hour: remember them per zone and local hour.
  const key = `${timeZone}|${fecha.slice(0, 13)}`;
  const asUtc = Date.parse(`${fecha}Z`);
  const cached = offsets.get(key);
  if (cached !== undefined) return new Date(asUtc + cached);
  // Offset of the zone at that moment; a second pass settles DST edges.
  let guess = asUtc;
  for (let i = 0; i < 2; i++) {
    const shown = Date.parse(`${formatFecha(new Date(guess), timeZone)}Z`);
    guess += asUtc - shown;
  }
  if (offsets.size > 10_000) offsets.clear();
  offsets.set(key, guess - asUtc);
  return new Date(guess);
}

const offsets = new Map<string, number>();
