/**
 * The QR of a CFDI's printed representation: the SAT's verification URL (Anexo 20, "Estándar del
 * CFDI", representación impresa): the UUID, the emisor's and receptor's RFCs, the total and the last
 * eight characters of the emisor's Sello.
 */
export const SAT_VERIFICATION_URL = 'https://verificacfdi.facturaelectronica.sat.gob.mx/default.aspx';

/**
 * The total as the QR carries it: at most 18 integer digits and 6 decimals, without non-significant
 * zeros before or after the point — the SAT's own example prints 1000 as `1000.0`, so one decimal
 * digit always stays. `total` is the comprobante's Total attribute (a decimal string, never a float).
 */
export function verificationTotal(total: string): string {
  const match = /^(\d{1,18})(?:\.(\d{1,6}))?$/.exec(total);
  if (!match) throw new RangeError(`not a CFDI total (18 integer digits, 6 decimals at most): ${total}`);
  const integer = match[1]!.replace(/^0+(?=\d)/, '');
  const decimals = (match[2] ?? '0').replace(/0+$/, '') || '0';
  return `${integer}.${decimals}`;
}

export interface VerificationFields {
  uuid: string;
  rfcEmisor: string;
  rfcReceptor: string;
  /** The comprobante's Total attribute. */
  total: string;
  /** The emisor's Sello (base64). */
  sello: string;
}

/** `https://verificacfdi…/default.aspx?id=<UUID>&re=<RFC>&rr=<RFC>&tt=<total>&fe=<last 8 of the Sello>`. */
export function satVerificationUrl(fields: VerificationFields): string {
  if (fields.sello.length < 8) throw new RangeError('the Sello is shorter than eight characters');
  const query = [
    ['id', fields.uuid.toUpperCase()],
    ['re', fields.rfcEmisor],
    ['rr', fields.rfcReceptor],
    ['tt', verificationTotal(fields.total)],
    ['fe', fields.sello.slice(-8)],
  ]
    // As the SAT's example writes it (`fe=rH8/bw==`): values raw, the Sello's + / = included; only an
    // RFC's & (a persona moral's name may give one) is escaped, or it would end the value.
    .map(([key, value]) => `${key}=${value!.replaceAll('&', '%26')}`)
    .join('&');
  return `${SAT_VERIFICATION_URL}?${query}`;
}
