/**
 * The chaos run's other organizations (platform mode): made through `/v1/organizations` as a
 * platform makes its merchants — their facts, a CSD each (issued by the tests' CA to taxpayers the
 * sandbox's "SAT" is told about), a store's key and an operator's key, a webhook endpoint each — and,
 * after the run, what must hold for each organization on its own and between them: every payment
 * stamped once, folios gapless in each of its series, every document sealed as its own emisor, each
 * webhook at its own endpoint, and nothing of one listed or read with another's keys.
 */
import type { createPrisma } from '@timbra/db';

type PrismaClient = ReturnType<typeof createPrisma>;
import { apiCall, makeOrganizationWithCsd, registerTaxpayer } from '@timbra/test-support';

/** The facts of the organizations beside the home one (EMISOR_*): a persona moral and a física. */
const MORE = [
  { tag: 'b', rfc: 'TPM150101AB1', nombre: 'TIENDA PRUEBAS MORAL', regimenFiscal: '601', lugarExpedicion: '64000' },
  { tag: 'c', rfc: 'PEGJ800101AB3', nombre: 'JUANA PEREZ GARCIA', regimenFiscal: '612', lugarExpedicion: '01000' },
] as const;
export const MAX_ORGANIZATIONS = MORE.length + 1;

export interface ChaosOrganization {
  /** `home`, `b`, `c`: its webhook endpoint is the receiver's `/hooks/<tag>` (the home one's, `/hooks`). */
  tag: string;
  /** Its row in `emisores`. */
  id: string;
  rfc: string;
  /** Its store's key, named `chaos` as the home one's is: its REST payments are `api:chaos` too. */
  key: string;
  /** Its operator's key (admin): webhook endpoints, lists of everything. */
  adminKey: string;
}

interface Options {
  apiUrl: string;
  platformKey: string;
  /** The PAC sandbox's admin API (`…/__admin`) and its token: its taxpayer list is the "SAT's". */
  sandboxAdmin: { url: string; token: string };
  log: (line: string) => void;
}

/** Makes `count` organizations (beyond the home one) with their CSD and keys; returns them. */
export async function makeOrganizations(count: number, options: Options): Promise<ChaosOrganization[]> {
  const made: ChaosOrganization[] = [];
  for (const facts of MORE.slice(0, count)) {
    const { tag, ...body } = facts;
    await registerTaxpayer(options.sandboxAdmin, body);
    const { id, noCertificado } = await makeOrganizationWithCsd(options.apiUrl, options.platformKey, body);
    const keyOf = async (name: string, scopes?: string[]) =>
      (
        await apiCall<{ key: string }>(options.apiUrl, options.platformKey, 'POST', `/v1/organizations/${id}/keys`, {
          name,
          ...(scopes ? { scopes } : {}),
        })
      ).key;
    made.push({
      tag,
      id,
      rfc: facts.rfc,
      key: await keyOf('chaos'),
      adminKey: await keyOf('chaos-ops', ['read', 'write', 'cancel', 'admin']),
    });
    options.log(`organization ${tag}: ${facts.rfc} ${facts.nombre} (${id}), its CSD ${noCertificado} and keys`);
  }
  return made;
}

export interface Figure {
  figure: string;
  value: string | number;
  must: string;
  ok: boolean;
}

/** What each list answers with, and where its rows' organization is. */
const LISTS = [
  { path: '/v1/invoices', table: 'invoices', column: 'organization_id' },
  { path: '/v1/payments', table: 'payments', column: 'organization_id' },
  { path: '/v1/customers', table: 'customers', column: 'organization_id' },
  { path: '/v1/webhook-endpoints', table: 'webhook_endpoints', column: 'organization_id' },
  { path: '/v1/deliveries', table: 'deliveries', column: 'organization_id' },
  { path: '/v1/keys', table: 'api_clients', column: 'organization_id', unpaged: true },
  { path: '/v1/tickets', table: 'tickets', column: 'organization_id' },
] as const;

async function listAll(apiUrl: string, key: string, path: string, unpaged = false): Promise<string[]> {
  if (unpaged) return (await apiCall<{ data: { id: string }[] }>(apiUrl, key, 'GET', path)).data.map((row) => row.id);
  const ids: string[] = [];
  // An organization invoicing público en general per payment has no tickets: the API says so.
  if (path === '/v1/tickets') {
    const probe = await fetch(`${apiUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
    const body = (await probe.json()) as { error?: { code: string } };
    if (probe.status === 409 && body.error?.code === 'global_mode_off') return ids;
  }
  let cursor: string | null = null;
  do {
    const page: { data: { id: string }[]; nextCursor: string | null } = await apiCall(
      apiUrl,
      key,
      'GET',
      `${path}?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    ids.push(...page.data.map((row) => row.id));
    cursor = page.nextCursor;
  } while (cursor);
  return ids;
}

/**
 * Every organization's operator key lists everything it can; each row listed must be its own. Then
 * each organization's keys ask for a sample of every other organization's invoices and payments by
 * id: each must be unknown (404).
 */
export async function crossings(
  apiUrl: string,
  organizations: readonly ChaosOrganization[],
  db: PrismaClient,
): Promise<Figure> {
  const crossed: string[] = [];
  let listed = 0;
  let asked = 0;
  for (const org of organizations)
    for (const list of LISTS) {
      const ids = await listAll(apiUrl, org.adminKey, list.path, 'unpaged' in list);
      listed += ids.length;
      const rows = await db.$queryRawUnsafe<{ id: string; org: string }[]>(
        `SELECT id::text, ${list.column}::text AS org FROM ${list.table} WHERE id = ANY($1::uuid[])`,
        ids,
      );
      const own = new Map(rows.map((r) => [r.id, r.org]));
      for (const id of ids)
        if (own.get(id) !== org.id) crossed.push(`${org.tag} listed ${list.table} ${id} (${own.get(id) ?? 'no row'})`);
    }
  for (const org of organizations)
    for (const other of organizations.filter((o) => o !== org)) {
      const sample = await db.$queryRaw<{ kind: string; id: string }[]>`
        (SELECT 'invoices' AS kind, id::text FROM invoices WHERE organization_id = ${other.id}::uuid ORDER BY id LIMIT 10)
        UNION ALL
        (SELECT 'payments', id::text FROM payments WHERE organization_id = ${other.id}::uuid ORDER BY id LIMIT 10)`;
      for (const { kind, id } of sample)
        for (const key of [org.key, org.adminKey]) {
          asked++;
          const response = await fetch(`${apiUrl}/v1/${kind}/${id}`, { headers: { authorization: `Bearer ${key}` } });
          await response.text();
          if (response.status !== 404) crossed.push(`${org.tag} read ${other.tag}'s ${kind} ${id}: ${response.status}`);
        }
    }
  return {
    figure: "rows of one organization listed or read with another's keys",
    value:
      crossed.length === 0
        ? `0 (${listed} rows listed by ${organizations.length} organizations, ${asked} reads of another's refused)`
        : `${crossed.length}: ${crossed.slice(0, 3).join('; ')}`,
    must: '0',
    ok: crossed.length === 0 && listed > 0 && asked > 0,
  };
}

/**
 * Each organization's own figures: its payments each with exactly one stamped Ingreso (the live one),
 * gapless folios in each of its series, its documents sealed as its emisor, no dead letter.
 */
export async function perOrganization(
  organizations: readonly ChaosOrganization[],
  db: PrismaClient,
  acked: ReadonlySet<string>,
): Promise<Figure[]> {
  const payments = await db.$queryRaw<{ org: string; key: string; stamped: number; invoices: number }[]>`
    SELECT p.organization_id::text AS org, p.provider || '|' || p.external_id AS key,
           count(i.id)::int AS invoices,
           count(i.id) FILTER (WHERE i.status IN ('stamped', 'cancel_requested', 'cancelled') AND i.uuid IS NOT NULL)::int AS stamped
    FROM payments p
    LEFT JOIN invoices i ON i.payment_id = p.id AND i.kind = 'I'
                        AND NOT EXISTS (SELECT 1 FROM invoices r WHERE r.replaces_invoice_id = i.id)
    GROUP BY p.id, p.organization_id`;
  const folios = await db.$queryRaw<
    { org: string; serie: string; n: number; first: number; last: number; rows: number }[]
  >`
    SELECT organization_id::text AS org, serie, count(DISTINCT folio)::int AS n, min(folio) AS first, max(folio) AS last,
           count(*)::int AS rows
    FROM invoices GROUP BY organization_id, serie`;
  const sealed = await db.$queryRaw<{ org: string; rfc: string; stamped: number; foreign: number }[]>`
    SELECT e.id::text AS org, e.rfc, count(i.id)::int AS stamped,
           count(i.id) FILTER (WHERE position('Rfc="' || e.rfc || '"' IN substring(i.frozen_xml FROM '<cfdi:Emisor [^>]*>')) = 0)::int AS foreign
    FROM emisores e JOIN invoices i ON i.organization_id = e.id AND i.uuid IS NOT NULL
    GROUP BY e.id, e.rfc`;
  const dead = await db.$queryRaw<{ org: string; n: number }[]>`
    SELECT organization_id::text AS org, count(*)::int AS n FROM outbox WHERE status = 'failed' GROUP BY 1`;
  return organizations.map((org) => {
    const own = payments.filter((p) => p.org === org.id && acked.has(p.key));
    const once = own.filter((p) => p.invoices === 1 && p.stamped === 1).length;
    const series = folios.filter((f) => f.org === org.id);
    const gaps = series.filter((f) => f.first !== 1 || f.last !== f.n || f.rows !== f.n).length;
    const seal = sealed.find((s) => s.org === org.id);
    const letters = dead.find((d) => d.org === org.id)?.n ?? 0;
    return {
      figure: `organization ${org.tag} (${org.rfc}): payments stamped once; series with a folio gap; documents not sealed as it; dead letters`,
      value: `${once} of ${own.length}; ${gaps} of ${series.length}; ${seal?.foreign ?? 0} of ${seal?.stamped ?? 0}; ${letters}`,
      must: 'all (at least one); 0; 0; 0',
      ok: own.length > 0 && once === own.length && gaps === 0 && (seal?.foreign ?? 0) === 0 && letters === 0,
    };
  });
}
