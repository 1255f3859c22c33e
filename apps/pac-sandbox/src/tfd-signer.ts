import { randomUUID } from 'node:crypto';
import {
  cadenaOriginalTfd,
  formatFecha,
  NS,
  SCHEMA_LOCATION,
  sellar,
  serializeElement,
  type Csd,
  type XmlElement,
} from '@timbra/cfdi-core';

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
  sign(
    selloCFD: string,
    now: Date,
  ): { uuid: string; fechaTimbrado: string; tfdXml: string; cadenaOriginal: string; selloSAT: string } {
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
    const selloSAT = sellar(cadenaOriginal, this.pacCsd.privateKey);
    element.attrs.push(['SelloSAT', selloSAT]);
    return { uuid, fechaTimbrado, tfdXml: serializeElement(element), cadenaOriginal, selloSAT };
  }
}
