/** @clock Fecha is the emisor's local time now; the 72-hour window is measured with the application's clock */
import { describe, expect, it } from '@jest/globals';
import { DEFAULT_TIME_ZONE, formatFecha, freezeComprobante, timeZoneForCodigoPostal } from '../src/index.ts';
import { ingresoRequest } from './helpers/requests.ts';
import { loadTestCsd } from './helpers/sat.ts';

describe('Fecha', () => {
  it.each([
    ['06600', 'America/Mexico_City'],
    ['42501', 'America/Mexico_City'],
    ['22000', 'America/Tijuana'],
    ['23000', 'America/Mazatlan'],
    ['32000', 'America/Ciudad_Juarez'],
    ['31000', 'America/Chihuahua'],
    ['77500', 'America/Cancun'],
    ['83000', 'America/Hermosillo'],
    ['99999', DEFAULT_TIME_ZONE],
  ])('CP %s is in %s', (cp, zone) => {
    expect(timeZoneForCodigoPostal(cp)).toBe(zone);
  });

  it('formats the instant as wall-clock time of the zone, without offset', () => {
    const instant = new Date('2026-11-29T18:30:15.987Z');
    expect(formatFecha(instant, 'America/Mexico_City')).toBe('2026-11-29T12:30:15'); // UTC−6, no DST since 2022
    expect(formatFecha(instant, 'America/Cancun')).toBe('2026-11-29T13:30:15'); // UTC−5
    expect(formatFecha(instant, 'America/Tijuana')).toBe('2026-11-29T10:30:15'); // PST
    expect(formatFecha(new Date('2026-07-01T18:00:00Z'), 'America/Tijuana')).toBe('2026-07-01T11:00:00'); // PDT
    expect(formatFecha(new Date('2026-07-01T18:00:00Z'), 'America/Mexico_City')).toBe('2026-07-01T12:00:00');
    expect(formatFecha(new Date('2027-01-01T05:59:59Z'), 'America/Mexico_City')).toBe('2026-12-31T23:59:59');
    expect(formatFecha(new Date('2026-03-01T06:00:00Z'), 'America/Mexico_City')).toBe('2026-03-01T00:00:00');
  });

  it('comes from the business event, not from the clock, and follows LugarExpedicion', () => {
    const csd = loadTestCsd('EKU9003173C9');
    const tijuana = freezeComprobante({ ...ingresoRequest(), lugarExpedicion: '22000' }, csd);
    expect(tijuana.fecha).toBe('2026-11-29T10:30:15');
    expect(tijuana.xml).toContain('Fecha="2026-11-29T10:30:15"');
    const explicit = freezeComprobante({ ...ingresoRequest(), timeZone: 'America/Cancun' }, csd);
    expect(explicit.fecha).toBe('2026-11-29T13:30:15');
  });
});
