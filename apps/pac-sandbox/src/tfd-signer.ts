import { randomUUID, sign as rsaSign } from 'node:crypto';
import { promisify } from 'node:util';
import {
  cadenaOriginalTfd,
  formatFecha,
  NS,
  SCHEMA_LOCATION,
  serializeElement,
  type Csd,
  type XmlElement,
} from '@timbra/cfdi-core';

// The callback form of crypto.sign runs in libuv's thread pool: RSA never blocks the event loop.
const signAsync = promisify(rsaSign);

export interface SignedTfd {
  uuid: string;
  fechaTimbrado: string;
  tfdXml: string;
  cadenaOriginal: string;
  selloSAT: string;
}

/** Signs TimbreFiscalDigital 1.1 stamps with the sandbox PAC's certificate. */
export class TfdSigner {
  constructor(
    private readonly pacCsd: Csd,
    private readonly rfcProvCertif: string,
  ) {}

  get noCertificadoSat(): string {
    return this.pacCsd.noCertificado;
  }

  /** A new TFD for a comprobante whose Sello is `selloCFD`: UUID v4, FechaTimbrado in Zona Centro. */
  async sign(selloCFD: string, now: Date): Promise<SignedTfd> {
    const uuid = randomUUID().toUpperCase();
    const fechaTimbrado = formatFecha(now, 'America/Mexico_City');
    const element: XmlElement = {
      kind: 'element',
      ns: NS.tfd,
      name: 'tfd:TimbreFiscalDigital',
      local: 'TimbreFiscalDigital',
      attrs: [
        ['xmlns:tfd', NS.tfd],
        ['xmlns:xsi', NS.xsi],
        ['xsi:schemaLocation', SCHEMA_LOCATION.tfd],
        ['Version', '1.1'],
        ['UUID', uuid],
        ['FechaTimbrado', fechaTimbrado],
        ['RfcProvCertif', this.rfcProvCertif],
        ['SelloCFD', selloCFD],
        ['NoCertificadoSAT', this.pacCsd.noCertificado],
      ],
      children: [],
    };
    const cadenaOriginal = cadenaOriginalTfd(element);
    // RSA PKCS#1 v1.5 + SHA-256 over the UTF-8 cadena: the same sello as cfdi-core's `sellar`.
    const signature = await signAsync('sha256', Buffer.from(cadenaOriginal, 'utf8'), this.pacCsd.privateKey);
    const selloSAT = signature.toString('base64');
    element.attrs.push(['SelloSAT', selloSAT]);
    return { uuid, fechaTimbrado, tfdXml: serializeElement(element), cadenaOriginal, selloSAT };
  }
}
