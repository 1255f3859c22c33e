import type { PrismaClient } from '@timbra/db';
import { ensureEmisor, ensureSeries } from '@timbra/db/invoices';
import { syncConfiguredApiKeys, type Scope } from '@timbra/db/keys';

/**
 * Makes the database reflect the configuration: the emisor row, its series (Ingreso, Egreso, Pago), and
 * the API keys from API_KEYS (stored hashed; a key it no longer lists is revoked — keys made with
 * keys:create or POST /v1/keys are left alone). Idempotent; safe with several API replicas.
 */
export async function bootstrap(
  prisma: PrismaClient,
  config: {
    emisor: { rfc: string; nombre: string; regimenFiscal: string; lugarExpedicion: string };
    series: { serie: string; kind: 'I' | 'E' | 'P' }[];
    apiKeys: { name: string; key: string; scopes: readonly Scope[] }[];
  },
): Promise<{ emisorId: string; revokedKeys: string[] }> {
  const emisorId = await ensureEmisor(prisma, config.emisor);
  await ensureSeries(prisma, emisorId, config.series);
  const revokedKeys = await syncConfiguredApiKeys(prisma, config.apiKeys);
  return { emisorId, revokedKeys };
}
