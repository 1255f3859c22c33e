/**
 * The SAT sandbox's Descarga Masiva and status service, driven by the maintained clients unchanged:
 * `@nodecfdi/sat-ws-descarga-masiva` (authenticate with the e.firma, query, verify, download, its
 * package readers) and `@nodecfdi/sat-estado-cfdi`. Only the transport is Timbra's (the libraries'
 * WebClient / ConsumerClient slots), over real HTTP to the running sandbox.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  CfdiPackageReader,
  DateTime,
  DateTimePeriod,
  DocumentStatus,
  DownloadType,
  FielRequestBuilder,
  MetadataPackageReader,
  QueryParameters,
  RequestType,
  SoapFaultError,
  Uuid,
  type Service,
  type VerifyResult,
} from '@nodecfdi/sat-ws-descarga-masiva';
import { DEFAULT_TIME_ZONE, formatFecha } from '@timbra/cfdi-core';
import { descargaService, EstadoCfdiClient, estadoConsumer, fielOf, PacHttp, type Efirma } from '@timbra/cfdi-node';
import { certificateVariant, testEfirmaFor, withConcepto } from '@timbra/test-support';
import { emisor, freshInvoice, startSandbox, swClient, type RunningSandbox } from './helpers.ts';

let run: RunningSandbox;
/**
 * The sandbox's clock: real while the documents are stamped, then held still at `heldAt` and moved
 * only by `ahead` as the tests verify, so a slow machine cannot skip a request's states.
 */
let heldAt: number | undefined;
let ahead = 0;
const efirma: Efirma = testEfirmaFor('EKU9003173C9', 'ESCUELA KEMPER URGATE');
const stamped: { uuid: string; xml: string; total: string }[] = [];
let cancelledUuid = '';
const closers: (() => void)[] = [];

function serviceFor(e: Efirma = efirma): Service {
  const { service, close } = descargaService(e, run.url(), { connectMs: 2_000, responseMs: 5_000 });
  closers.push(close);
  return service;
}

/** The last day (Mexico City time, as the SAT reads FechaInicial/FechaFinal) to ten minutes on. */
function today(): DateTimePeriod {
  const at = (ms: number) =>
    DateTime.create(formatFecha(new Date(ms), DEFAULT_TIME_ZONE).replace('T', ' '), DEFAULT_TIME_ZONE);
  return DateTimePeriod.create(at(Date.now() - 86_400_000), at(Date.now() + 600_000));
}

/** Verifies until the request is decided (the sandbox's clock 150 ms on each time), with each state seen. */
async function decided(service: Service, requestId: string): Promise<{ result: VerifyResult; seen: string[] }> {
  const seen: string[] = [];
  for (let i = 0; i < 100; i++) {
    const result = await service.verify(requestId);
    expect(result.getStatus().isAccepted()).toBe(true);
    const state = result.getStatusRequest().getEntryId();
    if (seen.at(-1) !== state) seen.push(state);
    if (!['Accepted', 'InProgress'].includes(state)) return { result, seen };
    ahead += 150;
  }
  throw new Error('the request was never decided');
}

async function packagesOf(service: Service, result: VerifyResult): Promise<string[]> {
  const contents: string[] = [];
  for (const id of result.getPackageIds()) {
    const download = await service.download(id);
    expect(download.getStatus().getCode()).toBe(5000);
    contents.push(Buffer.from(download.getPackageContent(), 'base64').toString('binary'));
  }
  return contents;
}

beforeAll(async () => {
  run = await startSandbox({
    now: () => new Date((heldAt ?? Date.now()) + ahead),
    descarga: { acceptMs: 200, processMs: 300, packageSize: 2 },
  });
  const sw = swClient(run);
  for (const total of ['100.00', '200.00', '300.00']) {
    const frozen = freshInvoice(withConcepto(total));
    const result = await sw.stamp(frozen.xml, { idempotencyKey: frozen.stampKey });
    stamped.push({ uuid: result.uuid, xml: result.stampedXml, total: frozen.total });
  }
  cancelledUuid = stamped[2]!.uuid;
  const csd = { cer: emisor.cer, key: emisor.key, password: emisor.password };
  await sw.cancel({ uuid: cancelledUuid, rfcEmisor: 'EKU9003173C9', motivo: '02', csd });
  heldAt = Date.now();
});
afterAll(async () => {
  for (const close of closers) close();
  await run.stop();
});

describe('Descarga Masiva through @nodecfdi/sat-ws-descarga-masiva', () => {
  it('metadata of issued CFDIs: accepted, in process, finished; two packages read by its reader', async () => {
    const service = serviceFor();
    const query = await service.query(
      QueryParameters.create(today(), new DownloadType('issued'), new RequestType('metadata')),
    );
    expect(query.getStatus().getCode()).toBe(5000);
    const { result, seen } = await decided(service, query.getRequestId());
    expect(seen).toEqual(['Accepted', 'InProgress', 'Finished']);
    expect(result.getCodeRequest().getValue()).toBe(5000);
    expect(result.getNumberCfdis()).toBe(3);
    // packageSize 2: three documents come in two packages.
    expect(result.countPackages()).toBe(2);
    const rows = new Map<string, Record<string, string>>();
    for (const content of await packagesOf(service, result)) {
      const reader = await MetadataPackageReader.createFromContents(content);
      for await (const item of reader.metadata()) rows.set(item.get('uuid'), item.all());
    }
    expect([...rows.keys()].sort()).toEqual(stamped.map((s) => s.uuid.toUpperCase()).sort());
    const first = rows.get(stamped[0]!.uuid.toUpperCase())!;
    expect(first).toMatchObject({
      rfcEmisor: 'EKU9003173C9',
      nombreEmisor: 'ESCUELA KEMPER URGATE',
      rfcReceptor: 'CACX7605101P8',
      rfcPac: 'SPR190613I52',
      monto: stamped[0]!.total,
      efectoComprobante: 'I',
      estatus: '1',
      fechaCancelacion: '',
    });
    expect(first.fechaEmision).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    const cancelled = rows.get(cancelledUuid.toUpperCase())!;
    expect(cancelled.estatus).toBe('0');
    expect(cancelled.fechaCancelacion).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  });

  it('CFDIs of a period: each XML byte for byte as stamped, read by its CFDI reader', async () => {
    const service = serviceFor();
    const params = QueryParameters.create(
      today(),
      new DownloadType('issued'),
      new RequestType('xml'),
    ).withDocumentStatus(new DocumentStatus('active'));
    const query = await service.query(params);
    expect(query.getStatus().getCode()).toBe(5000);
    const { result } = await decided(service, query.getRequestId());
    expect(result.getNumberCfdis()).toBe(2);
    const cfdis = new Map<string, string>();
    for (const content of await packagesOf(service, result)) {
      const reader = await CfdiPackageReader.createFromContents(content);
      for (const { uuid, content: xml } of await reader.cfdisToArray()) cfdis.set(uuid, xml);
    }
    expect(cfdis.size).toBe(2);
    for (const s of stamped.slice(0, 2)) expect(cfdis.get(s.uuid.toLowerCase())).toBe(s.xml);
    expect(cfdis.has(cancelledUuid.toLowerCase())).toBe(false);
  });

  it('one CFDI by its UUID (SolicitaDescargaFolio)', async () => {
    const service = serviceFor();
    const uuid = stamped[1]!.uuid;
    const query = await service.query(QueryParameters.create().withUuid(Uuid.create(uuid)));
    expect(query.getStatus().getCode()).toBe(5000);
    const { result } = await decided(service, query.getRequestId());
    expect(result.getNumberCfdis()).toBe(1);
    const [content] = await packagesOf(service, result);
    const [cfdi] = await (await CfdiPackageReader.createFromContents(content!)).cfdisToArray();
    expect(cfdi).toEqual({ uuid: uuid.toLowerCase(), content: stamped[1]!.xml });
  });

  it('the service limits: no data (5004), duplicated (5005), a package downloaded twice at most (5008)', async () => {
    const service = serviceFor();
    const lastYear = DateTimePeriod.create(
      DateTime.create('2025-01-01 00:00:00', DEFAULT_TIME_ZONE),
      DateTime.create('2025-01-31 23:59:59', DEFAULT_TIME_ZONE),
    );
    const empty = await service.query(QueryParameters.create(lastYear));
    const { result: none } = await decided(service, empty.getRequestId());
    expect(none.getStatusRequest().getEntryId()).toBe('Rejected');
    expect(none.getCodeRequest().getValue()).toBe(5004);
    expect(none.countPackages()).toBe(0);

    const again = await service.query(QueryParameters.create(lastYear));
    expect(again.getStatus().getCode()).toBe(5005);
    expect(again.getRequestId() ?? '').toBe('');

    const uuid = stamped[0]!.uuid;
    const query = await service.query(QueryParameters.create().withUuid(Uuid.create(uuid)));
    const { result } = await decided(service, query.getRequestId());
    const id = result.getPackageIds()[0]!;
    expect((await service.download(id)).getStatus().getCode()).toBe(5000);
    expect((await service.download(id)).getStatus().getCode()).toBe(5000);
    const third = await service.download(id);
    expect(third.getStatus().getCode()).toBe(5008);
    expect(third.getPackageSize()).toBe(0);
  });

  it("refuses a CSD, an e.firma it does not trust, and another taxpayer's package", async () => {
    const csd: Efirma = { cer: emisor.cer, key: emisor.key, password: emisor.password };
    await expect(serviceFor(csd).authenticate()).rejects.toBeInstanceOf(SoapFaultError);
    const untrusted = { ...efirma, cer: certificateVariant(efirma.cer, { by: 'other-ca' }) };
    await expect(serviceFor(untrusted).authenticate()).rejects.toBeInstanceOf(SoapFaultError);

    const owner = serviceFor();
    const query = await owner.query(QueryParameters.create().withUuid(Uuid.create(stamped[2]!.uuid)));
    const { result } = await decided(owner, query.getRequestId());
    const other = serviceFor(testEfirmaFor('CACX7605101P8', 'XOCHILT CASAS CHAVEZ'));
    // The receptor may ask for a CFDI it received by UUID, but not for the emisor's request or package.
    expect((await other.verify(query.getRequestId())).getStatus().getCode()).toBe(5004);
    expect((await other.download(result.getPackageIds()[0]!)).getStatus().getCode()).toBe(5007);
    // A token is its taxpayer's: requests signed by another e.firma with it are refused.
    other.setToken(owner.getToken());
    expect((await other.verify(query.getRequestId())).getStatus().getCode()).toBe(300);
  });

  it('refuses a signed request changed after signing (302), by its own canonical digest', async () => {
    const service = serviceFor();
    const token = await service.obtainCurrentToken();
    const signed = new FielRequestBuilder(fielOf(efirma)).query(
      QueryParameters.create(today(), new DownloadType('issued'), new RequestType('metadata')),
    );
    const post = (body: string) =>
      new PacHttp(run.url()).post('/SolicitaDescargaService.svc', {
        body,
        headers: {
          'content-type': 'text/xml; charset="utf-8"',
          soapaction: 'http://DescargaMasivaTerceros.sat.gob.mx/ISolicitaDescargaService/SolicitaDescargaEmitidos',
          authorization: `WRAP access_token="${token.getValue()}"`,
        },
      });
    const changed = signed.replace('TipoSolicitud="Metadata"', 'TipoSolicitud="CFDI"');
    expect(changed).not.toBe(signed);
    expect((await post(changed)).body).toContain('CodEstatus="302"');
    expect((await post(signed)).body).toContain('CodEstatus="5000"');
  });
});

describe('ConsultaCFDIService through @nodecfdi/sat-estado-cfdi', () => {
  it('reads vigente, cancelled and not found as the library states them', async () => {
    const client = new EstadoCfdiClient();
    closers.push(() => client.close());
    const consumer = estadoConsumer(`${run.url()}/ConsultaCFDIService.svc`, client);
    const expression = (s: { uuid: string; total: string }) =>
      `https://verificacfdi.facturaelectronica.sat.gob.mx/default.aspx?id=${s.uuid}&re=EKU9003173C9&rr=CACX7605101P8&tt=${s.total}&fe=AAAAAA==`;
    const vigente = await consumer.executeAsync(expression(stamped[0]!));
    expect(vigente.getQuery().isFound()).toBe(true);
    expect(vigente.getDocument().isActive()).toBe(true);
    expect(vigente.getCancellable().byDirectCall()).toBe(true);
    expect(vigente.getEfos().isExcluded()).toBe(true);
    const cancelled = await consumer.executeAsync(expression(stamped[2]!));
    expect(cancelled.getDocument().isCanceled()).toBe(true);
    expect(cancelled.getCancellation().isCancelledByDirectCall()).toBe(true);
    const unknown = await consumer.executeAsync(
      expression({ uuid: '00000000-0000-4000-8000-000000000000', total: '1.00' }),
    );
    expect(unknown.getQuery().isNotFound()).toBe(true);
    expect(unknown.getDocument().isNotFound()).toBe(true);
  });
});
