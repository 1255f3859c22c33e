/**
 * TipoCambio: the pesos one unit of a foreign currency was worth for a sale. A payment in another
 * currency than MXN gets it from, in order:
 *
 * 1. the request (REST `tipoCambio`, metadata `tipo_cambio`) — the merchant's own word;
 * 2. the provider's settlement: Stripe's balance transaction `exchange_rate` when the money was
 *    settled in MXN (what the merchant really received);
 * 3. a rate source: Banxico's FIX (series SF43718 for USD, and its peers for other currencies), the
 *    rate the DOF publishes and the SAT checks against — `BanxicoRates`, an adapter of Banxico's SIE
 *    API, pointed at Banxico with a token, or at the provider sandbox's copy of that API.
 *
 * Whatever the source, the rate must be within c_Moneda's variation (5% for USD) of the FIX when the
 * FIX is known (CFDI40118: a PAC refuses it otherwise). No rate at all: a REST call is refused
 * (422 exchange_rate_unavailable); a webhook's money is recorded and its invoice waits in
 * needs_data, loudly (metric and alert), until a correction supplies the rate.
 */
import { BigNumber } from 'bignumber.js';
import { catalogs, formatFecha, type ValidationIssue } from '@timbra/cfdi-core';
import { DomainError } from '../domain-errors.ts';

/** A rate and the day it is for (YYYY-MM-DD). */
export interface ExchangeRate {
  rate: string;
  date: string;
}

/** Where reference rates come from. */
export interface ExchangeRateSource {
  readonly name: string;
  /**
   * The rate for a sale of `day` (YYYY-MM-DD, Mexico City): the latest published before that day.
   * @returns undefined when the source has no rate for that currency.
   * @throws when the source cannot be reached (the caller answers 503 or retries).
   */
  rateFor(moneda: string, day: string): Promise<ExchangeRate | undefined>;
}

/** SIE series of the rates Banxico publishes (FIX for USD; the DOF's for the others). */
export const BANXICO_SERIES: Readonly<Record<string, string>> = {
  USD: 'SF43718',
  EUR: 'SF46410',
  GBP: 'SF46407',
  JPY: 'SF46406',
  CAD: 'SF60632',
};

/**
 * Banxico's SIE API (`GET {url}/SieAPIRest/service/v1/series/{serie}/datos/{from}/{to}`, header
 * `Bmx-Token`): the latest observation dated before the sale's day, looking back ten days
 * (weekends and holidays have none). Observations read "N/E" when there is none for the day.
 */
export class BanxicoRates implements ExchangeRateSource {
  readonly name = 'banxico';

  constructor(
    private readonly config: {
      url: string;
      token: string;
      series?: Readonly<Record<string, string>>;
      timeoutMs?: number;
    },
  ) {}

  async rateFor(moneda: string, day: string): Promise<ExchangeRate | undefined> {
    const serie = (this.config.series ?? BANXICO_SERIES)[moneda];
    if (!serie) return undefined;
    const to = shiftDay(day, -1);
    const from = shiftDay(day, -10);
    const url = `${this.config.url.replace(/\/$/, '')}/SieAPIRest/service/v1/series/${serie}/datos/${from}/${to}`;
    const response = await fetch(url, {
      headers: { 'Bmx-Token': this.config.token, Accept: 'application/json' },
      signal: AbortSignal.timeout(this.config.timeoutMs ?? 5_000),
    });
    // Never the token in a message: only where and what.
    if (!response.ok) throw new Error(`Banxico SIE answered ${response.status} for ${serie}`);
    const body = (await response.json()) as {
      bmx?: { series?: { idSerie?: string; datos?: { fecha?: string; dato?: string }[] }[] };
    };
    const datos = body.bmx?.series?.find((s) => s.idSerie === serie)?.datos ?? [];
    let latest: ExchangeRate | undefined;
    for (const d of datos) {
      const m = /^(\d{2})\/(\d{2})\/(\d{4})$/.exec(d.fecha ?? '');
      const value = (d.dato ?? '').replace(/,/g, '');
      if (!m || !/^\d+(\.\d+)?$/.test(value)) continue; // "N/E": no rate that day
      const date = `${m[3]}-${m[2]}-${m[1]}`;
      if (date < day && (!latest || date > latest.date))
        latest = { rate: new BigNumber(value).decimalPlaces(6, BigNumber.ROUND_HALF_UP).toFixed(), date };
    }
    return latest;
  }
}

/** The day before or after a YYYY-MM-DD day. */
function shiftDay(day: string, days: number): string {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

/** The sale's day in Mexico City (the FIX is published per day there). */
export function saleDay(at: Date): string {
  return formatFecha(at, 'America/Mexico_City').slice(0, 10);
}

/** TipoCambio as Anexo 20 writes it: up to 6 decimals, rounded half up. */
export function tipoCambioText(rate: string | number): string | undefined {
  // What a merchant typed in a provider's metadata can be anything: only a decimal is a rate.
  const text = typeof rate === 'number' ? (Number.isFinite(rate) ? String(rate) : '') : rate.trim();
  if (!/^\d{1,12}(\.\d+)?$/.test(text)) return undefined;
  const value = new BigNumber(text);
  if (!value.isFinite() || !value.isGreaterThan(0)) return undefined;
  return value.decimalPlaces(6, BigNumber.ROUND_HALF_UP).toFixed();
}

/**
 * Whether `tipoCambio` is within the variation c_Moneda allows around `reference` (CFDI40118): for
 * USD 5%. @returns the limits when it is not.
 */
export function outsideVariation(
  moneda: string,
  tipoCambio: string,
  reference: string,
): { min: string; max: string; variation: number } | undefined {
  const variation = Object.hasOwn(catalogs.MONEDA, moneda) ? (catalogs.MONEDA[moneda]?.variation ?? 0) : 0;
  const ref = new BigNumber(reference);
  const min = ref.times(1 - variation / 100);
  const max = ref.times(1 + variation / 100);
  const tc = new BigNumber(tipoCambio);
  return tc.isLessThan(min) || tc.isGreaterThan(max)
    ? { min: min.toFixed(6), max: max.toFixed(6), variation }
    : undefined;
}

/**
 * The TipoCambio of money in `moneda` on `day` (Mexico City): the one `given` (the merchant's, or the
 * provider's settlement), checked against the rate source's when there is one (c_Moneda's variation,
 * CFDI40118); else the rate source's. One rule for every document: a sale's Ingreso, a Pago's
 * TipoCambioP at FechaPago, an Egreso at the refund's day.
 *
 * @returns the rate and where it came from, or the refusal's code and why.
 * @throws DomainError exchange_rate_source_down when the source did not answer and nothing was given.
 */
export async function tipoCambioOn(
  rates: ExchangeRateSource | undefined,
  moneda: string,
  day: string,
  given: { rate: string; source: string } | undefined,
  path = 'tipoCambio',
): Promise<
  | { rate: string; source: string }
  | { code: 'exchange_rate_unavailable' | 'exchange_rate_out_of_range'; problem: ValidationIssue }
> {
  let reference: Awaited<ReturnType<ExchangeRateSource['rateFor']>>;
  try {
    reference = rates ? await rates.rateFor(moneda, day) : undefined;
  } catch (error) {
    // With a rate in hand the check is the PAC's to make; without one there is nothing to invoice with.
    if (given) return given;
    throw new DomainError('exchange_rate_source_down', `${rates!.name}: ${(error as Error).message}`);
  }
  if (given) {
    const outside = reference ? outsideVariation(moneda, given.rate, reference.rate) : undefined;
    if (outside)
      return {
        code: 'exchange_rate_out_of_range',
        problem: {
          path,
          message: `${given.rate} (${given.source}) is outside ${outside.min}–${outside.max}: ±${outside.variation}% of ${reference!.rate}, ${rates!.name}'s rate of ${reference!.date} (CFDI40118)`,
        },
      };
    return given;
  }
  if (reference) return { rate: reference.rate, source: rates!.name };
  return {
    code: 'exchange_rate_unavailable',
    problem: {
      path,
      message: rates
        ? `${rates.name} has no ${moneda} rate before ${day}: send ${path}`
        : `no TipoCambio for ${moneda}: send ${path} (no rate source is configured: EXCHANGE_RATE_SOURCE)`,
    },
  };
}
