/**
 * A local copy of Banxico's SIE API for exchange rates: `GET /SieAPIRest/service/v1/series/{serie}/
 * datos/{from}/{to}` with the `Bmx-Token` header, answered as SIE does (`{ bmx: { series: [{ idSerie,
 * titulo, datos: [{ fecha: "dd/mm/yyyy", dato: "17.2543" }] }] } }`), one observation per business
 * day (none on weekends). The rate of a day is the series' base rate unless the control API set
 * one (`POST /_sandbox/banxico/rates`), so tests can make a day's FIX whatever they need.
 */
import { FakeError } from './stripe-fake.ts';

/** The series Timbra reads and their base rates (pesos per unit). */
export const BANXICO_BASE_RATES: Readonly<Record<string, { titulo: string; rate: string }>> = {
  SF43718: { titulo: 'Tipo de cambio Pesos por dólar E.U.A. (FIX)', rate: '17.2543' },
  SF46410: { titulo: 'Tipo de cambio Pesos por euro', rate: '18.9012' },
  SF46407: { titulo: 'Tipo de cambio Pesos por libra esterlina', rate: '21.9876' },
  SF46406: { titulo: 'Tipo de cambio Pesos por yen japonés', rate: '0.1154' },
  SF60632: { titulo: 'Tipo de cambio Pesos por dólar canadiense', rate: '12.6543' },
};

export class BanxicoFake {
  /** Rates set for a day: `${serie}|${YYYY-MM-DD}` → dato ("N/E" for none). */
  readonly rates = new Map<string, string>();

  set(serie: string, date: string, dato: string): void {
    this.rates.set(`${serie}|${date}`, dato);
  }

  series(serie: string, from: string, to: string) {
    const base = BANXICO_BASE_RATES[serie];
    if (!base) throw new FakeError(404, 'not_found', `no series ${serie}`);
    if (!/^\d{4}-\d{2}-\d{2}$/.test(from) || !/^\d{4}-\d{2}-\d{2}$/.test(to) || from > to)
      throw new FakeError(400, 'bad_request', 'dates are yyyy-MM-dd, from ≤ to');
    const datos: { fecha: string; dato: string }[] = [];
    for (let d = new Date(`${from}T00:00:00Z`); d.toISOString().slice(0, 10) <= to; d.setUTCDate(d.getUTCDate() + 1)) {
      const day = d.toISOString().slice(0, 10);
      const set = this.rates.get(`${serie}|${day}`);
      const weekend = d.getUTCDay() === 0 || d.getUTCDay() === 6;
      if (weekend && set === undefined) continue;
      datos.push({ fecha: `${day.slice(8, 10)}/${day.slice(5, 7)}/${day.slice(0, 4)}`, dato: set ?? base.rate });
    }
    return { bmx: { series: [{ idSerie: serie, titulo: base.titulo, datos }] } };
  }
}
