/**
 * Writes deploy/sandbox-csd/: the SAT test emisor's certificate re-issued by the tests' CA (valid until
 * 2099, same NoCertificado and key as the SAT's, which ends 2027-05-18) and that CA's certificate, for
 * the compose file's sandbox profile (its API and worker seal with it; its PAC sandbox trusts the CA).
 * The bytes are deterministic; apps/api/test/compose.test.ts fails when these files drift from them.
 *
 *   npx tsx --conditions=@timbra/source scripts/sandbox-csd.ts
 */
import { writeFileSync } from 'node:fs';
import { testCaPem, testCsdFiles } from '@timbra/test-support';

const dir = new URL('../deploy/sandbox-csd/', import.meta.url);
writeFileSync(new URL('EKU9003173C9.cer', dir), testCsdFiles('EKU9003173C9').cer);
writeFileSync(new URL('test-ca.pem', dir), testCaPem());
process.stdout.write('wrote deploy/sandbox-csd/EKU9003173C9.cer and test-ca.pem\n');
