export {
  SAT_DIR,
  CFDI_XSLT,
  TFD_XSLT,
  loadTestCsd,
  satTestCsdFiles,
  testCsdFiles as csdBytes,
  satXslt,
  SchemaValidator,
  type TestRfc,
} from '@timbra/test-support';
