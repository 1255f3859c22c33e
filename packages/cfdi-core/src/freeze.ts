import { buildComprobante } from './build/build-comprobante.ts';
import { assertSatRules, type RuleContext } from './rules/index.ts';
import { computePago } from './build/compute-pagos.ts';
import { computeAmounts } from './build/compute-totals.ts';
import { cadenaOriginal } from './cadena/cadena-original.ts';
import { CfdiError, CfdiValidationError, type ValidationIssue } from './errors.ts';
import { assertCsdUsable, type Csd } from './csd/csd.ts';
import { sellar } from './csd/sello.ts';
import { formatFecha, timeZoneForCodigoPostal } from './fecha.ts';
import { stampKeyFor } from './stamp-key.ts';
import type { InvoiceRequest } from './validate/request-schema.ts';
import { validateInvoiceRequest } from './validate/validate-request.ts';
import { parseXml } from './xml/parse-xml.ts';
import { serializeXml } from './xml/serialize-xml.ts';
import { attr, setAttr, type XmlElement } from './xml/xml-node.ts';

/** A frozen comprobante: sealed XML whose bytes never change again. */
export interface FrozenCfdi {
  /** The sealed XML (UTF-8 text) — the bytes every PAC call sends. */
  xml: string;
  cadenaOriginal: string;
  sello: string;
  noCertificado: string;
  /** Fecha as written (`YYYY-MM-DDThh:mm:ss`, local time of LugarExpedicion). */
  fecha: string;
  /** IANA zone Fecha was computed in. */
  timeZone: string;
  /** Idempotency key of this document at the PAC and in the queue. */
  stampKey: string;
  tipoDeComprobante: InvoiceRequest['tipoDeComprobante'];
  subTotal: string;
  descuento?: string;
  total: string;
  moneda: string;
  /** The validated request, defaults applied. */
  request: InvoiceRequest;
}

/**
 * Validates, builds, and seals a comprobante. Pure and deterministic: the same request and CSD give
 * the same bytes on every call and in every process (no clock, no randomness; RSA PKCS#1 v1.5
 * signatures are deterministic).
 *
 * @param input an invoice request (see `InvoiceRequestInput`); validated here.
 * @param csd the emisor's CSD from `loadCsd`.
 * @param rules what the SAT rules may consult besides the document: the operator's catalogues
 *   (c_ClaveProdServ, c_CodigoPostal; without them those are checked by shape).
 * @throws CfdiValidationError CFDI_INVALID_REQUEST listing every problem of the request.
 * @throws CfdiError CSD_RFC_MISMATCH / CSD_EXPIRED when the CSD cannot seal this comprobante.
 */
export function freezeComprobante(input: unknown, csd: Csd, rules: RuleContext = {}): FrozenCfdi {
  const { request, tree, fecha, timeZone, amounts } = prepareComprobante(input, csd, rules);
  return {
    ...seal(tree, csd),
    noCertificado: csd.noCertificado,
    fecha,
    timeZone,
    stampKey: stampKeyFor(request.emisor.rfc, request.tipoDeComprobante, request.sourceId),
    tipoDeComprobante: request.tipoDeComprobante,
    subTotal: amounts.subTotal,
    ...(amounts.descuento !== undefined ? { descuento: amounts.descuento } : {}),
    total: amounts.total,
    moneda: request.moneda,
    request,
  };
}

/**
 * `freezeComprobante` for callers that keep an invoice they cannot freeze (status `needs_data`):
 * the frozen CFDI, or the problems — every validation issue, or the CSD's error as one issue at
 * `csd`. Anything else (a bug) is thrown.
 */
export function tryFreeze(
  input: unknown,
  csd: Csd,
  rules: RuleContext = {},
): { frozen: FrozenCfdi; problems?: undefined } | { frozen?: undefined; problems: ValidationIssue[] } {
  try {
    return { frozen: freezeComprobante(input, csd, rules) };
  } catch (error) {
    return { problems: problemsOf(error) };
  }
}

/**
 * A refusal to freeze as the issues a caller keeps: every validation issue, or the CSD's error as one
 * issue at `csd`. Anything else (a bug) is thrown again.
 */
function problemsOf(error: unknown): ValidationIssue[] {
  if (error instanceof CfdiValidationError) return [...error.issues];
  if (error instanceof CfdiError) return [{ path: 'csd', message: `${error.code}: ${error.message}` }];
  throw error;
}

/** Computes the cadena of a tree whose Sello is empty, signs it, and writes the Sello in. */
function seal(tree: XmlElement, csd: Csd): { xml: string; cadenaOriginal: string; sello: string } {
  const cadena = cadenaOriginal(tree);
  const sello = sellar(cadena, csd.privateKey);
  setAttr(tree, 'Sello', sello);
  return { xml: serializeXml(tree), cadenaOriginal: cadena, sello };
}

/**
 * What freezing this request would refuse, without sealing it: the request's problems, the CSD's, and
 * every SAT rule its document breaks (issues with `rule` set). Empty when it can be frozen. The API
 * asks this before it takes a folio, so a request that breaks a rule never uses one up.
 */
export function preflight(input: unknown, csd: Csd, rules: RuleContext = {}): ValidationIssue[] {
  try {
    prepareComprobante(input, csd, rules);
    return [];
  } catch (error) {
    return problemsOf(error);
  }
}

/** A document sealed again with a fresh Fecha (see `refreshFecha`). */
export interface RefreshedCfdi {
  xml: string;
  cadenaOriginal: string;
  sello: string;
  fecha: string;
  subTotal: string;
  total: string;
}

/**
 * The same document with a fresh Fecha, sealed again with `csd` (NoCertificado and Certificado too):
 * the next version of a document whose Fecha left — or is leaving — the PACs' 72-hour window, nothing
 * else changed. For a document frozen by `freezeComprobante`, the bytes are those that freezing its
 * request with `issuedAt` gives (a test holds it). The SAT rules run on it as on any freeze.
 *
 * @throws CfdiError CSD_RFC_MISMATCH / CSD_EXPIRED; CfdiValidationError when a rule is broken.
 */
export function refreshFecha(frozenXml: string, csd: Csd, issuedAt: Date, rules: RuleContext = {}): RefreshedCfdi {
  const tree = parseXml(frozenXml);
  const emisor = tree.children.find((c) => c.kind === 'element' && c.local === 'Emisor');
  assertCsdUsable(csd, (emisor?.kind === 'element' && attr(emisor, 'Rfc')) || '', issuedAt);
  const fecha = formatFecha(issuedAt, timeZoneForCodigoPostal(attr(tree, 'LugarExpedicion') ?? ''));
  setAttr(tree, 'Fecha', fecha);
  setAttr(tree, 'Sello', '');
  setAttr(tree, 'NoCertificado', csd.noCertificado);
  setAttr(tree, 'Certificado', csd.certificadoBase64);
  assertSatRules(tree, rules);
  return {
    ...seal(tree, csd),
    fecha,
    subTotal: attr(tree, 'SubTotal') ?? '',
    total: attr(tree, 'Total') ?? '',
  };
}

/** `refreshFecha`, or its problems (as `tryFreeze` gives them). */
export function tryRefreshFecha(
  frozenXml: string,
  csd: Csd,
  issuedAt: Date,
  rules: RuleContext = {},
): { frozen: RefreshedCfdi; problems?: undefined } | { frozen?: undefined; problems: ValidationIssue[] } {
  try {
    return { frozen: refreshFecha(frozenXml, csd, issuedAt, rules) };
  } catch (error) {
    return { problems: problemsOf(error) };
  }
}

/**
 * Everything freezing does before the cadena: validation, CSD checks, Fecha, amounts, and the tree
 * with an empty Sello. Internal (the benchmark measures the cadena on exactly this tree).
 */
export function prepareComprobante(input: unknown, csd: Csd, rules: RuleContext = {}) {
  const request = validateInvoiceRequest(input);
  const issuedAt = new Date(request.issuedAt);
  assertCsdUsable(csd, request.emisor.rfc, issuedAt);

  const timeZone = request.timeZone ?? timeZoneForCodigoPostal(request.lugarExpedicion);
  const fecha = formatFecha(issuedAt, timeZone);
  const amounts = computeAmounts(request);
  const pago = request.pago
    ? { amounts: computePago(request.pago), fechaPago: formatFecha(new Date(request.pago.fechaPago), timeZone) }
    : undefined;

  const tree = buildComprobante({
    request,
    fecha,
    noCertificado: csd.noCertificado,
    certificado: csd.certificadoBase64,
    amounts,
    ...(pago ? { pago } : {}),
  });
  // The SAT's rules on the very document that will be sealed: what breaks one is never frozen.
  assertSatRules(tree, rules);
  return { request, tree, fecha, timeZone, amounts };
}

/**
 * The amounts a request's document would carry (SubTotal, Descuento, Total), without sealing it:
 * validation and the same arithmetic as freezing. For checks that must run on many amounts.
 * @throws CfdiValidationError as freezeComprobante does.
 */
export function totalsOf(input: unknown): { subTotal: string; descuento?: string; total: string } {
  const { subTotal, descuento, total } = computeAmounts(validateInvoiceRequest(input));
  return { subTotal, ...(descuento !== undefined ? { descuento } : {}), total };
}
