/**
 * The two SAT catalogues too large for sat/catalogos — c_ClaveProdServ (~52,000 keys) and
 * c_CodigoPostal (~95,000) — as an operator supplies them (read from files by
 * `@timbra/cfdi-node`'s `readOperatorCatalogs`, once at start-up). Given to the rules in their
 * context, they make CFDI40162, CFDI40126 and CFDI40147 check membership instead of shape.
 */
import type { RuleContext } from './rule.ts';

/** The operator's catalogues (either absent: that catalogue is checked by shape). */
export type OperatorCatalogs = Pick<RuleContext, 'clavesProdServ' | 'codigosPostales'>;

/** c_ClaveProdServ keys: 8 digits. */
export const CLAVE_PROD_SERV_SHAPE = /^[0-9]{8}$/;
/** c_CodigoPostal keys: 5 digits. */
export const CODIGO_POSTAL_SHAPE = /^[0-9]{5}$/;
