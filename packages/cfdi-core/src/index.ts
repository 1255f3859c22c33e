/**
 * @timbra/cfdi-core — the CFDI 4.0 domain: validate an invoice request, freeze it into sealed XML
 * with a deterministic Fecha and stamp key, compute cadenas originales exactly as the SAT's XSLT,
 * and read stamped CFDIs and their TimbreFiscalDigital.
 */
export { CfdiError, CfdiErrorCode, CfdiValidationError, type ValidationIssue } from './errors.ts';
export {
  freezeComprobante,
  tryFreeze,
  preflight,
  totalsOf,
  refreshFecha,
  tryRefreshFecha,
  type FrozenCfdi,
  type RefreshedCfdi,
} from './freeze.ts';
export { withRelatedUuid, relatedTaxes } from './build/related.ts';
export {
  conceptosForSale,
  type SaleLine,
  type LineTaxes,
  type SalePlan,
  type LinesMismatch,
} from './build/sale-lines.ts';
export { conceptoOf } from './build/sale-bases.ts';
export {
  invoiceRequestSchema,
  type InvoiceRequest,
  type InvoiceRequestInput,
  type ConceptoRequest,
  type PagoRequest,
  type DoctoRelacionadoRequest,
} from './validate/request-schema.ts';
export { validateInvoiceRequest } from './validate/validate-request.ts';
export {
  SAT_RULES,
  checkSatRules,
  assertSatRules,
  violationIssues,
  tasaOCuotaAllowed,
  NOMBRE_PUBLICO_GENERAL,
  CLAVE_PROD_SERV_SHAPE,
  CODIGO_POSTAL_SHAPE,
  type OperatorCatalogs,
  type SatRule,
  type RuleStatus,
  type RuleViolation,
  type RuleContext,
  type Taxpayer,
} from './rules/index.ts';
export { rfcKind, RFC_PUBLICO_GENERAL, RFC_EXTRANJERO } from './validate/rfc.ts';
export * as catalogs from './validate/catalogs.ts';
export { usoCfdiAllowed, usoCfdiFor } from './validate/uso-cfdi.ts';
export { fiscalSettingsProblems, periodicidadFor, type FiscalSettings } from './validate/settings.ts';
export { hasNonXmlChar, isBlank, normalizeSpace } from './validate/text.ts';
export { formatFecha, instantOf, timeZoneForCodigoPostal, DEFAULT_TIME_ZONE, STAMP_WINDOW_MS } from './fecha.ts';
export {
  loadCsd,
  assertCsdUsable,
  csdExpiry,
  csdExpiryWarning,
  CSD_EXPIRY_WARNING_DAYS,
  noCertificadoOf,
  rfcOf,
  type Csd,
  type CsdExpiry,
} from './csd/csd.ts';
export {
  checkCsdUpload,
  checkEfirmaUpload,
  chainsTo,
  readCertificates,
  satCertificateKind,
  type CsdUploadCheck,
} from './csd/csd-upload.ts';
export { sellar, verificarSello } from './csd/sello.ts';
export { sourceIdIn, stampKeyFor, type StampKind } from './stamp-key.ts';
export { cadenaOriginal, cadenaOriginalTfd } from './cadena/cadena-original.ts';
export { parseXml } from './xml/parse-xml.ts';
export { serializeXml } from './xml/serialize-xml.ts';
export { NS, SCHEMA_LOCATION, attr, setAttr, childElements, type XmlElement, type XmlNode } from './xml/xml-node.ts';
export {
  parseStampedCfdi,
  parseTfd,
  readTfd,
  verifyTfd,
  insertTfd,
  stampedXmlOf,
  type Tfd,
  type StampedCfdi,
} from './tfd.ts';
export { serializeElement } from './xml/serialize-xml.ts';
export {
  classifyPacFailure,
  classifyPacCode,
  normalizeCode,
  MAPPED_PAC_CODES,
  type PacOutcome,
  type PacFailure,
  type Classification,
} from './pac/classify.ts';
export { PacError, PacErrorCode } from './pac/pac-errors.ts';
export type {
  PacClient,
  StampResult,
  StampOptions,
  CancelRequest,
  CancelResult,
  CancelMotivo,
  StatusRequest,
  StatusResult,
} from './pac/pac-client.ts';
export { selloOf, tfdXmlOf, stampResultFromTfd } from './pac/stamp-result.ts';
export { escapeXml, soapBody, soapEnvelope, textElement, findElement, findElements, textOf } from './pac/soap.ts';
export { translateSwStamp, translateFinkokStamp, type PacAnswer } from './pac/translate.ts';
export { SAT_TEST_RFCS, SAT_TEST_TAXPAYERS, SANDBOX_EMISOR, productionEmisorProblems } from './sandbox-profile.ts';
export { catalogSchema, SCHEMA_FOLDERS, SCHEMA_WRAPPER } from './validate/catalog-schema.ts';
export {
  parseAmount,
  parseMinorUnits,
  amountDecimals,
  MAX_AMOUNT,
  type AmountResult,
  type AmountProblem,
} from './amount.ts';
export { amountInWords } from './print/amount-in-words.ts';
export {
  SAT_VERIFICATION_URL,
  satVerificationUrl,
  verificationTotal,
  type VerificationFields,
} from './print/verification-url.ts';
export { printableCfdi, type PrintableCfdi, type PrintableConcepto, type PrintablePago } from './print/printable.ts';
export { brandedPdf, renderCfdiPdf, verificationQrPng, type PdfFonts, type PdfOptions } from './print/pdf.ts';
export {
  customerCopy,
  customerCopyZip,
  documentFileName,
  type CustomerCopy,
  type StampedDocument,
} from './print/customer-copy.ts';
export {
  globalPeriodOf,
  globalPeriodByStart,
  nextGlobalPeriod,
  periodLabel,
  GLOBAL_DEADLINE_MS,
  PERIODICIDAD_NAMES,
  type GlobalPeriod,
  type Periodicidad,
} from './global/periods.ts';
export {
  buildGlobalRequest,
  chunkTickets,
  globalFormaPago,
  globalSourceId,
  MAX_CONCEPTOS,
  netTicketParts,
  splitInProportion,
  taxProfileKey,
  ticketParts,
  type GlobalEmisor,
  type GlobalTicket,
  type TicketPart,
} from './global/global-invoice.ts';
