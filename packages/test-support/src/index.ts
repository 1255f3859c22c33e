/**
 * @timbra/test-support — what every workspace's tests and benchmarks share: the SAT reference files
 * and test CSDs, the SAT oracles from npm (XSLT with SaxonJS, XSD with libxml2 as WebAssembly),
 * sample invoices, ports, polling and CPU readings. Never imported by runtime code.
 */
export {
  SAT_DIR,
  CFDI_XSLT,
  TFD_XSLT,
  TEST_EMISOR,
  TEST_RECEPTOR,
  loadTestCsd,
  satTestCertificatePath,
  satTestCsdFiles,
  testCsdFiles,
  testCsdPaths,
  type TestRfc,
} from './sat-files.ts';
export { CLOCK_MARK, isClockMarked, requireClockMark } from './clock-mark.ts';
export {
  certificateVariant,
  forgeSatIssuedCertificate,
  reissueCertificate,
  stableTempFile,
  testCaFile,
  testCaPem,
  testCsdFor,
  testEfirmaFor,
  TEST_CERTIFICATE_END,
} from './test-ca.ts';
export { sampleIngreso, withConcepto, freezeSample, rawVerifySignRate, testPac, testTfd, TINY_PNG } from './samples.ts';
export {
  freePort,
  freePorts,
  eventually,
  privateRedisArgs,
  cpuMs,
  documentedVariables,
  percentile,
  realClockEnv,
  runEntryPoint,
  tsEntryArgs,
} from './system.ts';
export {
  apiCall,
  apiAnswer,
  makeOrganizationWithCsd,
  type ApiAnswer,
  makeStripeOrganizations,
  makeSyntheticOrganizations,
  registerTaxpayer,
  syntheticOrganization,
  type OrganizationFacts,
} from './organizations.ts';
export { startRedisCluster, type RedisClusterProcess } from './redis-cluster.ts';
export { prepareSatXslt, satXslt } from './xslt-oracle.ts';
export { SchemaValidator } from './xsd-oracle.ts';
export { composeEnvironment, composeFile, composeSecret, type ComposeFile, type ComposeService } from './compose.ts';
export { startMailbox, type Mailbox, type MailFault, type ReceivedMail } from './mailbox.ts';
export { alertRules, alertDrift, exportedSeries, metricsIn, type AlertRule } from './alerts-doc.ts';
export {
  startProviderSandbox,
  providerSandboxEnv,
  providerSecrets,
  stripeSignatureHeader,
  type ProviderSandboxSettings,
  type RunningProviderSandbox,
} from './provider-sandbox.ts';
export { ProviderSandboxClient, type DeliveryRecord } from '@timbra/provider-client';
