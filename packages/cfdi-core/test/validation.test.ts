import { describe, expect, it } from '@jest/globals';
import { loadTestCsd } from '@timbra/test-support';
import {
  isBlank,
  preflight,
  rfcKind,
  usoCfdiAllowed,
  usoCfdiFor,
  validateInvoiceRequest,
  type InvoiceRequestInput,
  type ValidationIssue,
} from '../src/index.ts';
import { egresoRequest, ingresoRequest, pagoRequest, publicoGeneralRequest } from './helpers/requests.ts';

type Json = Record<string, unknown>;
type Concepto = Json & { traslados: Json[]; retenciones?: Json[] };

const csd = loadTestCsd('EKU9003173C9');

/** What freezing would refuse: the request's problems, or the SAT rules its document breaks. */
function issuesOf(request: InvoiceRequestInput): ValidationIssue[] {
  return preflight(request, csd);
}

function withIngreso(
  mutate: (r: Json & { conceptos: Concepto[]; receptor: Json; emisor: Json }) => void,
): InvoiceRequestInput {
  const r = structuredClone(ingresoRequest()) as Json & { conceptos: Concepto[]; receptor: Json; emisor: Json };
  mutate(r);
  return r as InvoiceRequestInput;
}

describe('validation', () => {
  it('accepts the reference requests of every kind', () => {
    for (const r of [ingresoRequest(), publicoGeneralRequest(), egresoRequest(), pagoRequest()])
      expect(issuesOf(r)).toEqual([]);
  });

  // Each row breaks one rule and names the path the error must point at.
  const rules: [string, InvoiceRequestInput, string][] = [
    [
      'amount as a JS number',
      withIngreso((r) => (r.conceptos[0]!.valorUnitario = 4310.34)),
      'conceptos.0.valorUnitario',
    ],
    ['negative amount', withIngreso((r) => (r.conceptos[0]!.valorUnitario = '-1.00')), 'conceptos.0.valorUnitario'],
    ['7 decimals', withIngreso((r) => (r.conceptos[0]!.cantidad = '1.0000001')), 'conceptos.0.cantidad'],
    ['unknown FormaPago', withIngreso((r) => (r.formaPago = '07')), 'CFDI40104'],
    ['unknown MetodoPago', withIngreso((r) => (r.metodoPago = 'PIP')), 'CFDI40124'],
    ['Exportacion 02 without Comercio Exterior (CFDI40122)', withIngreso((r) => (r.exportacion = '02')), 'CFDI40122'],
    ['TipoCambio on a Pago (CFDI40116)', { ...structuredClone(pagoRequest()), tipoCambio: '1' }, 'CFDI40116'],
    ['PPD with FormaPago other than 99', withIngreso((r) => (r.metodoPago = 'PPD')), 'CFDI40105'],
    ['unknown UsoCFDI', withIngreso((r) => (r.receptor.usoCFDI = 'G99')), 'CFDI40160'],
    ['unknown RegimenFiscal', withIngreso((r) => (r.emisor.regimenFiscal = '699')), 'CFDI40140'],
    ['régimen for the other persona type', withIngreso((r) => (r.emisor.regimenFiscal = '612')), 'CFDI40141'],
    ['RFC of wrong shape', withIngreso((r) => (r.receptor.rfc = 'CACX7613101P8')), 'CFDI40143'],
    ['generic RFC as emisor', withIngreso((r) => (r.emisor.rfc = 'XAXX010101000')), 'emisor.rfc'],
    ['unknown ObjetoImp', withIngreso((r) => (r.conceptos[0]!.objetoImp = '09')), 'conceptos.0.objetoImp'],
    [
      'ObjetoImp 07 without taxes',
      withIngreso((r) => Object.assign(r.conceptos[0]!, { objetoImp: '07', traslados: [] })),
      'CFDI40170',
    ],
    ['taxes with ObjetoImp 01', withIngreso((r) => (r.conceptos[0]!.objetoImp = '01')), 'conceptos.0.objetoImp'],
    ['ObjetoImp 02 without taxes', withIngreso((r) => (r.conceptos[0]!.traslados = [])), 'CFDI40171'],
    ['unknown Impuesto', withIngreso((r) => (r.conceptos[0]!.traslados[0]!.impuesto = '004')), 'CFDI40175'],
    ['ISR transferred', withIngreso((r) => (r.conceptos[0]!.traslados[0]!.impuesto = '001')), 'CFDI40175'],
    ['unknown TipoFactor', withIngreso((r) => (r.conceptos[0]!.traslados[0]!.tipoFactor = 'Tarifa')), 'CFDI40176'],
    ['IVA at 15%', withIngreso((r) => (r.conceptos[0]!.traslados[0]!.tasaOCuota = '0.150000')), 'CFDI40179'],
    [
      'Exento with a rate',
      withIngreso((r) => (r.conceptos[0]!.traslados[0]!.tipoFactor = 'Exento')),
      'conceptos.0.traslados.0.tasaOCuota',
    ],
    [
      'retención above the maximum',
      withIngreso((r) => (r.conceptos[2]!.retenciones![0]!.tasaOCuota = '0.400000')),
      'CFDI40185',
    ],
    ['descuento above importe', withIngreso((r) => (r.conceptos[1]!.descuento = '900.00')), 'CFDI40169'],
    ['descuento with 3 decimals', withIngreso((r) => (r.conceptos[1]!.descuento = '1.005')), 'conceptos.1.descuento'],
    ['unknown Moneda', withIngreso((r) => (r.moneda = 'MXP')), 'moneda'],
    ['USD without TipoCambio', withIngreso((r) => (r.moneda = 'USD')), 'CFDI40115'],
    ['MXN with TipoCambio 17', withIngreso((r) => (r.tipoCambio = '17.00')), 'CFDI40114'],
    ['unknown Exportacion', withIngreso((r) => (r.exportacion = '05')), 'CFDI40123'],
    ['CP of 4 digits', withIngreso((r) => (r.lugarExpedicion = '4250')), 'lugarExpedicion'],
    ['unknown time zone', withIngreso((r) => (r.timeZone = 'Mars/Olympus')), 'timeZone'],
    ['no conceptos', withIngreso((r) => (r.conceptos = [])), 'conceptos'],
    ["'|' in a name", withIngreso((r) => (r.receptor.nombre = 'A|B')), 'receptor.nombre'],
    ['control character', withIngreso((r) => (r.conceptos[0]!.descripcion = 'bell\u0007')), 'conceptos.0.descripcion'],
    ['only whitespace', withIngreso((r) => (r.conceptos[0]!.descripcion = ' \t\n ')), 'conceptos.0.descripcion'],
    [
      '1001 characters',
      withIngreso((r) => (r.conceptos[0]!.descripcion = 'x'.repeat(1001))),
      'conceptos.0.descripcion',
    ],
    ['issuedAt without offset', withIngreso((r) => (r.issuedAt = '2026-11-29T18:30:15')), 'issuedAt'],
    ['zero cantidad', withIngreso((r) => (r.conceptos[0]!.cantidad = '0')), 'conceptos.0.cantidad'],
    ['zero taxable base', withIngreso((r) => (r.conceptos[1]!.descuento = '868.50')), 'CFDI40174'],
    ['absurd amount', withIngreso((r) => (r.conceptos[0]!.valorUnitario = '999999999999999999')), 'conceptos.0'],
    ['Egreso without CfdiRelacionados', { ...egresoRequest(), cfdiRelacionados: [] }, 'cfdiRelacionados'],
    [
      'unknown TipoRelacion',
      {
        ...egresoRequest(),
        cfdiRelacionados: [{ tipoRelacion: '09', uuids: ['6F1D3C7E-2B4A-4C8D-9E0F-1A2B3C4D5E6F'] }],
      },
      'CFDI40137',
    ],
    [
      'related UUID of wrong shape',
      { ...egresoRequest(), cfdiRelacionados: [{ tipoRelacion: '01', uuids: ['not-a-uuid'] }] },
      'cfdiRelacionados.0.uuids.0',
    ],
    [
      'público en general without InformacionGlobal',
      { ...publicoGeneralRequest(), informacionGlobal: undefined },
      'CFDI40130',
    ],
    [
      'público en general with another CP',
      {
        ...publicoGeneralRequest(),
        receptor: { ...publicoGeneralRequest().receptor, domicilioFiscalReceptor: '01000' },
      },
      'CFDI40149',
    ],
    [
      'generic RFC with régimen 601',
      { ...publicoGeneralRequest(), receptor: { ...publicoGeneralRequest().receptor, regimenFiscalReceptor: '601' } },
      'CFDI40159',
    ],
    [
      'InformacionGlobal month 19',
      { ...publicoGeneralRequest(), informacionGlobal: { periodicidad: '01', meses: '19', año: 2026 } },
      'CFDI40133',
    ],
    ['Pago without pago', { ...pagoRequest(), pago: undefined }, 'pago'],
    ['Pago in MXN', { ...pagoRequest(), moneda: 'MXN' }, 'CFDI40113'],
    ['Pago with FormaPago', { ...pagoRequest(), formaPago: '03' }, 'CFDI40103'],
    [
      'Pago with UsoCFDI G03',
      { ...pagoRequest(), receptor: { ...pagoRequest().receptor, usoCFDI: 'G03' } },
      'CFDI40160',
    ],
    [
      'Pago paying more than the balance',
      {
        ...pagoRequest(),
        pago: {
          ...pagoRequest().pago!,
          doctosRelacionados: [{ ...pagoRequest().pago!.doctosRelacionados[0]!, impPagado: '20000.00' }],
        },
      },
      'CRP20244',
    ],
    [
      'Pago monto below the amounts paid',
      { ...pagoRequest(), pago: { ...pagoRequest().pago!, monto: '100.00' } },
      'CRP20217',
    ],
    [
      'Pago with FormaDePagoP 99',
      { ...pagoRequest(), pago: { ...pagoRequest().pago!, formaDePagoP: '99' } },
      'CRP20212',
    ],
    ['Ingreso with CP01', withIngreso((r) => (r.receptor.usoCFDI = 'CP01')), 'CFDI40160'],
  ];

  // The expectation is the request field (what the request itself must say) or the SAT rule the
  // built document breaks (the rule engine, src/rules).
  it.each(rules)('rejects %s', (_name, request, expected) => {
    const issues = issuesOf(request);
    expect(issues.map((i) => (/^(CFDI40|CRP20)/.test(expected) ? i.rule : i.path))).toContain(expected);
  });

  it('classifies RFC shapes', () => {
    expect(rfcKind('EKU9003173C9')).toBe('moral');
    expect(rfcKind('CACX7605101P8')).toBe('fisica');
    expect(rfcKind('XAXX010101000')).toBe('generico');
    expect(rfcKind('XEXX010101000')).toBe('generico');
    expect(rfcKind('ÑAÑ010101AB1')).toBe('moral');
    expect(rfcKind('&AB010101AB1')).toBe('moral');
    expect(rfcKind('EKU9003173C')).toBeNull();
    expect(rfcKind('eku9003173c9')).toBeNull();
    expect(rfcKind("EKU900317' OR 1=1")).toBeNull();
  });
});

describe('CFDI40161: UsoCFDI must apply to the receptor (c_UsoCFDI, from sat/catalogos)', () => {
  // A persona física (CACX7605101P8) and a persona moral (EKU9003173C9) of the SAT's test RFCs.
  const receptor = (rfc: string, regimen: string, uso: string) =>
    withIngreso((r) => {
      r.receptor = { ...r.receptor, rfc, regimenFiscalReceptor: regimen, usoCFDI: uso };
    });
  const fisica = 'CACX7605101P8';
  const moral = 'EKU9003173C9';

  it.each([
    ['salaried (605) with G03', fisica, '605', 'G03'],
    ['sin obligaciones (616) with G03', fisica, '616', 'G03'],
    ['persona moral with a personal deduction (D01)', moral, '601', 'D01'],
    ['persona física in 612 with nómina (CN01)', fisica, '612', 'CN01'],
  ])('rejects %s', (_name, rfc, regimen, uso) => {
    const issues = issuesOf(receptor(rfc, regimen, uso));
    expect(issues).toEqual([
      expect.objectContaining({
        rule: 'CFDI40161',
        path: '/cfdi:Comprobante/cfdi:Receptor/@UsoCFDI',
        message: expect.stringMatching(/^CFDI40161: /),
      }),
    ]);
  });

  it.each([
    ['612 with G03', fisica, '612', 'G03'],
    ['605 with D10 (colegiaturas)', fisica, '605', 'D10'],
    ['605 with S01', fisica, '605', 'S01'],
    ['616 with G02', fisica, '616', 'G02'],
    ['a persona moral in 601 with G03', moral, '601', 'G03'],
  ])('accepts %s', (_name, rfc, regimen, uso) => {
    expect(issuesOf(receptor(rfc, regimen, uso))).toEqual([]);
  });

  it('chooses the first allowed use: an Egreso gets G02 where allowed, else S01', () => {
    expect(usoCfdiFor(['G02', 'S01'], '612', 'fisica')).toBe('G02');
    expect(usoCfdiFor(['G02', 'S01'], '605', 'fisica')).toBe('S01');
    expect(usoCfdiFor(['G02', 'S01'], '601', 'moral')).toBe('G02');
    expect(usoCfdiFor(['CN01'], '601', 'moral')).toBeUndefined();
    expect(usoCfdiAllowed('constructor', '601', 'moral')).toBe(false);
  });
});

describe('generic RFCs (CFDI40146, CFDI40149)', () => {
  it('rejects XEXX010101000 (a foreign customer) with a DomicilioFiscalReceptor other than LugarExpedicion', () => {
    const foreign = (cp: string) =>
      withIngreso((r) => {
        r.receptor = {
          rfc: 'XEXX010101000',
          nombre: 'ACME INC',
          domicilioFiscalReceptor: cp,
          regimenFiscalReceptor: '616',
          usoCFDI: 'S01',
        };
      });
    expect(issuesOf(foreign('36257'))).toEqual([
      expect.objectContaining({
        rule: 'CFDI40149',
        path: '/cfdi:Comprobante/cfdi:Receptor/@DomicilioFiscalReceptor',
      }),
    ]);
    expect(issuesOf(foreign(ingresoRequest().lugarExpedicion))).toEqual([]);
  });

  it('rejects a real RFC named PUBLICO EN GENERAL', () => {
    for (const nombre of ['PUBLICO EN GENERAL', 'publico  en general'])
      expect(issuesOf(withIngreso((r) => (r.receptor.nombre = nombre)))).toEqual([
        expect.objectContaining({ rule: 'CFDI40146', path: '/cfdi:Comprobante/cfdi:Receptor/@Nombre' }),
      ]);
  });
});

describe('text that prints blank', () => {
  it('refuses a descripcion or a name made only of NBSP, zero-width or other invisible characters', () => {
    for (const blank of ['\u00a0', '\u200b', '\u00a0\u200b\u2060\ufeff', '\u3000', '\u00ad', '\u3164'])
      expect(isBlank(blank)).toBe(true);
    for (const visible of ['a', '\u00a0a\u200b', 'Venta', '.', 'ñ']) expect(isBlank(visible)).toBe(false);
    const request = ingresoRequest();
    const blank = { ...request, conceptos: request.conceptos!.map((c) => ({ ...c, descripcion: '\u00a0\u200b' })) };
    expect(() => validateInvoiceRequest(blank)).toThrow(/descripcion: has no visible character/);
    const named = { ...request, receptor: { ...request.receptor, nombre: '\u2060' } };
    expect(() => validateInvoiceRequest(named)).toThrow(/nombre: has no visible character/);
  });
});
