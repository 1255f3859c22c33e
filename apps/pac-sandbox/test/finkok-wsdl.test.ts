/**
 * The sandbox's Finkok endpoints driven by a client generated from their WSDL — the Node `soap`
 * package, as a PHP SoapClient, Python zeep or a .NET proxy would be — with nothing hand-written
 * about the protocol: stamp, the same document again (307), and cancel. The answers are checked
 * against Finkok's element order (AcuseRecepcionCFDI, Incidencia).
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { createClientAsync, type Client } from 'soap';
import { emisor, FINKOK, freshInvoice, startSandbox, type RunningSandbox } from './helpers.ts';

let run: RunningSandbox;
let stampClient: Client;
let cancelClient: Client;
beforeAll(async () => {
  run = await startSandbox();
  stampClient = await createClientAsync(`${run.url('backup')}/servicios/soap/stamp.wsdl`);
  cancelClient = await createClientAsync(`${run.url('backup')}/servicios/soap/cancel?wsdl`);
});
afterAll(() => run.stop());

interface AcuseRecepcionCFDI {
  xml?: string;
  UUID?: string;
  CodEstatus?: string;
  SatSeal?: string;
  NoCertificadoSAT?: string;
  Incidencias?: { Incidencia?: Record<string, string>[] | Record<string, string> };
}

const account = { username: FINKOK.username, password: FINKOK.password };

/** An operation of a client generated from a WSDL (its methods are made at run time: typed here). */
function call<T>(client: Client, operation: string, args: object): Promise<T> {
  const method = (client as unknown as Record<string, (a: object) => Promise<unknown[]>>)[`${operation}Async`]!;
  return method.call(client, args).then(([result]) => result as T);
}
const incidenciasOf = (acuse: AcuseRecepcionCFDI) => {
  const i = acuse.Incidencias?.Incidencia;
  return i === undefined ? [] : Array.isArray(i) ? i : [i];
};

describe('Finkok WSDLs', () => {
  it('are served at .wsdl and ?wsdl, with the sandbox as the address; not without', async () => {
    for (const path of ['/servicios/soap/stamp.wsdl', '/servicios/soap/stamp?wsdl', '/servicios/soap/cancel.wsdl']) {
      const res = await got.get(`${run.url('backup')}${path}`);
      expect(res.headers['content-type']).toMatch(/text\/xml/);
      expect(res.body).toContain(
        `location="${run.url('backup')}/servicios/soap/${path.includes('cancel') ? 'cancel' : 'stamp'}"`,
      );
    }
    expect((await got.get(`${run.url('backup')}/servicios/soap/stamp`, { throwHttpErrors: false })).statusCode).toBe(
      404,
    );
  });

  it('a client generated from them stamps, gets 307 with the same UUID for the same document, and cancels', async () => {
    const frozen = freshInvoice();
    const xml = Buffer.from(frozen.xml).toString('base64');
    const stamped = await call<{ stampResult: AcuseRecepcionCFDI }>(stampClient, 'stamp', { xml, ...account });
    const first = stamped.stampResult;
    expect(first.UUID).toMatch(/^[0-9A-F-]{36}$/i);
    expect(first.CodEstatus).toBe('Comprobante timbrado satisfactoriamente');
    expect(first.xml).toContain(`UUID="${first.UUID}"`);
    expect(first.NoCertificadoSAT).toMatch(/^\d{20}$/);

    // The same document again: the PAC's 307 (timbre previo), naming the first UUID.
    const again = await call<{ stampResult: AcuseRecepcionCFDI }>(stampClient, 'stamp', { xml, ...account });
    const [incidencia] = incidenciasOf(again.stampResult);
    expect(incidencia).toMatchObject({ CodigoError: '307', Uuid: first.UUID, RfcEmisor: 'EKU9003173C9' });
    // Every field of an Incidencia, as Finkok's WSDL has them.
    expect(Object.keys(incidencia!)).toEqual([
      'IdIncidencia',
      'RfcEmisor',
      'Uuid',
      'CodigoError',
      'WorkProcessId',
      'MensajeIncidencia',
      'ExtraInfo',
      'NoCertificadoPac',
      'FechaRegistro',
    ]);
    const recovered = await call<{ stampedResult: AcuseRecepcionCFDI }>(stampClient, 'stamped', { xml, ...account });
    expect(recovered.stampedResult.UUID).toBe(first.UUID);

    // Cancelled with the CSD as Finkok takes it: the certificate as PEM, the key encrypted with the account password.
    const cer = new X509Certificate(emisor.cer).toString();
    const key = createPrivateKey({ key: emisor.key, format: 'der', type: 'pkcs8', passphrase: emisor.password }).export(
      {
        format: 'pem',
        type: 'pkcs8',
        cipher: 'aes-256-cbc',
        passphrase: FINKOK.password,
      },
    );
    const cancelled = await call<{
      cancelResult: { Folios?: { Folio?: { EstatusUUID?: string; UUID?: string }[] }; Acuse?: string };
    }>(cancelClient, 'cancel', {
      UUIDS: { UUID: { attributes: { UUID: first.UUID, Motivo: '02', FolioSustitucion: '' } } },
      ...account,
      taxpayer_id: 'EKU9003173C9',
      cer: Buffer.from(cer).toString('base64'),
      key: Buffer.from(key).toString('base64'),
      store_pending: false,
    });
    expect(cancelled.cancelResult.Folios?.Folio).toEqual([
      expect.objectContaining({ EstatusUUID: '201', UUID: first.UUID }),
    ]);
    expect(cancelled.cancelResult.Acuse).toContain(first.UUID!);
  });

  it("answers an AcuseRecepcionCFDI in Finkok's order: …SatSeal, Incidencias, NoCertificadoSAT", async () => {
    const frozen = freshInvoice();
    const envelope =
      '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:stamp="http://facturacion.finkok.com/stamp">' +
      `<soapenv:Body><stamp:stamp><stamp:xml>${Buffer.from(frozen.xml).toString('base64')}</stamp:xml>` +
      `<stamp:username>${FINKOK.username}</stamp:username><stamp:password>${FINKOK.password}</stamp:password></stamp:stamp></soapenv:Body></soapenv:Envelope>`;
    const res = await got.post(`${run.url('backup')}/servicios/soap/stamp`, {
      body: envelope,
      headers: { 'content-type': 'text/xml' },
    });
    const order = [...res.body.matchAll(/<s0:(\w+)[ >/]/g)].map((m) => m[1]);
    expect(order).toEqual(['xml', 'UUID', 'Fecha', 'CodEstatus', 'SatSeal', 'Incidencias', 'NoCertificadoSAT']);
  });
});
