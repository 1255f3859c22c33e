/**
 * Pure translators from a PAC's raw answer (HTTP status + body text) to what it means. The clients
 * do the I/O; these decide, and the classifier table test feeds them recorded answers.
 */
import { classifyPacCode, normalizeCode, type PacFailure } from './classify.ts';
import { findElement, soapBody, textOf } from './soap.ts';
import type { XmlElement } from '../xml/xml-node.ts';

export type PacAnswer =
  /** Stamped now: the TFD and/or the stamped CFDI as text. */
  | { kind: 'stamp'; tfdXml?: string; cfdi?: string }
  /** Stamped before (307 / CFDI3307): the original, when the PAC sent it. */
  | { kind: 'already'; code: string; tfdXml?: string; cfdi?: string }
  /** Finkok `stamped`: 603, never stamped. */
  | { kind: 'not_found'; code: string; message: string }
  | { kind: 'failure'; failure: PacFailure; message: string };

interface SwBody {
  status?: string;
  message?: string;
  messageDetail?: string;
  data?: { tfd?: unknown; cfdi?: unknown };
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);

/** SW stamp answers: `{ status, data: { tfd | cfdi | … }, message, messageDetail }`. */
export function translateSwStamp(status: number, text: string): PacAnswer {
  let body: SwBody;
  try {
    body = JSON.parse(text) as SwBody;
  } catch {
    // A 2xx we cannot read may be a stamp; any other status is a refusal without a readable code.
    return status < 300
      ? { kind: 'failure', failure: { type: 'unreadable', status }, message: 'unreadable answer' }
      : { kind: 'failure', failure: { type: 'http', status }, message: `HTTP ${status}` };
  }
  const tfdXml = str(body.data?.tfd);
  const cfdi = str(body.data?.cfdi);
  const original = { ...(tfdXml ? { tfdXml } : {}), ...(cfdi ? { cfdi } : {}) };
  if (body.status === 'success' && status < 300) {
    if (!tfdXml && !cfdi)
      return { kind: 'failure', failure: { type: 'unreadable', status }, message: 'success without a stamp' };
    return { kind: 'stamp', ...original };
  }
  const message = `${body.message ?? `HTTP ${status}`}${body.messageDetail ? ` — ${body.messageDetail}` : ''}`;
  const code = body.message ? normalizeCode(body.message) : undefined;
  if (code && classifyPacCode(code)?.outcome === 'already_stamped') return { kind: 'already', code, ...original };
  return {
    kind: 'failure',
    failure: { type: 'http', status: status < 300 ? 400 : status, ...(code ? { pacCode: code } : {}) },
    message,
  };
}

/** Finkok SOAP answers to `stamp` / `quick_stamp` / `stamped`: a result with `xml`, `UUID`, `Incidencias`. */
export function translateFinkokStamp(status: number, text: string, operation: string): PacAnswer {
  let body: XmlElement | undefined;
  try {
    body = soapBody(text);
  } catch {
    body = undefined;
  }
  if (status >= 300 || !body || body.local === 'Fault') {
    const fault = body ? textOf(findElement(body, 'faultstring')) : '';
    const failure: PacFailure = status < 300 ? { type: 'unreadable', status } : { type: 'http', status };
    return { kind: 'failure', failure, message: fault || `HTTP ${status}` };
  }
  const result = findElement(body, `${operation}Result`) ?? body;
  const cfdi = textOf(findElement(result, 'xml')) || undefined;
  const incidencia = findElement(result, 'Incidencia');
  if (!incidencia) {
    return cfdi
      ? { kind: 'stamp', cfdi }
      : { kind: 'failure', failure: { type: 'unreadable', status }, message: 'answer without xml' };
  }
  const code = normalizeCode(textOf(findElement(incidencia, 'CodigoError')));
  const message = textOf(findElement(incidencia, 'MensajeIncidencia'));
  if (code === '603') return { kind: 'not_found', code, message };
  if (classifyPacCode(code)?.outcome === 'already_stamped') return { kind: 'already', code, ...(cfdi ? { cfdi } : {}) };
  return { kind: 'failure', failure: { type: 'pac', pacCode: code }, message };
}
