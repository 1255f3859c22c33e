/**
 * The SAT's Descarga Masiva through its maintained client, `@nodecfdi/sat-ws-descarga-masiva`,
 * unchanged: its request builder signs with the e.firma, its translators read the answers, its
 * package readers open the ZIPs. Timbra supplies the transport (the library's `WebClient` slot):
 * `PacHttp` over node:http/https, so a sandbox on plain HTTP works and every call has the PAC
 * clients' timeouts, and the endpoints: the SAT's own, or one base URL serving all four paths.
 */
import {
  CResponse,
  Fiel,
  FielRequestBuilder,
  Service,
  ServiceEndpoints,
  ServiceType,
  WebClientException,
  type CRequest,
} from '@nodecfdi/sat-ws-descarga-masiva';
import { DEFAULT_TIMEOUTS, PacHttp, type PacTimeouts } from '../pac/http.ts';

/** The paths of the four services after their hosts, as the SAT serves them. */
export const DESCARGA_SERVICE_PATHS = {
  authenticate: '/Autenticacion/Autenticacion.svc',
  query: '/SolicitaDescargaService.svc',
  verify: '/VerificaSolicitudDescargaService.svc',
  download: '/DescargaMasivaService.svc',
} as const;

/** An e.firma: certificate and encrypted key (DER or PEM) and the key's password. */
export interface Efirma {
  cer: Buffer;
  key: Buffer;
  password: string;
}

/** The library's `WebClient` over `PacHttp`: one keep-alive client per origin. */
export class PacHttpWebClient {
  private readonly clients = new Map<string, PacHttp>();

  constructor(private readonly timeouts: PacTimeouts = DEFAULT_TIMEOUTS) {}

  fireRequest(_request: CRequest): void {}

  fireResponse(_response: CResponse): void {}

  async call(request: CRequest): Promise<CResponse> {
    const uri = new URL(request.getUri());
    let client = this.clients.get(uri.origin);
    if (!client) {
      client = new PacHttp(uri.origin, this.timeouts);
      this.clients.set(uri.origin, client);
    }
    try {
      const answer = await client.post(`${uri.pathname}${uri.search}`, {
        body: request.getBody(),
        headers: Object.fromEntries(Object.entries(request.getHeaders()).map(([k, v]) => [k.toLowerCase(), v])),
      });
      return new CResponse(answer.statusCode, answer.body);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new WebClientException(message, request, new CResponse(0, message));
    }
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }
}

/** The four endpoints: the SAT's own (`sat`), or a base URL serving the SAT's paths (the sandbox). */
export function descargaEndpoints(where: string): ServiceEndpoints {
  if (where === 'sat') return ServiceEndpoints.cfdi();
  const base = where.replace(/\/+$/, '');
  return new ServiceEndpoints(
    `${base}${DESCARGA_SERVICE_PATHS.authenticate}`,
    `${base}${DESCARGA_SERVICE_PATHS.query}`,
    `${base}${DESCARGA_SERVICE_PATHS.verify}`,
    `${base}${DESCARGA_SERVICE_PATHS.download}`,
    new ServiceType('cfdi'),
  );
}

/** The library's e.firma from its files. @throws when the key does not open or is not the certificate's. */
export function fielOf(efirma: Efirma): Fiel {
  return Fiel.create(efirma.cer.toString('binary'), efirma.key.toString('binary'), efirma.password);
}

/** A Descarga Masiva service signing as `efirma`, at `where`; `close()` ends its connections. */
export function descargaService(
  efirma: Efirma,
  where: string,
  timeouts: PacTimeouts = DEFAULT_TIMEOUTS,
): { service: Service; fiel: Fiel; close: () => void } {
  const fiel = fielOf(efirma);
  const webClient = new PacHttpWebClient(timeouts);
  const service = new Service(new FielRequestBuilder(fiel), webClient, null, descargaEndpoints(where));
  return { service, fiel, close: () => webClient.close() };
}
