import { ensureSeries, type PrismaClient } from '@timbra/db';
import { hashApiKey } from './http/auth.ts';

/**
 * Makes the database reflect the configuration: the emisor row, its series (Ingreso, Egreso, Pago), and
 * the API clients from API_KEYS (stored hashed). Idempotent; safe with several API replicas.
 */
export async function bootstrap(
  prisma: PrismaClient,
  config: {
    emisor: { rfc: string; nombre: string; regimenFiscal: string; lugarExpedicion: string };
    series: { serie: string; kind: 'I' | 'E' | 'P' }[];
    apiKeys: { name: string; key: string; admin: boolean }[];
  },
): Promise<{ emisorId: string }> {
  const emisor = await prisma.emisor.upsert({
    where: { rfc: config.emisor.rfc },
    create: config.emisor,
    update: {
      nombre: config.emisor.nombre,
      regimenFiscal: config.emisor.regimenFiscal,
      lugarExpedicion: config.emisor.lugarExpedicion,
    },
  });
  await ensureSeries(prisma, emisor.id, config.series);
  for (const k of config.apiKeys) {
    const keyHash = hashApiKey(k.key);
    await prisma.apiClient.upsert({
      where: { name: k.name },
      create: { name: k.name, keyHash, admin: k.admin },
      update: { keyHash, admin: k.admin },
    });
  }
  return { emisorId: emisor.id };
}
