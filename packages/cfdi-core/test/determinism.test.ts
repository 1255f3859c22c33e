/** @clock the SAT's own test certificate, valid until 2027-05-18 */
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freezeComprobante, loadCsd, refreshFecha, stampKeyFor, type InvoiceRequestInput } from '../src/index.ts';
import { egresoRequest, ingresoRequest, pagoRequest } from './helpers/requests.ts';
import { loadTestCsd, SAT_DIR, satTestCsdFiles } from './helpers/sat.ts';

const csd = loadTestCsd('EKU9003173C9');
// The freeze CLI is @timbra/cfdi-node's (its Node adapter); it freezes with this package.
const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '../../cfdi-node');

type Mutable = InvoiceRequestInput & Record<string, unknown>;
const clone = (): Mutable => structuredClone(ingresoRequest());

describe('determinism', () => {
  it('freezes the same request to the same bytes, twice in one process', () => {
    const a = freezeComprobante(ingresoRequest(), csd);
    const b = freezeComprobante(ingresoRequest(), csd);
    expect(b.xml).toBe(a.xml);
    expect(b.sello).toBe(a.sello);
    expect(b.stampKey).toBe(a.stampKey);
  });

  it('freezes the same request to the same bytes in another process (the CLI)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'timbra-det-'));
    try {
      const file = join(dir, 'request.json');
      writeFileSync(file, JSON.stringify(ingresoRequest()));
      const run = () =>
        JSON.parse(
          execFileSync('npx', ['tsx', '--conditions=@timbra/source', 'src/cli/freeze-cli.ts', file, '--json'], {
            cwd: packageDir,
            encoding: 'utf8',
            env: { ...process.env, SAT_DIR },
          }),
        ) as { xml: string; stampKey: string };
      const first = run();
      const second = run();
      // The CLI seals with the SAT's own test CSD from SAT_DIR (the request is dated inside its validity).
      const sat = satTestCsdFiles('EKU9003173C9');
      const inProcess = freezeComprobante(ingresoRequest(), loadCsd(sat.cer, sat.key, sat.password));
      expect(first.xml).toBe(inProcess.xml);
      expect(second.xml).toBe(inProcess.xml);
      expect(first.stampKey).toBe(inProcess.stampKey);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // Every field below enters the cadena original; changing it must change the document and its sello.
  const cadenaFields: [string, (r: Mutable) => void][] = [
    ['serie', (r) => (r.serie = 'B')],
    ['folio', (r) => (r.folio = '1025')],
    ['issuedAt (Fecha)', (r) => (r.issuedAt = '2026-11-29T18:30:16Z')],
    ['lugarExpedicion', (r) => (r.lugarExpedicion = '42502')],
    ['formaPago', (r) => (r.formaPago = '03')],
    ['emisor.nombre', (r) => ((r.emisor as { nombre: string }).nombre = 'ESCUELA KEMPER URGATES')],
    ['receptor.usoCFDI', (r) => ((r.receptor as { usoCFDI: string }).usoCFDI = 'G01')],
    [
      'receptor.domicilioFiscalReceptor',
      (r) => ((r.receptor as { domicilioFiscalReceptor: string }).domicilioFiscalReceptor = '36258'),
    ],
    [
      'concepto descripcion',
      (r) => ((r.conceptos as { descripcion: string }[])[0]!.descripcion = 'Colegiatura diciembre 2026'),
    ],
    ['concepto valorUnitario', (r) => ((r.conceptos as { valorUnitario: string }[])[0]!.valorUnitario = '4310.35')],
    ['concepto cantidad', (r) => ((r.conceptos as { cantidad: string }[])[1]!.cantidad = '4')],
    [
      'concepto tasa',
      (r) => ((r.conceptos as { traslados: { tasaOCuota: string }[] }[])[0]!.traslados[0]!.tasaOCuota = '0.080000'),
    ],
  ];

  it.each(cadenaFields)('changes cadena, sello and document when %s changes', (_name, mutate) => {
    const base = freezeComprobante(clone(), csd);
    const changed = clone();
    mutate(changed);
    const other = freezeComprobante(changed, csd);
    expect(other.cadenaOriginal).not.toBe(base.cadenaOriginal);
    expect(other.sello).not.toBe(base.sello);
    expect(other.xml).not.toBe(base.xml);
    expect(other.stampKey).toBe(base.stampKey);
  });

  it('changes only the stamp key when only the stamp-key source (sourceId) changes', () => {
    const base = freezeComprobante(clone(), csd);
    const changed = clone();
    changed.sourceId = 'pi_another_event';
    const other = freezeComprobante(changed, csd);
    expect(other.xml).toBe(base.xml);
    expect(other.stampKey).not.toBe(base.stampKey);
    expect(other.stampKey).toBe(stampKeyFor('EKU9003173C9', 'I', 'pi_another_event'));
  });

  it('derives stamp keys that are valid BullMQ job ids and SW customids', () => {
    const key = stampKeyFor('EKU9003173C9', 'E', 're_1:with:colons');
    expect(key).toMatch(/^E-[0-9a-f]{64}$/);
    expect(key.length).toBeLessThanOrEqual(100);
    expect(key).not.toContain(':');
    expect(Number.isInteger(Number(key))).toBe(false);
    expect(stampKeyFor('EKU9003173C9', 'I', 'x')).not.toBe(stampKeyFor('EKU9003173C9', 'E', 'x'));
    expect(stampKeyFor('EKU9003173C9', 'I', 'x')).not.toBe(stampKeyFor('CACX7605101P8', 'I', 'x'));
  });
});

describe('refreshFecha: the same document, a fresh Fecha', () => {
  it.each([
    ['an Ingreso', ingresoRequest],
    ['an Egreso', () => egresoRequest()],
    ['a Pago', () => pagoRequest()],
  ])('gives %s the bytes that freezing its request at the new instant gives', (_kind, request) => {
    const first = freezeComprobante({ ...request(), issuedAt: '2026-11-27T15:00:00Z' }, csd);
    const later = new Date('2026-11-30T16:30:05Z');
    const refreshed = refreshFecha(first.xml, csd, later);
    const frozenThen = freezeComprobante({ ...request(), issuedAt: later.toISOString() }, csd);
    expect(refreshed.xml).toBe(frozenThen.xml);
    expect(refreshed).toMatchObject({
      fecha: frozenThen.fecha,
      sello: frozenThen.sello,
      cadenaOriginal: frozenThen.cadenaOriginal,
      subTotal: frozenThen.subTotal,
      total: frozenThen.total,
    });
    expect(refreshed.xml).not.toBe(first.xml);
  });

  it('refuses a CSD of another emisor', () => {
    const first = freezeComprobante(ingresoRequest(), csd);
    expect(() => refreshFecha(first.xml, loadTestCsd('CACX7605101P8'), new Date())).toThrow(/not to the emisor/);
  });
});
