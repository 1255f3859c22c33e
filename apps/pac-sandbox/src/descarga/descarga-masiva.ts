/**
 * The SAT's Descarga Masiva (v1.5) as a state machine: authenticate with the e.firma for a token,
 * ask for issued or received CFDIs (or their metadata) by period or by UUID, verify until the
 * request is decided, download its packages. Answers come from the SAT's view of the sandbox's own
 * stamps and cancellations (sat-view.ts), with the SAT's lag, states and limits.
 */
import { randomBytes, randomUUID, type X509Certificate } from 'node:crypto';
import type { SatRegistry } from '../registry.ts';
import { buildPackage } from './packages.ts';
import { readQuery, selected, type Operation, type Query } from './queries.ts';
import { satDocuments } from './sat-view.ts';
import { authenticate, DescargaRefusal, parseEnvelope, signedRequest, type Signer } from './ws-security.ts';

export interface DescargaOptions {
  /** A token's life: the SAT's is 5 minutes. */
  tokenTtlMs: number;
  /** How long a request is Aceptada (1), then En proceso (2), before it is decided. */
  acceptMs: number;
  processMs: number;
  /** The SAT's lag: a stamp or a cancellation appears this long after it happened. */
  lagMs: number;
  /** Documents per package. */
  packageSize: number;
  /** Most documents one request may select: the SAT's 200,000 CFDI and 1,000,000 metadata rows. */
  maxCfdi: number;
  maxMetadata: number;
  /** How many times a package may be downloaded (the SAT's: 2). */
  maxDownloads: number;
  /** A request's and its packages' life (the SAT's: 72 hours), then Vencida (6). */
  requestTtlMs: number;
  /** The same parameters may be asked this many times, ever (5002 after). */
  maxIdentical: number;
}

export const DESCARGA_DEFAULTS: DescargaOptions = {
  tokenTtlMs: 5 * 60_000,
  acceptMs: 200,
  processMs: 1_000,
  lagMs: 0,
  packageSize: 200_000,
  maxCfdi: 200_000,
  maxMetadata: 1_000_000,
  maxDownloads: 2,
  requestTtlMs: 72 * 3_600_000,
  maxIdentical: 2,
};

/** EstadoSolicitud: 1 Aceptada, 2 En proceso, 3 Terminada, 5 Rechazada, 6 Vencida. */
export interface Verification {
  estado: 1 | 2 | 3 | 4 | 5 | 6;
  /** CodigoEstadoSolicitud: 5000, 5003 over the limit, 5004 no data. */
  codigo: string;
  count: number;
  packages: string[];
}

interface DownloadRequest {
  id: string;
  query: Query;
  createdAt: number;
  outcome?: Promise<Verification>;
}

interface DownloadPackage {
  rfc: string;
  createdAt: number;
  bytes: Buffer;
  downloads: number;
}

export class DescargaMasiva {
  private readonly tokens = new Map<string, { rfc: string; expires: number }>();
  private readonly requests = new Map<string, DownloadRequest>();
  private readonly byKey = new Map<string, DownloadRequest[]>();
  private readonly packages = new Map<string, DownloadPackage>();

  constructor(
    private readonly registry: SatRegistry,
    private readonly trustedCa: X509Certificate | undefined,
    readonly options: DescargaOptions = DESCARGA_DEFAULTS,
  ) {}

  /** `Autentica`: a token for the e.firma's RFC. @throws DescargaRefusal (answered as a SOAP fault). */
  authenticate(xml: string, now: Date): { token: string; created: Date; expires: Date } {
    const signer = authenticate(parseEnvelope(xml), this.trustedCa, now);
    const token = randomBytes(24).toString('base64url');
    const expires = new Date(now.getTime() + this.options.tokenTtlMs);
    this.tokens.set(token, { rfc: signer.rfc, expires: expires.getTime() });
    return { token, created: now, expires };
  }

  /** A signed request from the token's own taxpayer, or 300 (Usuario No Válido). */
  private signed(xml: string, authorization: string | undefined, requestLocal: string, now: Date) {
    const value = /WRAP access_token="([^"]*)"/.exec(authorization ?? '')?.[1] ?? '';
    const token = this.tokens.get(decodeURIComponent(value));
    const parsed = signedRequest(parseEnvelope(xml), requestLocal, this.trustedCa, now);
    if (!token || token.expires < now.getTime() || token.rfc !== parsed.signer.rfc) {
      throw new DescargaRefusal('300', 'Usuario No Válido');
    }
    return parsed;
  }

  /** `SolicitaDescarga…`: 5000 with the request's id, 5005 duplicated, 5002 exhausted. */
  query(operation: Operation, xml: string, authorization: string | undefined, now: Date): { id: string } {
    const { request } = this.signed(xml, authorization, 'solicitud', now);
    const query = readQuery(operation, request);
    const earlier = this.byKey.get(query.key) ?? [];
    if (earlier.some((r) => now.getTime() - r.createdAt < this.options.requestTtlMs)) {
      throw new DescargaRefusal('5005', 'Solicitud duplicada');
    }
    if (earlier.length >= this.options.maxIdentical) {
      throw new DescargaRefusal('5002', 'Se agotó las solicitudes de por vida');
    }
    const created: DownloadRequest = { id: randomUUID().toUpperCase(), query, createdAt: now.getTime() };
    this.requests.set(created.id, created);
    this.byKey.set(query.key, [...earlier, created]);
    return { id: created.id };
  }

  /** `VerificaSolicitudDescarga`: where the request stands; decided once, then always the same. */
  async verify(xml: string, authorization: string | undefined, now: Date): Promise<Verification> {
    const { request, signer } = this.signed(xml, authorization, 'solicitud', now);
    const found = this.requests.get((request.getAttribute('IdSolicitud') ?? '').toUpperCase());
    if (!found || found.query.rfcSolicitante !== signer.rfc) {
      throw new DescargaRefusal('5004', 'No se encontró la solicitud');
    }
    const age = now.getTime() - found.createdAt;
    const none = { count: 0, packages: [] as string[] };
    if (age >= this.options.requestTtlMs) return { estado: 6, codigo: '5000', ...none };
    if (age < this.options.acceptMs) return { estado: 1, codigo: '5000', ...none };
    if (age < this.options.acceptMs + this.options.processMs) return { estado: 2, codigo: '5000', ...none };
    found.outcome ??= this.decide(found, signer);
    return found.outcome;
  }

  private async decide(request: DownloadRequest, signer: Signer): Promise<Verification> {
    const at = request.createdAt + this.options.acceptMs + this.options.processMs;
    const documents = selected(request.query, satDocuments(this.registry, at, this.options.lagMs));
    const limit = request.query.kind === 'CFDI' ? this.options.maxCfdi : this.options.maxMetadata;
    if (documents.length === 0) return { estado: 5, codigo: '5004', count: 0, packages: [] };
    if (documents.length > limit) return { estado: 5, codigo: '5003', count: documents.length, packages: [] };
    const ids: string[] = [];
    for (let start = 0; start < documents.length; start += this.options.packageSize) {
      const id = `${request.id}_${String(ids.length + 1).padStart(2, '0')}`;
      const slice = documents.slice(start, start + this.options.packageSize);
      const bytes = await buildPackage(request.query.kind, id, slice);
      this.packages.set(id, { rfc: signer.rfc, createdAt: request.createdAt, bytes, downloads: 0 });
      ids.push(id);
    }
    return { estado: 3, codigo: '5000', count: documents.length, packages: ids };
  }

  /** `Descargar`: a package's ZIP; 5007 unknown or expired, 5008 downloaded too many times. */
  download(xml: string, authorization: string | undefined, now: Date): Buffer {
    const { request, signer } = this.signed(xml, authorization, 'peticionDescarga', now);
    const found = this.packages.get((request.getAttribute('IdPaquete') ?? '').toUpperCase());
    if (!found || found.rfc !== signer.rfc || now.getTime() - found.createdAt >= this.options.requestTtlMs) {
      throw new DescargaRefusal('5007', 'No existe el paquete solicitado');
    }
    if (found.downloads >= this.options.maxDownloads) {
      throw new DescargaRefusal('5008', 'Máximo de descargas permitidas');
    }
    found.downloads++;
    return found.bytes;
  }

  /** Forgets every token, request and package (the admin reset). */
  clear(): void {
    this.tokens.clear();
    this.requests.clear();
    this.byKey.clear();
    this.packages.clear();
  }
}
