/**
 * The one place that decides what a PAC answer means for delivery. Pure and table-tested: the worker
 * retries, fails over or dead-letters only on what this function returns.
 *
 * The question behind every branch is "may the PAC have stamped this document?":
 * - not processed for sure → `transient` (retry, and another PAC may be tried);
 * - maybe processed → `ambiguous` (retry the *same* PAC: its dedupe returns the stamp if there is
 *   one; a second PAC does not know the first one's stamps and would issue a second UUID);
 * - processed and refused → `permanent` (retrying sends the same bytes and gets the same answer);
 * - processed and stamped → `stamped` / `already_stamped` (the PAC's idempotency answering).
 */

export type PacOutcome = 'stamped' | 'already_stamped' | 'transient' | 'ambiguous' | 'permanent';

/** What went wrong, as the transport or the PAC reported it. */
export type PacFailure =
  /** No HTTP answer: `code` is Node's / got's error code; `sent` tells whether the request was fully written. */
  | { type: 'network'; code: string; sent: boolean; timeoutPhase?: string }
  /** An HTTP answer: its status and, when the body said, the PAC's own code. */
  | { type: 'http'; status: number; pacCode?: string }
  /** An HTTP 2xx whose body could not be understood. */
  | { type: 'unreadable'; status: number }
  /** A well-formed answer carrying a PAC code (SOAP faults and Finkok incidencias come as 200). */
  | { type: 'pac'; pacCode: string };

/** Codes the SAT and PACs use for "this exact document was stamped before": recover, don't fail. */
const ALREADY_STAMPED = new Set(['307', 'CFDI3307']);

/**
 * Rejections of the document itself (Anexo 20 / Matriz de errores del SAT, PAC validations): the same
 * bytes will always be refused.
 */
const PERMANENT = new Map<string, string>([
  ['301', 'XML mal formado / estructura inválida'],
  ['302', 'Sello mal formado o inválido'],
  ['303', 'Sello no corresponde a emisor'],
  ['304', 'Certificado revocado o caduco'],
  ['305', 'Fecha de emisión fuera de la vigencia del CSD'],
  ['306', 'El certificado no es de tipo CSD'],
  ['308', 'Certificado no expedido por el SAT'],
  ['401', 'Fecha de generación fuera del rango de 72 horas'],
  ['402', 'RFC del emisor no se encuentra en la LCO'],
  ['403', 'Fecha de emisión anterior a 2012'],
  ['702', 'Finkok: no se encontró el RFC del emisor en la cuenta'],
  ['705', 'Finkok: XML con estructura inválida'],
  ['707', 'Finkok: el XML ya contiene un TimbreFiscalDigital'],
]);

/** Codes that say the PAC did not process the request and may be asked again (or another PAC). */
const TRANSIENT = new Map<string, string>([
  ['708', 'Finkok: no se pudo conectar al SAT'],
  ['AU4101', 'SW: token inválido o expirado (re-authenticate)'],
  ['300', 'Finkok: usuario o contraseña inválidos'],
]);

// Transport errors that happen before a byte reaches the PAC: it cannot have processed anything.
const NOT_SENT_NETWORK = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
]);
// got's timeout phases before the request is written.
const NOT_SENT_TIMEOUT_PHASES = new Set(['lookup', 'connect', 'secureConnect']);

export interface Classification {
  outcome: PacOutcome;
  /** The PAC's code, or the transport's, for records and logs. */
  code: string;
  reason: string;
}

/** Classifies a failed PAC call. A successful stamp never comes here (it is `stamped`). */
export function classifyPacFailure(failure: PacFailure): Classification {
  switch (failure.type) {
    case 'network': {
      // Refused / unresolvable: the connection never existed.
      if (NOT_SENT_NETWORK.has(failure.code)) {
        return { outcome: 'transient', code: failure.code, reason: 'connection not established' };
      }
      // A timeout before the request was written (DNS, TCP, TLS) cannot have been processed.
      if (failure.code === 'ETIMEDOUT' && failure.timeoutPhase && NOT_SENT_TIMEOUT_PHASES.has(failure.timeoutPhase)) {
        return { outcome: 'transient', code: `ETIMEDOUT:${failure.timeoutPhase}`, reason: 'timed out before sending' };
      }
      // Any other failure before the body was fully written: the PAC never saw a complete document.
      if (!failure.sent) return { outcome: 'transient', code: failure.code, reason: 'request not fully sent' };
      // Sent, then no (complete) answer: timeout waiting for it or a reset mid-response. The PAC may
      // have stamped; only the same PAC can tell us.
      return {
        outcome: 'ambiguous',
        code: failure.timeoutPhase ? `ETIMEDOUT:${failure.timeoutPhase}` : failure.code,
        reason: 'no answer after the request was sent',
      };
    }
    case 'http': {
      if (failure.pacCode !== undefined) {
        const byCode = classifyPacCode(failure.pacCode);
        if (byCode) return byCode;
      }
      // 503 (unavailable) and 429 (rate limited) are answered before any processing.
      if (failure.status === 503 || failure.status === 429) {
        return { outcome: 'transient', code: `HTTP${failure.status}`, reason: 'refused before processing' };
      }
      // 401/403: authentication, checked before the document is looked at.
      if (failure.status === 401 || failure.status === 403) {
        return { outcome: 'transient', code: failure.pacCode ?? `HTTP${failure.status}`, reason: 'not authenticated' };
      }
      // Other 5xx (500, 502, 504): an error during or after processing, or a gateway that lost the
      // backend's answer. It may have stamped.
      if (failure.status >= 500) {
        return {
          outcome: 'ambiguous',
          code: failure.pacCode ?? `HTTP${failure.status}`,
          reason: 'server error; may have been processed',
        };
      }
      // Remaining 4xx: the PAC looked at the request and refused it.
      return { outcome: 'permanent', code: failure.pacCode ?? `HTTP${failure.status}`, reason: 'rejected by the PAC' };
    }
    case 'unreadable':
      // A 2xx we cannot read may well be a stamp.
      return { outcome: 'ambiguous', code: `UNREADABLE${failure.status}`, reason: 'unreadable answer' };
    case 'pac': {
      return (
        classifyPacCode(failure.pacCode) ?? {
          // An unknown code in a well-formed answer is a validation we do not know yet: the PAC
          // processed the document and refused it.
          outcome: 'permanent',
          code: failure.pacCode,
          reason: 'rejected by the PAC (unmapped code)',
        }
      );
    }
  }
}

/** The outcome a PAC code alone determines, or undefined when the code is not mapped. */
export function classifyPacCode(code: string): Classification | undefined {
  const normalized = normalizeCode(code);
  if (ALREADY_STAMPED.has(normalized))
    return { outcome: 'already_stamped', code: normalized, reason: 'stamped before: recover the original' };
  const permanent = PERMANENT.get(normalized);
  if (permanent) return { outcome: 'permanent', code: normalized, reason: permanent };
  // The SAT's CFDI 4.0 and Pagos 2.0 validations (CFDI40xxx, CRP20xxx) reject the document.
  if (/^CFDI40\d{3}$/.test(normalized))
    return { outcome: 'permanent', code: normalized, reason: 'validación CFDI 4.0 (SAT)' };
  if (/^CRP20\d{3}$/.test(normalized))
    return { outcome: 'permanent', code: normalized, reason: 'validación complemento de pagos 2.0 (SAT)' };
  const transient = TRANSIENT.get(normalized);
  if (transient) return { outcome: 'transient', code: normalized, reason: transient };
  return undefined;
}

/**
 * Extracts a PAC code from an SW message (`"307. El comprobante…"`, `"CFDI3307 - Timbre duplicado…"`)
 * or returns the input trimmed.
 */
export function normalizeCode(messageOrCode: string): string {
  const match = /^\s*([A-Z]*\d+)\s*[.\-:]?/.exec(messageOrCode);
  return match?.[1] ?? messageOrCode.trim();
}

/** Every code this classifier maps, for docs and the table test. */
export const MAPPED_PAC_CODES: readonly string[] = [...ALREADY_STAMPED, ...PERMANENT.keys(), ...TRANSIENT.keys()];
