import type { PrismaClient } from '@timbra/db';
import { ensureSeries } from '@timbra/db/invoices';
import { syncConfiguredApiKeys, type Scope } from '@timbra/db/keys';

/**
 * Makes the database reflect the configuration, on the organization's own client (`openOrganization`
 * made its row): its series (Ingreso, Egreso, Pago), and the API keys from API_KEYS (stored hashed;
 * a key it no longer lists is revoked — keys made with keys:create or POST /v1/keys are left alone).
 * Idempotent; safe with several API replicas.
 */
export async function bootstrap(
  prisma: PrismaClient,
  config: {
    organizationId: string;
    series: { serie: string; kind: 'I' | 'E' | 'P' }[];
    apiKeys: { name: string; key: string; scopes: readonly Scope[] }[];
  },
): Promise<{ revokedKeys: string[] }> {
  await ensureSeries(prisma, config.organizationId, config.series);
  const revokedKeys = await syncConfiguredApiKeys(prisma, config.organizationId, config.apiKeys);
  return { revokedKeys };
}
