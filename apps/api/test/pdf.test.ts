/**
 * GET /v1/invoices/:id/pdf as a merchant's client uses it: a payment recorded through the API, its
 * frozen document stamped as the worker records a stamp (a TFD from a stand-in PAC certificate),
 * then the PDF fetched, read back with poppler's pdftotext, and named as the issue asks.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import got from 'got';
import { stampedXmlOf } from '@timbra/cfdi-core';
import { jsonPoster, KEYS, startApi, type TestApi, stampAsWorker } from './helpers.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const post = jsonPoster(() => api);
const get = (path: string, key = KEYS.pos) =>
  got.get(`${api.url}${path}`, {
    headers: { authorization: `Bearer ${key}` },
    throwHttpErrors: false,
    responseType: 'buffer',
  });
const dir = mkdtempSync(join(tmpdir(), 'timbra-api-pdf-'));
const pdfText = (pdf: Buffer) => {
  writeFileSync(join(dir, 'a.pdf'), pdf);
  execFileSync('pdftotext', ['-raw', join(dir, 'a.pdf'), join(dir, 'a.txt')]);
  return readFileSync(join(dir, 'a.txt'), 'utf8');
};

async function recordedInvoice(externalId: string): Promise<{ id: string; serieFolio: string }> {
  const { body } = (await post('/v1/payments', {
    externalId,
    amount: '1160.00',
    currency: 'MXN',
    occurredAt: new Date().toISOString(),
  })) as { body: { invoices: { id: string; serieFolio: string }[] } };
  return body.invoices[0]!;
}

const stamp = (invoiceId: string, uuid: string) => stampAsWorker(api.prisma, invoiceId, uuid);

describe('GET /v1/invoices/:id/pdf', () => {
  it('serves the printed representation of a stamped invoice, named <serie>-<folio>-<UUID>.pdf', async () => {
    const invoice = await recordedInvoice('PDF-1');
    const pending = await get(`/v1/invoices/${invoice.id}/pdf`);
    expect(pending.statusCode).toBe(409);
    expect(JSON.parse(pending.body.toString())).toMatchObject({ error: { code: 'not_stamped' } });

    const uuid = 'B1C2D3E4-F5A6-4B7C-8D9E-0F1A2B3C4D5E';
    await stamp(invoice.id, uuid);
    const res = await get(`/v1/invoices/${invoice.id}/pdf`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/pdf');
    expect(res.headers['content-disposition']).toBe(`inline; filename="${invoice.serieFolio}-${uuid}.pdf"`);
    expect(res.body.subarray(0, 5).toString()).toBe('%PDF-');
    const text = pdfText(res.body);
    expect(text).toContain(uuid);
    expect(text).toContain(`Serie-folio ${invoice.serieFolio}`);
    expect(text).toContain('MIL CIENTO SESENTA PESOS 00/100 M.N.');
    expect(text).not.toContain('CANCELADO');
    // The same bytes every time it is asked for.
    expect((await get(`/v1/invoices/${invoice.id}/pdf`)).body.equals(res.body)).toBe(true);

    await api.prisma.invoice.update({ where: { id: invoice.id }, data: { status: 'cancel_requested' } });
    await api.prisma.invoice.update({ where: { id: invoice.id }, data: { status: 'cancelled' } });
    expect(pdfText((await get(`/v1/invoices/${invoice.id}/pdf`)).body)).toContain('CANCELADO');
  });

  it('GET /zip: the stamped XML and the PDF in one ZIP, named after the document, as unzip reads it', async () => {
    const invoice = await recordedInvoice('ZIP-1');
    expect((await get(`/v1/invoices/${invoice.id}/zip`)).statusCode).toBe(409);
    const uuid = 'C1C2D3E4-F5A6-4B7C-8D9E-0F1A2B3C4D5E';
    await stamp(invoice.id, uuid);
    const res = await get(`/v1/invoices/${invoice.id}/zip`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/zip');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="${invoice.serieFolio}-${uuid}.zip"`);
    const zip = join(dir, 'a.zip');
    writeFileSync(zip, res.body);
    // Info-ZIP's unzip (Debian's), not the library that wrote it: test the archive, then read each file.
    execFileSync('unzip', ['-tq', zip]);
    const names = execFileSync('zipinfo', ['-1', zip], { encoding: 'utf8' }).trim().split('\n');
    expect(names).toEqual([`${invoice.serieFolio}-${uuid}.xml`, `${invoice.serieFolio}-${uuid}.pdf`]);
    const xml = execFileSync('unzip', ['-p', zip, names[0]!], { encoding: 'utf8' });
    expect(xml).toBe(stampedXmlOf(await api.prisma.invoice.findUniqueOrThrow({ where: { id: invoice.id } })));
    const pdf = execFileSync('unzip', ['-p', zip, names[1]!]);
    expect(pdf.equals((await get(`/v1/invoices/${invoice.id}/pdf`)).body)).toBe(true);
    // Deterministic like the PDF: the same bytes every time.
    expect((await get(`/v1/invoices/${invoice.id}/zip`)).body.equals(res.body)).toBe(true);
  });

  it('needs a key with the read scope', async () => {
    const invoice = await recordedInvoice('PDF-2');
    expect((await got.get(`${api.url}/v1/invoices/${invoice.id}/pdf`, { throwHttpErrors: false })).statusCode).toBe(
      401,
    );
  });
});
