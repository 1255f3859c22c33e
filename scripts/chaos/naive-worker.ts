/**
 * A DELIBERATELY BROKEN stamper, for `npm run chaos -- --variant naive`: it shows that the chaos run
 * can fail. It does what a first version of this kind of system usually does:
 *
 * - it fails over to the backup PAC on *any* error, also after a timeout or a reset once the
 *   request was sent — when the primary may have stamped (a second PAC stamps the same sale again);
 * - it sends a fresh idempotency key on every attempt (so the PAC cannot recognise a resend);
 * - it saves the UUID after stamping in statements of its own, outside any transaction.
 *
 * Never used by the product. Environment: DATABASE_URL, PAC_PRIMARY_URL, PAC_BACKUP_URL,
 * PAC_USER, PAC_PASSWORD.
 */
import { randomUUID } from 'node:crypto';
import { type StampResult } from '@timbra/cfdi-core';
import { SwClient } from '@timbra/cfdi-node';
import { createPrisma } from '@timbra/db';

const env = process.env as Record<string, string>;
const prisma = createPrisma(env.DATABASE_URL!, { poolSize: 4 });
const client = (name: string, baseUrl: string) =>
  new SwClient({
    name,
    baseUrl,
    user: env.PAC_USER!,
    password: env.PAC_PASSWORD!,
    satStatusUrl: `${baseUrl}/ConsultaCFDIService.svc`,
    timeouts: { connectMs: 1000, responseMs: 2000 },
  });
const primary = client('primary', env.PAC_PRIMARY_URL!);
const backup = client('backup', env.PAC_BACKUP_URL!);

async function stamp(xml: string): Promise<StampResult> {
  try {
    return await primary.stamp(xml, { idempotencyKey: randomUUID() });
  } catch {
    return backup.stamp(xml, { idempotencyKey: randomUUID() });
  }
}

for (;;) {
  const rows = await prisma.$queryRaw<{ outbox_id: string; invoice_id: string; frozen_xml: string }[]>`
    SELECT o.id AS outbox_id, i.id AS invoice_id, i.frozen_xml
    FROM outbox o JOIN invoices i ON i.id = o.invoice_id
    WHERE o.status IN ('pending', 'enqueued') ORDER BY o.created_at LIMIT 16`;
  if (rows.length === 0) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    continue;
  }
  await Promise.all(
    rows.map(async (row) => {
      let result: StampResult;
      try {
        result = await stamp(row.frozen_xml);
      } catch {
        return; // both failed: try again on the next pass
      }
      await prisma.$executeRaw`
        UPDATE invoices SET uuid = ${result.uuid}, status = 'stamped', stamped_xml = ${result.stampedXml},
               pac = ${result.pac}, stamped_at = now()
        WHERE id = ${row.invoice_id}::uuid`.catch(() => undefined);
      await prisma.$executeRaw`UPDATE outbox SET status = 'done' WHERE id = ${row.outbox_id}::uuid`;
    }),
  );
}
