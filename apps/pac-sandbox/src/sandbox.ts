import { X509Certificate } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import type { Csd } from '@timbra/cfdi-core';
import type { CancellationPolicy } from './cancellation.ts';
import { DEFAULT_SAT_DIR } from './config.ts';
import { DescargaMasiva, DESCARGA_DEFAULTS, type DescargaOptions } from './descarga/descarga-masiva.ts';
import { adminRoutes } from './http/admin-routes.ts';
import { descargaRoutes } from './http/descarga-routes.ts';
import { finkokRoutes } from './http/finkok-routes.ts';
import { satRoutes } from './http/sat-routes.ts';
import { swRoutes } from './http/sw-routes.ts';
import { PacInstance } from './pac-instance.ts';
import { SatRegistry } from './registry.ts';
import { loadState, stateSaver } from './state-file.ts';
import { TfdSigner } from './tfd-signer.ts';
import type { CertificateTrust } from './validate-document.ts';
import { SchemaCheck, TaxpayerList, VALIDATION_ON, type ValidationSwitches } from './validation.ts';

/** The SAT's test CSDs' certificates in `satDir/csd` (DER). */
function satTestCertificates(satDir: string): Buffer[] {
  const dir = join(satDir, 'csd');
  return readdirSync(dir)
    .filter((name) => name.endsWith('.cer'))
    .map((name) => readFileSync(join(dir, name)));
}

export interface SandboxOptions {
  host: string;
  /** Port per PAC instance (0: any free port), e.g. `{ primary: 4010, backup: 4011 }`. */
  instancePorts: Readonly<Record<string, number>>;
  /** A port serving only the admin API, reachable while every instance is in an outage. */
  adminPort?: number;
  /** Without a token the admin API is off. */
  adminToken?: string;
  sw: { user: string; password: string };
  finkok: { username: string; password: string };
  pacCsd: Csd;
  rfcProvCertif: string;
  tokenTtlMs: number;
  policy: CancellationPolicy;
  seed: number;
  stateFile?: string;
  /** The SAT folder, for its XSDs (default: the repository's \`sat/\`). */
  satDir?: string;
  /** What every instance validates at start (default: schema and SAT rules). */
  validation?: ValidationSwitches;
  logger: Logger;
  now?: () => Date;
  /** A CA (PEM) taken as the SAT's besides the SAT's own: the tests' CA, never in production. */
  trustedCa?: string;
  /** The SAT-issued certificates (DER) the sandbox knows; default: every `.cer` in `satDir/csd`. */
  satCertificates?: readonly Buffer[];
  /** Descarga Masiva's timings and limits (default: DESCARGA_DEFAULTS). */
  descarga?: Partial<DescargaOptions>;
}

interface Listener {
  name: string;
  server: Server;
  port: number;
  listening: boolean;
  reopenTimer?: NodeJS.Timeout;
}

/** A running sandbox: two (or more) PAC instances sharing one "SAT", each on its own port. */
export class Sandbox {
  readonly registry = new SatRegistry();
  /** The SAT's list of registered taxpayers (L_RFC), shared by every instance. */
  readonly taxpayers = new TaxpayerList();
  readonly instances = new Map<string, PacInstance>();
  /** The SAT's Descarga Masiva, answering from the registry; its e.firmas must chain to `trustedCa`. */
  readonly descarga: DescargaMasiva;
  private readonly listeners = new Map<string, Listener>();
  private adminServer?: Server;
  private readonly saver;
  private readonly now: () => Date;

  constructor(private readonly options: SandboxOptions) {
    this.now = options.now ?? (() => new Date());
    const signer = new TfdSigner(options.pacCsd, options.rfcProvCertif);
    this.saver = options.stateFile ? stateSaver(options.stateFile, this.registry, this.instances) : undefined;
    const validation = options.validation ?? VALIDATION_ON;
    // Compiled even when off at start: the admin API can turn it on per instance.
    const schema = new SchemaCheck(options.satDir ?? DEFAULT_SAT_DIR);
    const trust: CertificateTrust = {
      satCertificates: new Set(
        (options.satCertificates ?? satTestCertificates(options.satDir ?? DEFAULT_SAT_DIR)).map(
          (der) => new X509Certificate(der).fingerprint256,
        ),
      ),
      ...(options.trustedCa ? { ca: new X509Certificate(options.trustedCa) } : {}),
    };
    this.descarga = new DescargaMasiva(this.registry, trust.ca, { ...DESCARGA_DEFAULTS, ...options.descarga });
    let seed = options.seed;
    for (const name of Object.keys(options.instancePorts)) {
      this.instances.set(
        name,
        new PacInstance(name, {
          registry: this.registry,
          signer,
          now: this.now,
          tokenTtlMs: options.tokenTtlMs,
          seed: seed++,
          onChange: () => this.saver?.schedule(),
          schema,
          taxpayers: this.taxpayers,
          validation,
          trust,
        }),
      );
    }
    if (options.stateFile) {
      const loaded = loadState(options.stateFile, this.registry, this.instances);
      if (loaded > 0) options.logger.info({ stamps: loaded, file: options.stateFile }, 'ledger loaded');
    }
  }

  /** Starts every instance (and the admin port); returns the bound ports. */
  async start(): Promise<Record<string, number>> {
    const ports: Record<string, number> = {};
    for (const [name, instance] of this.instances) {
      const server = createServer(this.app(instance));
      server.keepAliveTimeout = 5_000;
      const listener: Listener = { name, server, port: this.options.instancePorts[name] ?? 0, listening: false };
      await this.listen(listener);
      this.listeners.set(name, listener);
      ports[name] = listener.port;
    }
    if (this.options.adminToken && this.options.adminPort !== undefined) {
      const app = express();
      app.use(express.json());
      app.use('/__admin', this.admin());
      this.adminServer = await new Promise<Server>((resolve) => {
        const s = app.listen(this.options.adminPort ?? 0, this.options.host, () => resolve(s));
      });
      ports.admin = (this.adminServer.address() as AddressInfo).port;
    }
    this.options.logger.info({ ports }, 'pac-sandbox listening');
    return ports;
  }

  async stop(): Promise<void> {
    for (const l of this.listeners.values()) {
      clearTimeout(l.reopenTimer);
      l.server.closeAllConnections();
      if (l.listening) await new Promise<void>((resolve) => l.server.close(() => resolve()));
      l.listening = false;
    }
    if (this.adminServer) {
      this.adminServer.closeAllConnections();
      await new Promise<void>((resolve) => this.adminServer?.close(() => resolve()));
    }
    this.saver?.flush();
  }

  /** The URL of an instance. */
  url(name: string): string {
    const l = this.listeners.get(name);
    if (!l) throw new Error(`no instance ${name}`);
    return `http://${this.options.host}:${l.port}`;
  }

  private async listen(l: Listener): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      l.server.once('error', reject);
      l.server.listen(l.port, this.options.host, () => {
        l.server.off('error', reject);
        resolve();
      });
    });
    l.port = (l.server.address() as AddressInfo).port;
    l.listening = true;
  }

  /**
   * An outage closes the instance's port (new connections are refused, as a PAC that is down) and
   * reopens it when the window ends; requests already in flight finish.
   */
  private applyOutage(instance: PacInstance): void {
    const l = this.listeners.get(instance.name);
    if (!l) return;
    clearTimeout(l.reopenTimer);
    const remaining = instance.faults.outageUntil - this.now().getTime();
    if (remaining > 0) {
      if (l.listening) {
        l.server.close();
        l.server.closeIdleConnections();
        l.listening = false;
        this.options.logger.warn(
          { instance: instance.name, untilMs: instance.faults.outageUntil },
          'outage: port closed',
        );
      }
      l.reopenTimer = setTimeout(() => this.applyOutage(instance), remaining);
      l.reopenTimer.unref();
    } else if (!l.listening) {
      this.listen(l).then(
        () => this.options.logger.warn({ instance: instance.name, port: l.port }, 'outage over: port reopened'),
        (error: unknown) => this.options.logger.error({ err: error, instance: instance.name }, 'could not reopen port'),
      );
    }
  }

  private admin() {
    return adminRoutes({
      token: this.options.adminToken ?? '',
      registry: this.registry,
      taxpayers: this.taxpayers,
      validation: this.options.validation ?? VALIDATION_ON,
      instances: this.instances,
      onFaultsChanged: (instance) => {
        this.options.logger.info({ instance: instance.name, faults: instance.faults }, 'faults set');
        this.applyOutage(instance);
      },
      onReset: () => this.onReset(),
    });
  }

  private onReset(): void {
    this.descarga.clear();
    this.saver?.schedule();
  }

  private app(instance: PacInstance) {
    const app = express();
    app.disable('x-powered-by');
    // No ETag: hashing every 6 KB stamp answer costs more than it could ever save.
    app.set('etag', false);
    app.use(express.json({ limit: '5mb' }));
    app.use(express.text({ type: ['text/xml', 'application/soap+xml'], limit: '10mb' }));
    app.get('/healthz', (_req, res) => {
      res.json({ ok: true, instance: instance.name });
    });
    const shared = { instance, registry: this.registry, policy: this.options.policy, now: this.now };
    app.use(swRoutes({ ...shared, credentials: this.options.sw }));
    app.use(finkokRoutes({ ...shared, credentials: this.options.finkok }));
    app.use(satRoutes(shared));
    app.use(descargaRoutes({ descarga: this.descarga, now: this.now }));
    if (this.options.adminToken) {
      const admin = adminRoutes({
        token: this.options.adminToken,
        registry: this.registry,
        taxpayers: this.taxpayers,
        validation: this.options.validation ?? VALIDATION_ON,
        instances: this.instances,
        defaultInstance: instance.name,
        onFaultsChanged: (i) => {
          this.options.logger.info({ instance: i.name, faults: i.faults }, 'faults set');
          this.applyOutage(i);
        },
        onReset: () => this.onReset(),
      });
      app.use('/__admin', admin);
    }
    app.use((_req, res) => {
      res.status(404).json({ status: 'error', message: 'Not found' });
    });
    app.use((error: Error & { status?: number; type?: string }, _req: Request, res: Response, _next: NextFunction) => {
      const status = error.status && error.status < 500 ? error.status : 500;
      if (status === 500) this.options.logger.error({ err: error }, 'unexpected error');
      res
        .status(status)
        .json({ status: 'error', message: status === 500 ? 'Internal error' : (error.type ?? error.message) });
    });
    return app;
  }
}
