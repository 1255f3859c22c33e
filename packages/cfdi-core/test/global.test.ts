/** @clock periods and the InformacionGlobal Año are read against today */
import { describe, expect, it } from '@jest/globals';
import { BigNumber } from 'bignumber.js';
import fc from 'fast-check';
import {
  attr,
  buildGlobalRequest,
  checkSatRules,
  chunkTickets,
  freezeComprobante,
  globalFormaPago,
  globalPeriodByStart,
  globalSourceId,
  globalPeriodOf,
  netTicketParts,
  nextGlobalPeriod,
  parseXml,
  splitInProportion,
  ticketParts,
  type GlobalTicket,
  type Periodicidad,
  type XmlElement,
} from '../src/index.ts';
import { loadTestCsd, SchemaValidator } from './helpers/sat.ts';

const MX = 'America/Mexico_City';
const TIJUANA = 'America/Tijuana';
const at = (iso: string) => new Date(iso);
const period = (iso: string, p: Periodicidad, zone = MX) => {
  const g = globalPeriodOf(at(iso), p, zone);
  return { startsOn: g.startsOn, endsOn: g.endsOn, meses: g.meses, año: g.año };
};

describe('periods of the factura global (c_Periodicidad, emisor local time)', () => {
  it('a day is local: 23:30 in Mexico City on the 30th is the 30th, though UTC says the 1st', () => {
    // 2026-12-01T05:30Z = 2026-11-30 23:30 in Mexico City (UTC−6, no DST since 2022).
    expect(period('2026-12-01T05:30:00Z', '01')).toEqual({
      startsOn: '2026-11-30',
      endsOn: '2026-11-30',
      meses: '11',
      año: 2026,
    });
    const day = globalPeriodOf(at('2026-12-01T05:30:00Z'), '01', MX);
    expect(day.startsAt.toISOString()).toBe('2026-11-30T06:00:00.000Z');
    expect(day.endsAt.toISOString()).toBe('2026-12-01T06:00:00.000Z');
  });

  it('the emisor zone decides: the same instant is another day in Tijuana (with its DST)', () => {
    // 2026-07-01T05:30Z: 2026-06-30 23:30 in Mexico City, 22:30 in Tijuana (UTC−7 in summer).
    expect(period('2026-07-01T06:30:00Z', '01', MX).startsOn).toBe('2026-07-01');
    expect(period('2026-07-01T06:30:00Z', '01', TIJUANA).startsOn).toBe('2026-06-30');
    const tj = globalPeriodOf(at('2026-07-01T06:30:00Z'), '01', TIJUANA);
    expect(tj.endsAt.toISOString()).toBe('2026-07-01T07:00:00.000Z');
  });

  it('a week runs Monday to Sunday and is cut at the month end (each global in one month)', () => {
    // Monday 2026-11-30 is the last day of November: a one-day period.
    expect(period('2026-11-30T18:00:00Z', '02')).toEqual({
      startsOn: '2026-11-30',
      endsOn: '2026-11-30',
      meses: '11',
      año: 2026,
    });
    // Wednesday 2026-12-02 → the rest of that week, in December.
    expect(period('2026-12-02T18:00:00Z', '02')).toMatchObject({
      startsOn: '2026-12-01',
      endsOn: '2026-12-06',
      meses: '12',
    });
    // A whole week inside a month.
    expect(period('2026-12-10T18:00:00Z', '02')).toMatchObject({ startsOn: '2026-12-07', endsOn: '2026-12-13' });
    // The week of Monday 2026-12-28 spans the year end: two periods, two years.
    expect(period('2026-12-31T18:00:00Z', '02')).toEqual({
      startsOn: '2026-12-28',
      endsOn: '2026-12-31',
      meses: '12',
      año: 2026,
    });
    expect(period('2027-01-02T18:00:00Z', '02')).toEqual({
      startsOn: '2027-01-01',
      endsOn: '2027-01-03',
      meses: '01',
      año: 2027,
    });
  });

  it('fortnights are 1–15 and 16–end; February of a leap year ends on the 29th', () => {
    expect(period('2028-02-15T18:00:00Z', '03')).toMatchObject({ startsOn: '2028-02-01', endsOn: '2028-02-15' });
    expect(period('2028-02-29T18:00:00Z', '03')).toMatchObject({ startsOn: '2028-02-16', endsOn: '2028-02-29' });
    expect(period('2027-02-20T18:00:00Z', '03')).toMatchObject({ startsOn: '2027-02-16', endsOn: '2027-02-28' });
  });

  it('a month ends on its last local day: 31 January 23:59 in Mexico City is January', () => {
    expect(period('2027-02-01T05:59:00Z', '04')).toEqual({
      startsOn: '2027-01-01',
      endsOn: '2027-01-31',
      meses: '01',
      año: 2027,
    });
    expect(period('2027-02-01T06:00:00Z', '04')).toMatchObject({ startsOn: '2027-02-01', endsOn: '2027-02-28' });
  });

  it('bimesters (Periodicidad 05, régimen 621) name Meses 13–18', () => {
    expect(period('2026-02-10T18:00:00Z', '05')).toEqual({
      startsOn: '2026-01-01',
      endsOn: '2026-02-28',
      meses: '13',
      año: 2026,
    });
    expect(period('2026-12-31T18:00:00Z', '05')).toEqual({
      startsOn: '2026-11-01',
      endsOn: '2026-12-31',
      meses: '18',
      año: 2026,
    });
    expect(period('2026-08-01T18:00:00Z', '05')).toMatchObject({ startsOn: '2026-07-01', meses: '16' });
  });

  it('periods tile time: each next period starts the instant the last one ends', () => {
    for (const p of ['01', '02', '03', '04', '05'] as const) {
      let current = globalPeriodOf(at('2026-01-01T12:00:00Z'), p, TIJUANA);
      for (let i = 0; i < 60; i++) {
        const next = nextGlobalPeriod(current, TIJUANA);
        expect(next.startsAt.getTime()).toBe(current.endsAt.getTime());
        expect(globalPeriodOf(new Date(next.startsAt.getTime() - 1), p, TIJUANA).startsOn).toBe(current.startsOn);
        current = next;
      }
    }
  });

  it('a period is found by its first day, and only by it', () => {
    expect(globalPeriodByStart('2026-12-01', '04', MX)?.endsOn).toBe('2026-12-31');
    expect(globalPeriodByStart('2026-12-02', '04', MX)).toBeUndefined();
    expect(globalPeriodByStart('2026-02-30', '01', MX)).toBeUndefined();
    expect(globalPeriodByStart('not a day', '01', MX)).toBeUndefined();
  });
});

describe('the factura global document', () => {
  const csd = loadTestCsd('EKU9003173C9');
  const emisor = {
    rfc: 'EKU9003173C9',
    nombre: 'ESCUELA KEMPER URGATE',
    regimenFiscal: '601',
    lugarExpedicion: '42501',
  };
  const iva16 = { iva: '0.160000' };
  const ticket = (code: string, total: string, formaPago = '01', refunded = '0'): GlobalTicket => ({
    code,
    total,
    refunded,
    formaPago,
    parts: [{ taxes: iva16, amount: total }],
  });

  /** Each concepto's Importe plus its traslados, from the frozen document, by NoIdentificacion. */
  function conceptoGrosses(xml: string): [string, string][] {
    const doc = parseXml(xml);
    const conceptos = doc.children
      .filter((n): n is XmlElement => 'local' in n && n.local === 'Conceptos')
      .flatMap((c) => c.children.filter((n): n is XmlElement => 'local' in n && n.local === 'Concepto'));
    return conceptos.map((c) => {
      const traslados = c.children
        .filter((n): n is XmlElement => 'local' in n && n.local === 'Impuestos')
        .flatMap((i) => i.children.filter((n): n is XmlElement => 'local' in n && n.local === 'Traslados'))
        .flatMap((t) => t.children.filter((n): n is XmlElement => 'local' in n && n.local === 'Traslado'));
      const gross = traslados.reduce((s, t) => s.plus(attr(t, 'Importe') ?? 0), new BigNumber(attr(c, 'Importe')!));
      return [attr(c, 'NoIdentificacion')!, gross.toFixed(6)];
    });
  }

  it("each ticket's concepto carries that ticket's amount: no ticket takes another's cents", () => {
    const built = buildGlobalRequest({
      book: 'test-books',
      emisor,
      period: globalPeriodOf(at('2026-12-01T18:00:00Z'), '01', MX),
      part: 1,
      tickets: [ticket('T-464', '464.00'), ticket('T-99', '99.00')],
      serie: 'A',
      folio: 8,
      issuedAt: at('2026-12-01T07:00:00Z'),
    });
    const frozen = freezeComprobante(built.request!, csd);
    expect(frozen.total).toBe('563.00');
    // Once 464.0087 and 98.99: the whole comprobante's cent was moved into the larger ticket.
    expect(conceptoGrosses(frozen.xml)).toEqual([
      ['T-464', '464.000000'],
      ['T-99', '99.000000'],
    ]);
    expect(frozen.xml).toContain('ValorUnitario="85.344828" Importe="85.344828"');
  });

  it('for any tickets the Total is their sum and every concepto its own ticket’s amount (one may carry a fraction of a cent)', () => {
    const tax = fc.constantFrom(iva16, { iva: '0.080000' }, { iva: '0.000000' }, { iva: 'exento' });
    const cents = fc.integer({ min: 1, max: 2_000_000 }).map((c) => new BigNumber(c).shiftedBy(-2).toFixed(2));
    fc.assert(
      fc.property(fc.array(fc.tuple(cents, tax), { minLength: 1, maxLength: 40 }), (drawn) => {
        const tickets = drawn.map(([amount, taxes], k) => ({ ...ticket(`T${k}`, amount), parts: [{ taxes, amount }] }));
        const built = buildGlobalRequest({
          book: 'test-books',
          emisor,
          period: globalPeriodOf(at('2026-12-01T18:00:00Z'), '01', MX),
          part: 1,
          tickets,
          serie: 'A',
          folio: 9,
          issuedAt: at('2026-12-01T07:00:00Z'),
        });
        const frozen = freezeComprobante(built.request!, csd);
        const sum = tickets.reduce((s, t) => s.plus(t.total), new BigNumber(0));
        expect(frozen.total).toBe(sum.toFixed(2));
        const off = conceptoGrosses(frozen.xml).map(([, gross], k) =>
          new BigNumber(gross).minus(tickets[k]!.total).abs(),
        );
        expect(off.filter((d) => d.isGreaterThan('0.000001')).length).toBeLessThanOrEqual(1);
        expect(off.every((d) => d.isLessThan('0.01'))).toBe(true);
      }),
      { numRuns: 60 },
    );
  });

  it('splits in proportion to the cent, the parts adding up exactly', () => {
    expect(splitInProportion(['100.00', '50.00'], '10.00', 2)).toEqual(['6.67', '3.33']);
    expect(splitInProportion(['1', '1', '1'], '0.10', 2)).toEqual(['0.04', '0.03', '0.03']);
    expect(splitInProportion(['0', '0'], '0.00', 2)).toEqual(['0.00', '0.00']);
  });

  it("a ticket's parts are its grosses by tax profile; a refund before the global reduces them", () => {
    const parts = ticketParts(
      [
        {
          claveProdServ: '50202306',
          claveUnidad: 'H87',
          descripcion: 'a',
          cantidad: '1',
          amount: '116.00',
          taxIncluded: true,
          taxes: iva16,
        },
        {
          claveProdServ: '50202306',
          claveUnidad: 'H87',
          descripcion: 'b',
          cantidad: '1',
          amount: '58.00',
          taxIncluded: true,
          taxes: iva16,
        },
        {
          claveProdServ: '50192100',
          claveUnidad: 'H87',
          descripcion: 'c',
          cantidad: '1',
          amount: '30.00',
          taxIncluded: true,
          taxes: { iva: '0.000000' },
        },
      ],
      ['116.00', '58.00', '30.00'],
    );
    expect(parts).toEqual([
      { taxes: iva16, amount: '174.00' },
      { taxes: { iva: '0.000000' }, amount: '30.00' },
    ]);
    expect(netTicketParts({ total: '204.00', refunded: '0', parts })).toEqual(parts);
    expect(netTicketParts({ total: '204.00', refunded: '102.00', parts })).toEqual([
      { taxes: iva16, amount: '87.00' },
      { taxes: { iva: '0.000000' }, amount: '15.00' },
    ]);
    expect(netTicketParts({ total: '204.00', refunded: '204.00', parts })).toEqual([]);
  });

  it('FormaPago: the forma de pago of the largest sum; a tie goes to the lowest code', () => {
    expect(globalFormaPago([ticket('A', '100.00', '04'), ticket('B', '60.00', '01'), ticket('C', '50.00', '01')])).toBe(
      '01',
    );
    expect(globalFormaPago([ticket('A', '100.00', '04'), ticket('B', '100.00', '03')])).toBe('03');
    // Refunds count: what the global carries.
    expect(globalFormaPago([ticket('A', '100.00', '04', '60.00'), ticket('B', '50.00', '01')])).toBe('01');
  });

  it('is an Ingreso to público en general with InformacionGlobal and one concepto per ticket, valid against the rules and the XSD', async () => {
    const p = globalPeriodOf(at('2026-11-30T18:00:00Z'), '01', MX);
    const tickets = [
      ticket('7K2M9Q4X1A', '116.00', '04'),
      ticket('3H8P0W6T2B', '58.50', '01'),
      {
        code: 'Z9Y8X7W6V5',
        total: '204.00',
        refunded: '102.00',
        formaPago: '01',
        parts: [
          { taxes: iva16, amount: '174.00' },
          { taxes: { iva: '0.000000' }, amount: '30.00' },
        ],
      },
    ];
    const built = buildGlobalRequest({
      book: 'test-books',
      emisor,
      period: p,
      part: 1,
      tickets,
      serie: 'A',
      folio: 7,
      issuedAt: at('2026-12-01T07:00:00Z'),
    });
    expect(built.problems).toBeUndefined();
    const frozen = freezeComprobante(built.request!, csd);
    expect(frozen.total).toBe('276.50'); // 116 + 58.50 + (204 − 102)
    const doc = parseXml(frozen.xml);
    expect(checkSatRules(doc)).toEqual([]);
    expect(await new SchemaValidator().validate([frozen.xml])).toEqual([]);
    expect(frozen.xml).toMatch(/<cfdi:InformacionGlobal Periodicidad="01" Meses="11" Año="2026"\/>/);
    expect(frozen.xml).toMatch(
      /Rfc="XAXX010101000" Nombre="PUBLICO EN GENERAL" DomicilioFiscalReceptor="42501" RegimenFiscalReceptor="616" UsoCFDI="S01"/,
    );
    expect(frozen.xml).toMatch(/FormaPago="01"/); // 58.50 + 102.00 by 01 against 116.00 by 04
    const conceptos = [...frozen.xml.matchAll(/<cfdi:Concepto [^>]*>/g)].map((m) => m[0]);
    expect(conceptos).toHaveLength(4); // the third ticket: one concepto per tax profile
    for (const c of conceptos) {
      expect(c).toMatch(/ClaveProdServ="01010101"/);
      expect(c).toMatch(/ClaveUnidad="ACT"/);
      expect(c).toMatch(/Cantidad="1"/);
      expect(c).toMatch(/Descripcion="Venta"/);
    }
    expect(conceptos.map((c) => /NoIdentificacion="([^"]+)"/.exec(c)?.[1])).toEqual([
      '7K2M9Q4X1A',
      '3H8P0W6T2B',
      'Z9Y8X7W6V5',
      'Z9Y8X7W6V5',
    ]);
  });

  it('a bimestral global (régimen 621) passes the rule engine; the same period with 612 does not (CFDI40132)', () => {
    const p = globalPeriodOf(at('2026-12-15T18:00:00Z'), '05', MX);
    // Incorporación Fiscal is a persona física's régimen: the SAT's test CSD of one.
    const fisica = {
      rfc: 'CACX7605101P8',
      nombre: 'XOCHILT CASAS CHAVEZ',
      regimenFiscal: '621',
      lugarExpedicion: '42501',
    };
    const request = (regimenFiscal: string) =>
      buildGlobalRequest({
        book: 'test-books',
        emisor: { ...fisica, regimenFiscal },
        period: p,
        part: 1,
        tickets: [ticket('7K2M9Q4X1A', '116.00')],
        serie: 'A',
        folio: 1,
        issuedAt: at('2027-01-01T07:00:00Z'),
      }).request!;
    const rif = freezeComprobante(request('621'), loadTestCsd('CACX7605101P8'));
    expect(rif.xml).toMatch(/Periodicidad="05" Meses="18" Año="2026"/);
    expect(() => freezeComprobante(request('612'), loadTestCsd('CACX7605101P8'))).toThrow(/CFDI40132/);
  });

  it("a global's stamp key source names its books, its period and its part", () => {
    const p = globalPeriodOf(at('2026-11-30T18:00:00Z'), '01', MX);
    expect(globalSourceId('books-a', p, 1)).toBe('global:books-a:01:2026-11-30:1');
    expect(globalSourceId('books-b', p, 1)).not.toBe(globalSourceId('books-a', p, 1));
  });

  it('a period is split in parts of at most N conceptos (a ticket with two tax profiles counts two; a refunded one none)', () => {
    const two = {
      ...ticket('B', '204.00'),
      parts: [
        { taxes: iva16, amount: '174.00' },
        { taxes: { iva: '0.000000' }, amount: '30.00' },
      ],
    };
    const [a, c, d] = [ticket('A', '1.00'), ticket('C', '1.00'), ticket('D', '1.00')];
    const gone = ticket('E', '5.00', '01', '5.00');
    expect(chunkTickets([a, two, c, gone, d], 3).map((chunk) => chunk.map((t) => t.code))).toEqual([
      ['A', 'B'],
      ['C', 'D'],
    ]);
    expect(chunkTickets([a, c, d], 1).map((chunk) => chunk.map((t) => t.code))).toEqual([['A'], ['C'], ['D']]);
    expect(chunkTickets([], 2)).toEqual([]);
  });

  it('the largest global the schema accepts: 1000 conceptos, valid against the XSD', async () => {
    const p = globalPeriodOf(at('2026-11-30T18:00:00Z'), '01', MX);
    const many = Array.from({ length: 1001 }, (_, i) => ticket(String(i).padStart(10, '0'), `${100 + (i % 50)}.37`));
    const chunks = chunkTickets(many);
    expect(chunks.map((c) => c.length)).toEqual([1000, 1]);
    const built = buildGlobalRequest({
      book: 'test-books',
      emisor,
      period: p,
      part: 1,
      tickets: chunks[0]!,
      serie: 'A',
      folio: 1,
      issuedAt: at('2026-12-01T07:00:00Z'),
    });
    const frozen = freezeComprobante(built.request!, csd);
    expect(frozen.xml.match(/<cfdi:Concepto /g)).toHaveLength(1000);
    expect(await new SchemaValidator().validate([frozen.xml])).toEqual([]);
  });

  it('nothing to invoice (every ticket refunded) is said, not built', () => {
    const p = globalPeriodOf(at('2026-11-30T18:00:00Z'), '01', MX);
    const built = buildGlobalRequest({
      book: 'test-books',
      emisor,
      period: p,
      part: 1,
      tickets: [ticket('7K2M9Q4X1A', '116.00', '01', '116.00')],
      serie: 'A',
      folio: 1,
      issuedAt: at('2026-12-01T07:00:00Z'),
    });
    expect(built.problems?.[0]?.path).toBe('tickets');
  });
});
