export {
  SAT_DIR,
  CFDI_XSLT,
  TFD_XSLT,
  loadTestCsd,
  testCsdFiles as csdBytes,
  xsltproc,
  SchemaValidator,
  type TestRfc,
} from '../../src/testing.ts';
