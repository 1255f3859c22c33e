/**
 * One interface for every PAC. Clients speak the PAC's real wire protocol and translate its answers
 * into these types; the worker never sees a protocol detail.
 */

/** What a stamp (or a recovery of a previous stamp) gives back. */
export interface StampResult {
  /** Name of the PAC client that answered (from its configuration, e.g. `primary`). */
  pac: string;
  uuid: string;
  fechaTimbrado: string;
  /** The TimbreFiscalDigital element as XML text. */
  tfdXml: string;
  /**
   * The stamped CFDI: the frozen bytes sent, with the TFD inserted in `cfdi:Complemento`. Its Sello is
   * the frozen one, byte for byte.
   */
  stampedXml: string;
  /** True when the PAC answered "stamped before" (307 / CFDI3307 / Finkok `stamped`) and we recovered. */
  recovered: boolean;
  /** The PAC code that led to a recovery (`307`, `CFDI3307`), absent on a fresh stamp. */
  recoveryCode?: string;
  /**
   * False only when the PAC holds a stamp for this idempotency key that belongs to *another*
   * document (SW CFDI3307 after the document was re-frozen): `stampedXml` is then that document, as
   * the PAC returned it. The caller must record that stamp, not the frozen bytes it sent.
   */
  sameDocument: boolean;
}

export interface StampOptions {
  /** Our stamp key: SW `customid`; recorded by every PAC call. ≤ 100 characters, no `:`. */
  idempotencyKey: string;
  signal?: AbortSignal;
}

/** Motivos of cancellation (Anexo 20, cancelación 2022). */
export type CancelMotivo = '01' | '02' | '03' | '04';

export interface CancelRequest {
  uuid: string;
  rfcEmisor: string;
  motivo: CancelMotivo;
  /** Required with motivo 01: the UUID of the CFDI that replaces this one. */
  folioSustitucion?: string;
  /** The emisor's CSD, which signs the cancellation request: DER bytes and password. */
  csd: { cer: Uint8Array; key: Uint8Array; password: string };
}

export interface CancelResult {
  pac: string;
  uuid: string;
  /**
   * Per-UUID code: `201` request accepted, `202` previously cancelled, `205` not found (yet: the SAT
   * may not know a just-stamped UUID; retry later).
   */
  uuidCode: string;
  /** The acuse (signed acknowledgement) XML as returned by the PAC. */
  acuse: string;
}

export interface StatusRequest {
  uuid: string;
  rfcEmisor: string;
  rfcReceptor: string;
  /** Total as written in the CFDI. */
  total: string;
}

/** The SAT's view of a CFDI (ConsultaCFDIService). */
export interface StatusResult {
  /** `Vigente`, `Cancelado` or `No Encontrado`. */
  estado: string;
  /** `Cancelable sin aceptación`, `Cancelable con aceptación` or `No cancelable`. */
  esCancelable: string;
  /** Empty, `En proceso`, `Cancelado sin aceptación`, `Cancelado con aceptación`, `Plazo vencido`, `Solicitud rechazada`. */
  estatusCancelacion: string;
  codigoEstatus: string;
}

export interface PacClient {
  readonly name: string;
  /**
   * Sends the frozen XML, unchanged, for stamping. A "stamped before" answer is a recovery, returned
   * as a result with `recovered: true`.
   *
   * @throws PacError with `outcome` transient / ambiguous / permanent.
   */
  stamp(frozenXml: string, options: StampOptions): Promise<StampResult>;
  /**
   * Asks the PAC for a previous stamp of this document (SW: by UUID when known; Finkok: `stamped`).
   *
   * @throws PacError PAC_NOT_FOUND when the PAC never stamped it, or a classified failure.
   */
  recover(
    frozenXml: string,
    options: { idempotencyKey: string; uuid?: string; signal?: AbortSignal },
  ): Promise<StampResult>;
  /**
   * Whether this PAC ever stamped this document — or, for a PAC that dedupes by idempotency key (SW
   * `customid`), any document under this key. Never stamps. The proof a correction needs before it
   * replaces a version: `undefined` is the PAC's answer that it never did.
   *
   * @returns the stamp found (`sameDocument` false when it is of another document), or undefined.
   * @throws PacError when the PAC cannot answer (a correction then waits and asks again).
   */
  lookup(
    frozenXml: string,
    options: { idempotencyKey: string; uuid?: string; signal?: AbortSignal },
  ): Promise<StampResult | undefined>;
  /** Requests the cancellation of a stamped CFDI. @throws PacError */
  cancel(request: CancelRequest): Promise<CancelResult>;
  /** The SAT status of a CFDI. @throws PacError */
  status(request: StatusRequest): Promise<StatusResult>;
}
