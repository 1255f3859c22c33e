/**
 * @timbra/cfdi-node — the Node adapters of @timbra/cfdi-core, which does no I/O: the PAC clients
 * over node:http (SW, Finkok, the SAT's status service, the PAC sandbox's ledger), and what the core
 * is given as bytes or objects read from files here (the PDF's fonts, the merchant's logo, the
 * operator's catalogues, the SAT's schemas). The freeze CLI lives
 * here too (`npm run freeze`).
 */
export {
  DEFAULT_TIMEOUTS,
  networkFailure,
  PacHttp,
  PacTransportError,
  type PacHttpPhase,
  type PacHttpResponse,
  type PacTimeouts,
} from './pac/http.ts';
export { multipartXml, SwClient, type SwClientConfig } from './pac/sw-client.ts';
export { FinkokClient, type FinkokClientConfig } from './pac/finkok-client.ts';
export { SatStatusClient } from './pac/sat-status-client.ts';
export { sandboxLedger, type LedgerStamp, type PacLedger } from './pac/ledger-client.ts';
export { dejavuFonts } from './fonts.ts';
export { invoiceLogoProblem, MAX_LOGO_BYTES, readInvoiceLogo } from './invoice-logo.ts';
export { catalogsFromSettings, loadCatalogKeys, readOperatorCatalogs } from './catalog-files.ts';
export { schemaFiles } from './schema-files.ts';
export { emisorCsd, readCsdFiles, vaultOf, type EmisorCsd } from './emisor-csd.ts';
export { csdContext, openCsd, sealCsd, type CsdFiles, type SealedCsd } from './csd-store.ts';
export {
  LocalKeyVault,
  VaultError,
  openSecret,
  sealSecret,
  type KeyVault,
  type SealedSecret,
  type VaultErrorCode,
  type WrappedKey,
} from './vault.ts';
export {
  descargaEndpoints,
  descargaService,
  DESCARGA_SERVICE_PATHS,
  fielOf,
  PacHttpWebClient,
  type Efirma,
} from './sat/descarga-service.ts';
export { EstadoCfdiClient, estadoConsumer } from './sat/estado-client.ts';
export {
  DEFAULT_SAT_WAIT,
  satCfdi,
  satIssued,
  SatRecordError,
  type SatRecordRow,
  type SatWait,
} from './sat/sat-record.ts';
export { efirmaFiles } from './sat/efirma-files.ts';
export { efirmaContext, openEfirma, sealEfirma, type SealedEfirma } from './sat/efirma-store.ts';
