/**
 * The SAT's own record of an emisor's CFDIs, read through Descarga Masiva with the maintained
 * client: a request, verified until decided (backing off), its packages downloaded and opened by
 * the client's own readers. What reconciliation compares Timbra's invoices with.
 */
import {
  CfdiPackageReader,
  DateTime,
  DateTimePeriod,
  DownloadType,
  MetadataPackageReader,
  QueryParameters,
  RequestType,
  Uuid,
  type Service,
} from '@nodecfdi/sat-ws-descarga-masiva';
import { DEFAULT_TIME_ZONE } from '@timbra/cfdi-core';

/** One row of the SAT's metadata for a CFDI. Dates as the SAT writes them (Mexico City, `YYYY-MM-DD HH:mm:ss`). */
export interface SatRecordRow {
  uuid: string;
  rfcEmisor: string;
  rfcReceptor: string;
  rfcPac: string;
  /** Monto: the CFDI's Total as the SAT lists it. */
  total: string;
  /** EfectoComprobante: I, E, T, N, P. */
  efecto: string;
  vigente: boolean;
  fechaEmision: string;
  fechaCertificacion: string;
  fechaCancelacion: string;
}

/**
 * The SAT did not give the record: `refused` (a CodEstatus other than 5000: the code says why),
 * `rejected` (the request was rejected or expired), `pending` (not decided within the wait).
 */
export class SatRecordError extends Error {
  constructor(
    readonly kind: 'refused' | 'rejected' | 'pending',
    readonly satCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'SatRecordError';
  }
}

export interface SatWait {
  /** First pause between verifications; doubles up to `maxPollMs`. */
  pollMs: number;
  maxPollMs: number;
  /** How long to wait for the SAT to decide a request. The SAT's own may take hours. */
  maxWaitMs: number;
}

export const DEFAULT_SAT_WAIT: SatWait = { pollMs: 2_000, maxPollMs: 60_000, maxWaitMs: 6 * 3_600_000 };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Asks, verifies until decided, downloads: each package's ZIP as the readers take it (binary string). */
async function packagesFor(service: Service, parameters: QueryParameters, wait: SatWait): Promise<string[]> {
  const query = await service.query(parameters);
  if (!query.getStatus().isAccepted()) {
    const { code, message } = query.getStatus().toJSON();
    throw new SatRecordError('refused', code, `the SAT refused the request: ${code} ${message}`);
  }
  const started = Date.now();
  for (let pause = wait.pollMs; ; pause = Math.min(pause * 2, wait.maxPollMs)) {
    const verification = await service.verify(query.getRequestId());
    if (!verification.getStatus().isAccepted()) {
      const { code, message } = verification.getStatus().toJSON();
      throw new SatRecordError('refused', code, `the SAT refused the verification: ${code} ${message}`);
    }
    const state = verification.getStatusRequest();
    if (state.isTypeOf('Finished')) return download(service, verification.getPackageIds());
    const code = verification.getCodeRequest().getValue() ?? 0;
    if (state.isTypeOf('Rejected') && code === 5004) return [];
    if (!state.isTypeOf('Accepted') && !state.isTypeOf('InProgress')) {
      throw new SatRecordError(
        'rejected',
        code,
        `the SAT's request ${query.getRequestId()} ended ${state.getEntryId()} (${code})`,
      );
    }
    if (Date.now() - started + pause > wait.maxWaitMs) {
      throw new SatRecordError(
        'pending',
        code,
        `the SAT's request ${query.getRequestId()} is still ${state.getEntryId()}`,
      );
    }
    await sleep(pause);
  }
}

async function download(service: Service, ids: readonly string[]): Promise<string[]> {
  const contents: string[] = [];
  for (const id of ids) {
    const result = await service.download(id);
    if (!result.getStatus().isAccepted()) {
      const { code, message } = result.getStatus().toJSON();
      throw new SatRecordError('refused', code, `the SAT refused package ${id}: ${code} ${message}`);
    }
    contents.push(Buffer.from(result.getPackageContent(), 'base64').toString('binary'));
  }
  return contents;
}

/** The SAT's metadata of every CFDI the e.firma's RFC issued with a Fecha in [from, to] (Mexico City wall-clock). */
export async function satIssued(
  service: Service,
  period: { from: string; to: string },
  wait: SatWait = DEFAULT_SAT_WAIT,
): Promise<SatRecordRow[]> {
  const parameters = QueryParameters.create(
    DateTimePeriod.create(
      DateTime.create(period.from, DEFAULT_TIME_ZONE),
      DateTime.create(period.to, DEFAULT_TIME_ZONE),
    ),
    new DownloadType('issued'),
    new RequestType('metadata'),
  );
  const rows: SatRecordRow[] = [];
  for (const content of await packagesFor(service, parameters, wait)) {
    const reader = await MetadataPackageReader.createFromContents(content);
    for await (const item of reader.metadata()) {
      rows.push({
        uuid: item.get('uuid').toUpperCase(),
        rfcEmisor: item.get('rfcEmisor'),
        rfcReceptor: item.get('rfcReceptor'),
        rfcPac: item.get('rfcPac'),
        total: item.get('monto'),
        efecto: item.get('efectoComprobante'),
        vigente: item.get('estatus') === '1',
        fechaEmision: item.get('fechaEmision'),
        fechaCertificacion: item.get('fechaCertificacionSat'),
        fechaCancelacion: item.get('fechaCancelacion'),
      });
    }
  }
  return rows;
}

/** One CFDI's XML as the SAT holds it, by UUID; undefined when the SAT has none for the signer. */
export async function satCfdi(
  service: Service,
  uuid: string,
  wait: SatWait = DEFAULT_SAT_WAIT,
): Promise<string | undefined> {
  for (const content of await packagesFor(service, QueryParameters.create().withUuid(Uuid.create(uuid)), wait)) {
    const reader = await CfdiPackageReader.createFromContents(content);
    for (const cfdi of await reader.cfdisToArray()) {
      if (cfdi.uuid.toUpperCase() === uuid.toUpperCase()) return cfdi.content;
    }
  }
  return undefined;
}
