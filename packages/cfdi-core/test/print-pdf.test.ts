/**
 * The representación impresa, read back as a person and a phone would: its text extracted by
 * poppler's pdftotext, its pages rendered by pdftoppm, the QR decoded from the image (jsqr) to the
 * exact verification URL, and the page compared with a golden image reviewed by eye
 * (test/fixtures/print/, one per kind; `UPDATE_GOLDEN=1` rewrites them — look at each before committing).
 * The QR and the golden comparison run in a plain Node process (helpers/pixels.mjs: ten times faster
 * than inside jest).
 */
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { SAT_DIR } from '@timbra/test-support';
import { dejavuFonts, readInvoiceLogo } from '@timbra/cfdi-node';
import { freezeComprobante, insertTfd } from '../src/index.ts';
import { renderCfdiPdf } from '../src/print/pdf.ts';
import { printableCfdi } from '../src/print/printable.ts';
import { egresoRequest, pagoRequest, publicoGeneralRequest } from './helpers/requests.ts';
import { loadTestCsd } from './helpers/sat.ts';
import { tfdFor } from './helpers/stamp.ts';

const pixelsScript = new URL('helpers/pixels.mjs', import.meta.url).pathname;
/** helpers/pixels.mjs's answer for `args`. */
const pixels = <T>(...args: string[]): T =>
  JSON.parse(execFileSync(process.execPath, [pixelsScript, ...args], { encoding: 'utf8' })) as T;
const golden = (kind: string) => new URL(`fixtures/print/${kind}-page-1.png`, import.meta.url).pathname;
const emisor = loadTestCsd('EKU9003173C9');
const fonts = dejavuFonts();
/** A document of each other kind, frozen with the test CSD and stamped with a stand-in TFD. */
const stampedOf = (request: Parameters<typeof freezeComprobante>[0]) => {
  const frozen = freezeComprobante(request, emisor);
  return insertTfd(frozen.xml, tfdFor(frozen.sello));
};
const KINDS = [['ingreso-real'], ['egreso'], ['pago'], ['global']];
const xmlOf = (kind: string): string =>
  kind === 'ingreso-real'
    ? realXml
    : stampedOf(kind === 'egreso' ? egresoRequest() : kind === 'pago' ? pagoRequest() : publicoGeneralRequest());
const realXml = readFileSync(join(SAT_DIR, 'samples', 'cfdi40-real.xml'), 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'timbra-pdf-'));

function poppler(tool: 'pdftotext' | 'pdftoppm', args: string[]): void {
  if (!existsSync(`/usr/bin/${tool}`))
    throw new Error(`${tool} is missing: apt-get install poppler-utils (.ci/run installs it)`);
  execFileSync(tool, args, { stdio: 'ignore' });
}

/** The PDF's text: laid out as printed, or in content order (`raw`, which also reads rotated text). */
function text(pdf: Buffer, name: string, mode: 'layout' | 'raw' = 'layout'): string {
  writeFileSync(join(dir, `${name}.pdf`), pdf);
  poppler('pdftotext', [`-${mode}`, join(dir, `${name}.pdf`), join(dir, `${name}.txt`)]);
  return readFileSync(join(dir, `${name}.txt`), 'utf8');
}

/** The first page rendered at `dpi`: the PNG's path. */
function pageFile(pdf: Buffer, name: string, dpi: number): string {
  writeFileSync(join(dir, `${name}.pdf`), pdf);
  poppler('pdftoppm', ['-r', String(dpi), '-png', '-f', '1', '-l', '1', join(dir, `${name}.pdf`), join(dir, name)]);
  return join(dir, `${name}-1.png`);
}
const page = (pdf: Buffer, name: string, dpi: number): PNG => PNG.sync.read(readFileSync(pageFile(pdf, name, dpi)));

describe('the printable model of a stamped CFDI', () => {
  it('reads everything the SAT asks to print from the SAT’s real CFDI, with the catalogues’ names', () => {
    const model = printableCfdi(realXml);
    expect(model).toMatchObject({
      tipoDeComprobante: { key: 'I', name: 'Ingreso' },
      fecha: '2022-01-12T12:39:08',
      lugarExpedicion: '54680',
      formaPago: { key: '01', name: 'Efectivo' },
      metodoPago: { key: 'PUE' },
      moneda: 'MXN',
      exportacion: { key: '01' },
      subTotal: '396.00',
      total: '459.36',
      totalEnLetra: 'CUATROCIENTOS CINCUENTA Y NUEVE PESOS 36/100 M.N.',
      emisor: { rfc: 'CSM190311AH6', regimenFiscal: { key: '626' } },
      receptor: { rfc: 'MCI7306249Y1', domicilioFiscal: '54700', usoCfdi: { key: 'G03' } },
      totalImpuestosTrasladados: '63.36',
      timbre: { uuid: '04BF2854-FE7D-4377-9196-71248F060ABB', rfcProvCertif: 'SAT970701NN3' },
    });
    expect(model.conceptos).toEqual([
      expect.objectContaining({
        claveProdServ: '95121514',
        cantidad: '1200.00',
        claveUnidad: 'H87',
        valorUnitario: '0.33',
        importe: '396.00',
        traslados: [
          expect.objectContaining({ impuesto: { key: '002', name: 'IVA' }, tasaOCuota: '0.160000', importe: '63.36' }),
        ],
      }),
    ]);
    expect(model.timbre.cadenaOriginalTfd).toMatch(
      /^\|\|1\.1\|04BF2854-FE7D-4377-9196-71248F060ABB\|2022-01-12T12:39:34\|SAT970701NN3\|/,
    );
    expect(model.verificationUrl).toBe(
      `https://verificacfdi.facturaelectronica.sat.gob.mx/default.aspx?id=04BF2854-FE7D-4377-9196-71248F060ABB&re=CSM190311AH6&rr=MCI7306249Y1&tt=459.36&fe=${model.timbre.sello.slice(-8)}`,
    );
  });
});

describe('the PDF (representación impresa)', () => {
  it('is the same bytes for the same document', async () => {
    const model = printableCfdi(realXml);
    expect((await renderCfdiPdf(model, { fonts })).equals(await renderCfdiPdf(model, { fonts }))).toBe(true);
  });

  it('holds, as text, the parties, the UUID, the totals, the amount in words, the sellos and the TFD’s cadena', async () => {
    const model = printableCfdi(realXml);
    const found = text(await renderCfdiPdf(model, { fonts }), 'ingreso');
    const flat = found.replace(/\s+/g, '');
    for (const expected of [
      'CREATIVITY AND SOMETHING MORE',
      'CSM190311AH6',
      'MUNICIPIO DE CUAUTITLAN IZCALLI',
      'MCI7306249Y1',
      'Folio fiscal (UUID) 04BF2854-FE7D-4377-9196-71248F060ABB',
      'Fecha de certificación 2022-01-12T12:39:34',
      '626 – Régimen Simplificado de Confianza',
      'G03 – Gastos en general',
      'PUE – Pago en una sola exhibición',
      'BOLETOS USO DE VIAS Y AREAS PUBLICAS',
      '459.36 MXN',
      'Importe con letra: CUATROCIENTOS CINCUENTA Y NUEVE PESOS 36/100 M.N.',
      'No. de certificado del SAT: 00001000000504465028',
    ])
      expect(found).toContain(expected);
    // Long values wrap across lines: compared without the breaks.
    for (const long of [model.timbre.sello, model.timbre.selloSat, model.timbre.cadenaOriginalTfd])
      expect(flat).toContain(long.replace(/\s+/g, ''));
    expect(text(await renderCfdiPdf(model, { fonts }), 'plain', 'raw')).not.toContain('CANCELADO');
    expect(text(await renderCfdiPdf(model, { fonts, cancelled: true }), 'cancelled', 'raw')).toContain('CANCELADO');
  });

  it.each(KINDS)('%s: carries a QR that a phone reads back as the exact SAT verification URL', async (kind) => {
    const model = printableCfdi(xmlOf(kind));
    const image = pageFile(await renderCfdiPdf(model, { fonts }), `qr-${kind}`, 150);
    expect(pixels<{ data: string | null }>('qr', image).data).toBe(model.verificationUrl);
  });

  it('prints what each kind adds: an Egreso its relation, a Pago its payments, a global its period', async () => {
    const egreso = text(await renderCfdiPdf(printableCfdi(xmlOf('egreso')), { fonts }), 'egreso');
    expect(egreso).toContain('Nota de crédito (Egreso)');
    expect(egreso).toMatch(
      /CFDI relacionados \(01 – Nota de crédito de los documentos relacionados\): 6F1D3C7E-2B4A-4C8D-9E0F-1A2B3C4D5E6F/,
    );
    const pago = printableCfdi(xmlOf('pago'));
    const pagoText = text(await renderCfdiPdf(pago, { fonts }), 'pago');
    expect(pagoText).toContain('Recibo electrónico de pago (Pago)');
    expect(pagoText).toContain('Documento relacionado');
    expect(pagoText).toContain('6F1D3C7E-2B4A-4C8D-9E0F-1A2B3C4D5E6F');
    expect(pago.montoTotalPagos).toBe('5800.00');
    expect(pagoText).toMatch(/Total de los pagos\s+5,800\.00 MXN/);
    // Once left out: the payer's operation number and the payment's taxes (ImpuestosP).
    expect(pagoText).toContain('Número de operación: SPEI-2026113000042');
    expect(pagoText).toContain('Impuesto trasladado 002 – IVA: base 5,000.00 · Tasa 0.160000 · importe 800.00');
    expect(pago.totalEnLetra).toMatch(/ PESOS \d{2}\/100 M\.N\.$/);
    const global = text(await renderCfdiPdf(printableCfdi(xmlOf('global')), { fonts }), 'global');
    expect(global).toMatch(/Información global: Periodicidad \d{2} – \S+/);
    expect(global).toContain('XAXX010101000');
  });

  it.each(KINDS)('%s: looks as reviewed (the first page matches its golden image)', async (kind) => {
    const image = pageFile(await renderCfdiPdf(printableCfdi(xmlOf(kind)), { fonts }), `golden-${kind}`, 80);
    if (process.env.UPDATE_GOLDEN === '1') copyFileSync(image, golden(kind));
    expect(differenceFrom(image, golden(kind))).toBeLessThan(0.005);
  });

  it('the golden comparison can fail: a cancelled page is not the page', async () => {
    const image = pageFile(
      await renderCfdiPdf(printableCfdi(realXml), { fonts, cancelled: true }),
      'golden-cancelled',
      80,
    );
    expect(differenceFrom(image, golden('ingreso-real'))).toBeGreaterThan(0.02);
  });
});

/** The share of pixels clearly different from the golden image (anti-aliasing may differ by a few levels between poppler builds). */
function differenceFrom(image: string, goldenPath: string): number {
  const d = pixels<{ width: number; height: number; goldenWidth: number; goldenHeight: number; difference: number }>(
    'diff',
    image,
    goldenPath,
  );
  expect([d.width, d.height]).toEqual([d.goldenWidth, d.goldenHeight]);
  return d.difference;
}

describe('the merchant’s logo (INVOICE_LOGO_FILE)', () => {
  // A solid logo of a colour nothing else on the page has: where it lands is unmistakable.
  const logoPng = (() => {
    const png = new PNG({ width: 160, height: 100 });
    for (let i = 0; i < png.data.length; i += 4) png.data.set([0, 160, 60, 255], i);
    return PNG.sync.write(png);
  })();

  it('is drawn top left, above the merchant’s name, and nowhere without one', async () => {
    const stamped = stampedOf(egresoRequest());
    const green = (image: PNG, x0: number, y0: number, x1: number, y1: number) => {
      let n = 0;
      for (let y = y0; y < y1; y++)
        for (let x = x0; x < x1; x++) {
          const i = (y * image.width + x) * 4;
          if (image.data[i]! < 40 && image.data[i + 1]! > 120 && image.data[i + 2]! < 100) n++;
        }
      return n;
    };
    const withLogo = page(await renderCfdiPdf(printableCfdi(stamped), { fonts, logo: logoPng }), 'logo', 72);
    const without = page(await renderCfdiPdf(printableCfdi(stamped), { fonts }), 'no-logo', 72);
    // The top-left quarter of the header (72 dpi: one point a pixel).
    expect(green(withLogo, 0, 0, 200, 120)).toBeGreaterThan(60 * 40);
    expect(green(without, 0, 0, without.width, without.height)).toBe(0);
    // The same logo, the same bytes: still deterministic.
    const again = await renderCfdiPdf(printableCfdi(stamped), { fonts, logo: logoPng });
    expect(again.equals(await renderCfdiPdf(printableCfdi(stamped), { fonts, logo: logoPng }))).toBe(true);
  });

  it('is read once at start-up: a PNG or JPEG under 1 MB, anything else a configuration problem', () => {
    const file = (name: string, bytes: Buffer) => {
      writeFileSync(join(dir, name), bytes);
      return join(dir, name);
    };
    expect(readInvoiceLogo(file('logo.png', logoPng))).toEqual({ logo: logoPng });
    expect(readInvoiceLogo(file('logo.jpg', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0])))).toHaveProperty('logo');
    expect(readInvoiceLogo(file('logo.svg', Buffer.from('<svg/>')))).toEqual({
      problem: `${join(dir, 'logo.svg')} is not a PNG or JPEG image`,
    });
    expect(readInvoiceLogo(join(dir, 'missing.png'))).toEqual({
      problem: `cannot read ${join(dir, 'missing.png')} (ENOENT)`,
    });
    const big = Buffer.concat([logoPng.subarray(0, 8), Buffer.alloc(1024 * 1024)]);
    expect(readInvoiceLogo(file('big.png', big))).toEqual({
      problem: `${join(dir, 'big.png')} is over 1 MB: every PDF embeds it`,
    });
  });
});

describe('the merchant’s colour (INVOICE_COLOR, an organization’s branding.color)', () => {
  it('sets its name and the headings’ text and rules, and nothing is that colour without it', async () => {
    const stamped = stampedOf(egresoRequest());
    // #0b6e4f: a green nothing else on the page is (anti-aliased edges come near it: a loose match).
    const branded = (image: PNG, y0: number, y1: number) => {
      let n = 0;
      for (let y = y0; y < y1; y++)
        for (let x = 0; x < image.width; x++) {
          const i = (y * image.width + x) * 4;
          const [r, g, b] = [image.data[i]!, image.data[i + 1]!, image.data[i + 2]!];
          if (Math.abs(r - 0x0b) < 30 && Math.abs(g - 0x6e) < 30 && Math.abs(b - 0x4f) < 30) n++;
        }
      return n;
    };
    const coloured = page(await renderCfdiPdf(printableCfdi(stamped), { fonts, color: '#0b6e4f' }), 'colour', 72);
    const plain = page(await renderCfdiPdf(printableCfdi(stamped), { fonts }), 'no-colour', 72);
    // The merchant's name (the header's first 40 points) and the rest of the page (the headings).
    expect(branded(coloured, 0, 60)).toBeGreaterThan(50);
    expect(branded(coloured, 60, coloured.height)).toBeGreaterThan(500);
    expect(branded(plain, 0, plain.height)).toBe(0);
    // Still deterministic.
    const again = await renderCfdiPdf(printableCfdi(stamped), { fonts, color: '#0b6e4f' });
    expect(again.equals(await renderCfdiPdf(printableCfdi(stamped), { fonts, color: '#0b6e4f' }))).toBe(true);
  });
});
