/**
 * The demo's second organization (platform mode, PLATFORM_KEY): made through `/v1/organizations` as a
 * platform makes its merchants — its facts, its CSD (the SAT's test persona física, re-issued by the
 * tests' CA like the home one's), a key, its own serie, global mode, email sender, logo and colour — then a payment with
 * its key, stamped by the same worker and sealed as its emisor, and its PDF with its logo and colour;
 * then its test twin, and a sale with its tk_test_ key.
 */
import { TINY_PNG, testCsdFiles } from '@timbra/test-support';
import type { DemoRow } from './demo-client.ts';

export interface OrganizationDemo {
  id: string;
  /** Its API key (shown once when made): checked against the logs with the other secrets. */
  key: string;
  row: DemoRow;
  pdf: Buffer;
  /** Its self-invoicing page. */
  page: string;
  /** Its test twin: its tk_test_ key and its sale, stamped at the test PAC (the sandbox here). */
  test: { id: string; key: string; row: DemoRow };
}

const FACTS = { rfc: 'CACX7605101P8', nombre: 'XOCHILT CASAS CHAVEZ', regimenFiscal: '612', lugarExpedicion: '36257' };

export async function runOrganizationDemo(options: {
  apiUrl: string;
  platformKey: string;
  timeoutMs: number;
  log: (line: string) => void;
}): Promise<OrganizationDemo> {
  const call: Call = async <T>(key: string, method: string, path: string, body?: object | Buffer): Promise<T> => {
    const res = await fetch(`${options.apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': Buffer.isBuffer(body) ? 'image/png' : 'application/json',
      },
      ...(body ? { body: Buffer.isBuffer(body) ? new Uint8Array(body) : JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
    return JSON.parse(text) as T;
  };
  const pk = options.platformKey;
  // Made (or found again: the same facts are the same organization), then given what it needs.
  const { id } = await call<{ id: string }>(pk, 'POST', '/v1/organizations', FACTS);
  const files = testCsdFiles('CACX7605101P8');
  const listed = await call<{ csds: unknown[] }>(pk, 'GET', `/v1/organizations/${id}`);
  if (listed.csds.length === 0)
    await call(pk, 'POST', `/v1/organizations/${id}/csds`, {
      certificate: files.cer.toString('base64'),
      privateKey: files.key.toString('base64'),
      password: files.password,
    });
  await call(pk, 'PATCH', `/v1/organizations/${id}`, {
    settings: {
      series: { ingreso: 'X' },
      publicoGeneral: { mode: 'global' },
      email: { from: 'Tienda Xochilt <facturas@xochilt.example>' },
      branding: { color: '#0b6e4f' },
    },
  });
  await call(pk, 'PUT', `/v1/organizations/${id}/logo`, TINY_PNG);
  const { key } = await call<{ key: string }>(pk, 'POST', `/v1/organizations/${id}/keys`, {
    name: `demo-${Date.now()}`,
  });
  options.log(`[demo] a second organization (platform mode): ${FACTS.rfc} ${FACTS.nombre}, id ${id}`);

  const row = await stampedSale(
    call,
    options,
    key,
    `ORG-${Date.now()}`,
    '348.00',
    `another organization (${FACTS.rfc})`,
  );
  const pdf = await fetch(`${options.apiUrl}/v1/invoices/${row.id}/pdf`, {
    headers: { authorization: `Bearer ${key}` },
  });
  if (!pdf.ok) throw new Error(`GET /v1/invoices/${row.id}/pdf: HTTP ${pdf.status}`);

  // Its test twin (test and live): a tk_test_ key's sale, its own folios, stamped at the test PAC.
  const twin = await call<{ id: string }>(pk, 'POST', `/v1/organizations/${id}/test`);
  const test = await call<{ key: string }>(pk, 'POST', `/v1/organizations/${twin.id}/keys`, {
    name: `demo-${Date.now()}`,
  });
  const testRow = await stampedSale(
    call,
    options,
    test.key,
    `TEST-${Date.now()}`,
    '116.00',
    'its test twin (tk_test_)',
  );
  return {
    id,
    key,
    row,
    pdf: Buffer.from(await pdf.arrayBuffer()),
    page: `${options.apiUrl}/facturar/${id}`,
    test: { id: twin.id, key: test.key, row: testRow },
  };
}

type Call = <T>(key: string, method: string, path: string, body?: object | Buffer) => Promise<T>;

/** A sale with `key` to the SAT's test persona moral, awaited until stamped: its row for the table. */
async function stampedSale(
  call: Call,
  options: { timeoutMs: number },
  key: string,
  externalId: string,
  amount: string,
  note: string,
): Promise<DemoRow> {
  const paid = await call<{ invoices: { id: string }[] }>(key, 'POST', '/v1/payments', {
    externalId,
    amount,
    currency: 'MXN',
    occurredAt: new Date(Date.now() - 60_000).toISOString(),
    receptor: {
      rfc: 'EKU9003173C9',
      nombre: 'ESCUELA KEMPER URGATE',
      codigoPostal: '42501',
      regimenFiscal: '601',
      usoCfdi: 'G03',
    },
  });
  const invoiceId = paid.invoices[0]!.id;
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const invoice = await call<{ status: string; serieFolio: string; uuid: string | null }>(
      key,
      'GET',
      `/v1/invoices/${invoiceId}`,
    );
    if (invoice.status === 'stamped')
      return {
        id: invoiceId,
        note,
        externalId,
        amount,
        serieFolio: invoice.serieFolio,
        uuid: invoice.uuid,
        status: invoice.status,
      };
    if (Date.now() > deadline) throw new Error(`${note}: the invoice is ${invoice.status}, not stamped`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
