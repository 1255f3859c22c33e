/**
 * The sandbox's "SAT": every stamp any PAC instance issued, by UUID and by cadena, so cross-PAC
 * duplicates are visible; and each instance's own memory (its dedupe by cadena, its customids).
 */

export interface CancellationRecord {
  motivo: string;
  folioSustitucion?: string;
  requestedAt: number;
  /** Needs the receptor's acceptance (Total above the threshold). */
  withAcceptance: boolean;
  /** When an acceptance-needing request is decided. */
  decideAt: number;
  /** The receptor rejects it (decided at `decideAt`): the CFDI stays Vigente. */
  rejected: boolean;
}

export interface StampRecord {
  uuid: string;
  cadenaHash: string;
  instance: string;
  customid?: string;
  /** ISO instant the stamp was issued. */
  stampedAt: string;
  fechaTimbrado: string;
  tfdXml: string;
  stampedXml: string;
  rfcEmisor: string;
  rfcReceptor: string;
  total: string;
  /** What SW's v4 answer reports besides the CFDI. */
  sat: {
    cadenaOriginal: string;
    selloSAT: string;
    noCertificadoSAT: string;
    selloCFD: string;
    noCertificadoCFDI: string;
  };
  cancellation?: CancellationRecord;
}

/** A received stamp request, for tests that prove every attempt sent the same bytes. */
export interface ReceivedRecord {
  instance: string;
  protocol: 'sw' | 'finkok';
  customid?: string;
  xmlSha256: string;
  at: string;
  outcome: string;
}

export class SatRegistry {
  readonly stamps: StampRecord[] = [];
  readonly received: ReceivedRecord[] = [];
  private readonly byUuid = new Map<string, StampRecord>();
  /**
   * Since when the ledger knows every stamp (ISO): its start, a reset, or the saved state's start — to
   * the whole second, as FechaTimbrado is (a stamp in the start's own second must not look older).
   */
  coversSince = startOfSecond();

  add(record: StampRecord): void {
    this.stamps.push(record);
    this.byUuid.set(record.uuid, record);
  }

  get(uuid: string): StampRecord | undefined {
    return this.byUuid.get(uuid.toUpperCase());
  }

  clear(): void {
    this.stamps.length = 0;
    this.received.length = 0;
    this.byUuid.clear();
    this.coversSince = startOfSecond();
  }
}

const startOfSecond = () => new Date(Math.floor(Date.now() / 1000) * 1000).toISOString();

/** What one PAC instance remembers: its own stamps by cadena, and customid → cadena. */
export class InstanceMemory {
  readonly byCadena = new Map<string, StampRecord>();
  readonly customids = new Map<string, string>();

  clear(): void {
    this.byCadena.clear();
    this.customids.clear();
  }
}
