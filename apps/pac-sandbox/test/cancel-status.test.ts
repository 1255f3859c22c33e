import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PacError, type PacClient } from '@timbra/cfdi-core';
import { withConcepto } from '@timbra/test-support';
import { emisor, finkokClient, freshInvoice, startSandbox, swClient, type RunningSandbox } from './helpers.ts';

let run: RunningSandbox;
const clients: Record<string, PacClient> = {};

beforeAll(async () => {
  run = await startSandbox();
  clients.sw = swClient(run);
  clients.finkok = finkokClient(run);
});
afterAll(() => run.stop());

const csd = { cer: emisor.cer, key: emisor.key, password: emisor.password };

describe.each(['sw', 'finkok'])('cancellation and status through the %s client', (which) => {
  it('cancels without acceptance (small total): 201, then Cancelado; again: 202', async () => {
    const client = clients[which]!;
    const frozen = freshInvoice();
    const { uuid } = await client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
    const query = { uuid, rfcEmisor: 'EKU9003173C9', rfcReceptor: 'CACX7605101P8', total: frozen.total };
    expect(await client.status(query)).toMatchObject({
      estado: 'Vigente',
      esCancelable: 'Cancelable sin aceptación',
      estatusCancelacion: '',
    });
    const cancel = await client.cancel({ uuid, rfcEmisor: 'EKU9003173C9', motivo: '02', csd });
    expect(cancel).toMatchObject({ uuid, uuidCode: '201' });
    expect(cancel.acuse).toContain(uuid);
    // The acuse's Fecha is Mexico City's local time, as the SAT writes it (UTC−6, no DST since 2022).
    const fecha = /Fecha="([^"]+)"/.exec(cancel.acuse ?? '')![1]!;
    const asMexicoCity = Date.parse(`${fecha}-06:00`);
    expect(Math.abs(asMexicoCity - Date.now())).toBeLessThan(60_000);
    expect(await client.status(query)).toMatchObject({
      estado: 'Cancelado',
      estatusCancelacion: 'Cancelado sin aceptación',
    });
    expect((await client.cancel({ uuid, rfcEmisor: 'EKU9003173C9', motivo: '02', csd })).uuidCode).toBe('202');
  });

  it('needs acceptance above the threshold: En proceso, then Cancelado con aceptación', async () => {
    const client = clients[which]!;
    const frozen = freshInvoice(withConcepto('9000.00'));
    const { uuid } = await client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
    const query = { uuid, rfcEmisor: 'EKU9003173C9', rfcReceptor: 'CACX7605101P8', total: frozen.total };
    expect((await client.cancel({ uuid, rfcEmisor: 'EKU9003173C9', motivo: '02', csd })).uuidCode).toBe('201');
    expect(await client.status(query)).toMatchObject({
      estado: 'Vigente',
      esCancelable: 'Cancelable con aceptación',
      estatusCancelacion: 'En proceso',
    });
    await new Promise((r) => setTimeout(r, 400));
    expect(await client.status(query)).toMatchObject({
      estado: 'Cancelado',
      estatusCancelacion: 'Cancelado con aceptación',
    });
  });

  it('a receptor who rejects: En proceso, then Solicitud rechazada (still Vigente); a new request may follow', async () => {
    const client = clients[which]!;
    const instance = which === 'sw' ? 'primary' : 'backup';
    await run.admin('faults', { rejectCancellationBy: ['CACX7605101P8'] }, instance);
    try {
      const frozen = freshInvoice(withConcepto('9000.00'));
      const { uuid } = await client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
      const query = { uuid, rfcEmisor: 'EKU9003173C9', rfcReceptor: 'CACX7605101P8', total: frozen.total };
      expect((await client.cancel({ uuid, rfcEmisor: 'EKU9003173C9', motivo: '02', csd })).uuidCode).toBe('201');
      expect((await client.status(query)).estatusCancelacion).toBe('En proceso');
      await new Promise((r) => setTimeout(r, 400));
      expect(await client.status(query)).toMatchObject({
        estado: 'Vigente',
        estatusCancelacion: 'Solicitud rechazada',
      });
      await run.admin('faults', { reset: true }, instance);
      expect((await client.cancel({ uuid, rfcEmisor: 'EKU9003173C9', motivo: '02', csd })).uuidCode).toBe('201');
    } finally {
      await run.admin('faults', { reset: true }, instance);
    }
  });

  it('answers 205 for an unknown UUID, No Encontrado for its status, and refuses motivo 01 without a substitute', async () => {
    const client = clients[which]!;
    const unknown = '11111111-2222-4333-8444-555555555555';
    expect((await client.cancel({ uuid: unknown, rfcEmisor: 'EKU9003173C9', motivo: '02', csd })).uuidCode).toBe('205');
    expect(
      (await client.status({ uuid: unknown, rfcEmisor: 'EKU9003173C9', rfcReceptor: 'CACX7605101P8', total: '1.00' }))
        .estado,
    ).toBe('No Encontrado');
    const frozen = freshInvoice();
    const { uuid } = await client.stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
    await expect(client.cancel({ uuid, rfcEmisor: 'EKU9003173C9', motivo: '01', csd })).rejects.toBeInstanceOf(
      PacError,
    );
    const replacement = freshInvoice();
    const { uuid: sustituto } = await client.stamp(replacement.xml, { idempotencyKey: replacement.stampKey });
    expect(
      (await client.cancel({ uuid, rfcEmisor: 'EKU9003173C9', motivo: '01', folioSustitucion: sustituto, csd }))
        .uuidCode,
    ).toBe('201');
  });
});
