// The stand-in PAC and its TFD live in @timbra/test-support (the API's tests stamp with them too).
import { testPac, testTfd } from '@timbra/test-support';

export const pac = testPac();
export const tfdFor = (selloCFD: string) => testTfd(selloCFD);
