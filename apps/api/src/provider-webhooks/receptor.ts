import { namedReceptor, type ReceptorInput } from '../payments/build-ingreso.ts';

/**
 * The customer's fiscal data from a payment's metadata. Keys (documented in docs/api.md):
 * `rfc`, `razon_social`, `regimen_fiscal`, `codigo_postal`, `uso_cfdi`, and for a foreign customer
 * `residencia_fiscal`, `num_reg_id_trib`. Without `rfc` (or with público en general written out) the
 * invoice goes to público en general; with `rfc` but missing fields it is recorded as needing data.
 */
export function receptorFromMetadata(metadata: Record<string, unknown> | null | undefined): ReceptorInput | null {
  const get = (k: string) => (typeof metadata?.[k] === 'string' ? metadata[k].trim() : '');
  const rfc = get('rfc').toUpperCase();
  if (!rfc) return null;
  const residenciaFiscal = get('residencia_fiscal').toUpperCase();
  const numRegIdTrib = get('num_reg_id_trib');
  return namedReceptor({
    rfc,
    nombre: get('razon_social'),
    regimenFiscal: get('regimen_fiscal'),
    codigoPostal: get('codigo_postal'),
    usoCfdi: get('uso_cfdi').toUpperCase(),
    ...(residenciaFiscal ? { residenciaFiscal } : {}),
    ...(numRegIdTrib ? { numRegIdTrib } : {}),
  });
}
