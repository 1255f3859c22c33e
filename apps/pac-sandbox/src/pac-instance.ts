import { createHash, randomBytes } from 'node:crypto';
import { insertTfd } from '@timbra/cfdi-core';
import { NO_FAULTS, seededRandom, type Faults } from './faults.ts';
import { InstanceMemory, type ReceivedRecord, type SatRegistry, type StampRecord } from './registry.ts';
import type { TfdSigner } from './tfd-signer.ts';
import { checkDocument, type CertificateTrust, type DocumentCheck } from './validate-document.ts';
import {
  pacValidation,
  VALIDATION_ON,
  type SchemaCheck,
  type TaxpayerList,
  type ValidationSwitches,
} from './validation.ts';

type CheckedDocument = Extract<DocumentCheck, { ok: true }>;

/** What a stamp request came to, whatever the protocol. */
export type StampOutcome =
  | { kind: 'stamped'; record: StampRecord }
  /** 307: this instance stamped this cadena before. CFDI3307: the customid was used for another cadena. */
  | { kind: 'previous'; record: StampRecord; code: '307' | 'CFDI3307' }
  | { kind: 'rejected'; code: string; message: string };

export interface InstanceCounts {
  requests: number;
  stamped: number;
  previous: number;
  rejected: number;
  injectedErrors: number;
  drops: number;
  authentications: number;
}

export interface PacInstanceDeps {
  registry: SatRegistry;
  signer: TfdSigner;
  now: () => Date;
  tokenTtlMs: number;
  seed: number;
  /** Called after every change worth persisting. */
  onChange: () => void;
  /** The SAT's schemas (absent: XSD validation cannot run, whatever the switch says). */
  schema?: SchemaCheck;
  taxpayers: TaxpayerList;
  /** Which certificates are the SAT's (validate-document.ts). */
  trust: CertificateTrust;
  /** Initial validation switches (default: both on). */
  validation?: ValidationSwitches;
}

/**
 * One PAC (e.g. `primary`): its dedupe memory, its tokens, its faults. Dedupe is per PAC, as in
 * reality: a second instance does not know what the first stamped, and stamps the same cadena again
 * (a cross-PAC duplicate the ledger shows).
 */
export class PacInstance {
  readonly memory = new InstanceMemory();
  readonly tokens = new Map<string, number>();
  private readonly inFlight = new Map<string, Promise<StampRecord>>();
  faults: Faults = NO_FAULTS;
  /** What this PAC validates before stamping, as a real one does; switchable for tests. */
  validation: ValidationSwitches;
  random: () => number;
  counts: InstanceCounts = PacInstance.zeroCounts();

  constructor(
    readonly name: string,
    private readonly deps: PacInstanceDeps,
  ) {
    this.random = seededRandom(deps.seed);
    this.validation = deps.validation ?? VALIDATION_ON;
  }

  /** The PAC certificate's number (NoCertificadoSAT of its stamps; NoCertificadoPac of its Incidencias). */
  get noCertificadoPac(): string {
    return this.deps.signer.noCertificadoSat;
  }

  static zeroCounts(): InstanceCounts {
    return { requests: 0, stamped: 0, previous: 0, rejected: 0, injectedErrors: 0, drops: 0, authentications: 0 };
  }

  issueToken(): { token: string; expiresInS: number } {
    this.counts.authentications++;
    const token = randomBytes(24).toString('base64url');
    this.tokens.set(token, this.deps.now().getTime() + this.deps.tokenTtlMs);
    return { token, expiresInS: Math.round(this.deps.tokenTtlMs / 1000) };
  }

  tokenValid(token: string | undefined): boolean {
    if (!token) return false;
    const expiresAt = this.tokens.get(token);
    if (expiresAt === undefined) return false;
    if (expiresAt <= this.deps.now().getTime()) {
      this.tokens.delete(token);
      return false;
    }
    return true;
  }

  /** Validates and stamps (or finds the previous stamp of) a document. */
  async stamp(xml: string, customid: string | undefined, protocol: ReceivedRecord['protocol']): Promise<StampOutcome> {
    const outcome = await this.decide(xml, customid);
    this.deps.registry.received.push({
      instance: this.name,
      protocol,
      ...(customid ? { customid } : {}),
      xmlSha256: createHash('sha256').update(xml, 'utf8').digest('hex'),
      at: this.deps.now().toISOString(),
      outcome: outcome.kind === 'rejected' ? outcome.code : outcome.kind === 'previous' ? outcome.code : 'stamped',
    });
    if (outcome.kind === 'stamped') this.counts.stamped++;
    else if (outcome.kind === 'previous') this.counts.previous++;
    else this.counts.rejected++;
    return outcome;
  }

  /** Finkok `stamped`: this instance's previous stamp of the same document, if any. */
  previousStamp(xml: string): StampRecord | { code: string; message: string } | undefined {
    const check = checkDocument(xml, this.deps.now(), [], this.deps.trust);
    if (!check.ok) {
      // `stamped` looks the document up; a 72-hour-old document is still found.
      if (check.code !== '401') return { code: check.code, message: check.message };
      return undefined;
    }
    return this.memory.byCadena.get(check.cadenaHash);
  }

  private async decide(xml: string, customid: string | undefined): Promise<StampOutcome> {
    const check = checkDocument(xml, this.deps.now(), this.faults.rejectRfcs, this.deps.trust);
    if (!check.ok) return { kind: 'rejected', code: check.code, message: check.message };
    const refused = pacValidation(
      xml,
      check.root,
      this.validation,
      this.deps.schema,
      this.deps.taxpayers,
      this.deps.now(),
    );
    if (refused) return { kind: 'rejected', code: refused.code, message: refused.message };

    // customid reuse: SW answers with the stamp the customid was first used for.
    if (customid) {
      const known = this.memory.customids.get(customid);
      if (known !== undefined && known !== check.cadenaHash) {
        const original = this.memory.byCadena.get(known);
        if (original) return { kind: 'previous', record: original, code: 'CFDI3307' };
      }
    }
    // A stamp of the same cadena still being signed counts as previous: wait for it.
    const previous = this.memory.byCadena.get(check.cadenaHash) ?? (await this.inFlight.get(check.cadenaHash));
    if (previous) {
      if (customid && !this.memory.customids.has(customid)) this.memory.customids.set(customid, check.cadenaHash);
      return { kind: 'previous', record: previous, code: '307' };
    }
    if (check.hasTfd) {
      return { kind: 'rejected', code: '707', message: 'El XML ya contiene un nodo TimbreFiscalDigital.' };
    }
    // Reserve the cadena (and the customid) before signing, which yields to other requests.
    if (customid) this.memory.customids.set(customid, check.cadenaHash);
    const stamping = this.issue(xml, check, customid);
    this.inFlight.set(check.cadenaHash, stamping);
    try {
      return { kind: 'stamped', record: await stamping };
    } finally {
      this.inFlight.delete(check.cadenaHash);
    }
  }

  private async issue(xml: string, check: CheckedDocument, customid: string | undefined): Promise<StampRecord> {
    const now = this.deps.now();
    const { uuid, fechaTimbrado, tfdXml, cadenaOriginal, selloSAT } = await this.deps.signer.sign(check.sello, now);
    const record: StampRecord = {
      uuid,
      cadenaHash: check.cadenaHash,
      instance: this.name,
      ...(customid ? { customid } : {}),
      stampedAt: now.toISOString(),
      fechaTimbrado,
      tfdXml,
      stampedXml: insertTfd(xml, tfdXml),
      rfcEmisor: check.rfcEmisor,
      rfcReceptor: check.rfcReceptor,
      total: check.total,
      sat: {
        cadenaOriginal,
        selloSAT,
        noCertificadoSAT: this.deps.signer.noCertificadoSat,
        selloCFD: check.sello,
        noCertificadoCFDI: check.noCertificado,
      },
    };
    this.memory.byCadena.set(check.cadenaHash, record);
    this.deps.registry.add(record);
    this.deps.onChange();
    return record;
  }
}
