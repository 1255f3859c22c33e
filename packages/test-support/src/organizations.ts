/**
 * Organizations made as a platform makes its merchants — `POST /v1/organizations` with the platform
 * key, then a CSD — for the runs that need more than the home one: the chaos run's three, the
 * benchmarks' thousand. Their CSDs are issued by the tests' CA (`testCsdFor`): the API must trust it
 * (`CSD_TRUSTED_CAS_FILE`, or no CA set), and the PAC sandbox too when they are stamped.
 */
import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { testCsdFor } from './test-ca.ts';

export interface OrganizationFacts {
  rfc: string;
  nombre: string;
  regimenFiscal: string;
  lugarExpedicion: string;
}

/** A call to the API with `key`; throws with the status and the start of the body unless 2xx. */
export async function apiCall<T>(apiUrl: string, key: string, method: string, path: string, body?: object): Promise<T> {
  const response = await fetch(`${apiUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: HTTP ${response.status} ${text.slice(0, 300)}`);
  return (text ? JSON.parse(text) : {}) as T;
}

/** An API answer as a test reads it: its status, its JSON body, and its error code if any. */
export interface ApiAnswer {
  status: number;
  body: Record<string, unknown> & { error?: { code: string; details?: unknown } };
  code: string | undefined;
}

/** A call to the API with `key` (and a fresh Idempotency-Key), whatever it answers. */
export async function apiAnswer(
  apiUrl: string,
  key: string,
  method: string,
  path: string,
  body?: object,
): Promise<ApiAnswer> {
  const response = await fetch(`${apiUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      'idempotency-key': randomUUID(),
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  const parsed = (text ? JSON.parse(text) : {}) as ApiAnswer['body'];
  return { status: response.status, body: parsed, code: parsed.error?.code };
}

/**
 * The `i`-th of many made-up personas morales (régimen 601, in 01000): RFC `TBO010101` and a
 * homoclave from `i` (12,960 distinct), each a valid shape for the SAT's rules.
 */
export function syntheticOrganization(i: number): OrganizationFacts {
  const homoclave = `${Math.floor(i / 10)
    .toString(36)
    .toUpperCase()
    .padStart(2, '0')}${i % 10}`;
  if (homoclave.length !== 3) throw new Error(`syntheticOrganization: ${i} is past the last one (12959)`);
  return {
    rfc: `TBO010101${homoclave}`,
    nombre: `ORGANIZACION DE PRUEBA ${i}`,
    regimenFiscal: '601',
    lugarExpedicion: '01000',
  };
}

/**
 * Tells the PAC sandbox's "SAT" of an emisor (its L_RFC: the emisor's name, régimen and postal code
 * are checked when it stamps). `admin`: the sandbox's admin API (`…/__admin`) and its token.
 */
export async function registerTaxpayer(admin: { url: string; token: string }, facts: OrganizationFacts): Promise<void> {
  const response = await fetch(`${admin.url}/taxpayers/${facts.rfc}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: facts.nombre, postalCode: facts.lugarExpedicion, regimenes: [facts.regimenFiscal] }),
  });
  if (!response.ok) throw new Error(`sandbox PUT /taxpayers/${facts.rfc}: HTTP ${response.status}`);
}

let sharedKeyPair: { privateKey: KeyObject; publicKey: KeyObject } | undefined;

/**
 * Makes the organization (or finds it again: the same facts are the same organization) and gives it a
 * CSD issued to its RFC by the tests' CA; returns its id and the CSD's NoCertificado. `sharedKey`:
 * every such CSD certifies one key pair (made once), for runs making hundreds.
 */
export async function makeOrganizationWithCsd(
  apiUrl: string,
  platformKey: string,
  facts: OrganizationFacts,
  options: { sharedKey?: boolean } = {},
): Promise<{ id: string; noCertificado: string }> {
  const { id } = await apiCall<{ id: string }>(apiUrl, platformKey, 'POST', '/v1/organizations', facts);
  if (options.sharedKey) sharedKeyPair ??= generateKeyPairSync('rsa', { modulusLength: 2048 });
  const csd = testCsdFor(facts.rfc, facts.nombre, sharedKeyPair && options.sharedKey ? { keyPair: sharedKeyPair } : {});
  await apiCall(apiUrl, platformKey, 'POST', `/v1/organizations/${id}/csds`, {
    certificate: csd.cer.toString('base64'),
    privateKey: csd.key.toString('base64'),
    password: csd.password,
  });
  return { id, noCertificado: csd.noCertificado };
}

/** `count` organizations made `concurrency` at a time (`syntheticOrganization(0…count-1)`), with `then` for each. */
export async function makeSyntheticOrganizations<T>(
  apiUrl: string,
  platformKey: string,
  count: number,
  then: (made: { id: string; facts: OrganizationFacts }) => Promise<T>,
  options: { concurrency?: number; progress?: (done: number) => void } = {},
): Promise<T[]> {
  const out: T[] = new Array<T>(count);
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: Math.min(count, options.concurrency ?? 8) }, async () => {
      while (next < count) {
        const i = next++;
        const facts = syntheticOrganization(i);
        const { id } = await makeOrganizationWithCsd(apiUrl, platformKey, facts, { sharedKey: true });
        out[i] = await then({ id, facts });
        if (++done % 100 === 0) options.progress?.(done);
      }
    }),
  );
  return out;
}

/**
 * `count` synthetic organizations (see `syntheticOrganization`), each with a CSD and a Stripe account
 * whose webhooks `secret` signs (its API key unused: the benchmarks' events name no charge to read);
 * their facts and webhook paths (`/webhooks/stripe/<id>`), and the seconds it took.
 */
export async function makeStripeOrganizations(options: {
  apiUrl: string;
  platformKey: string;
  count: number;
  secret: string;
  log: (line: string) => void;
}): Promise<{ organizations: { facts: OrganizationFacts; path: string }[]; seconds: number }> {
  const t0 = Date.now();
  const organizations = await makeSyntheticOrganizations(
    options.apiUrl,
    options.platformKey,
    options.count,
    async ({ id, facts }) => {
      const account = await apiCall<{ webhookPath: string }>(
        options.apiUrl,
        options.platformKey,
        'PUT',
        `/v1/organizations/${id}/providers/stripe`,
        { webhookSecret: options.secret, apiKey: 'sk_test_bench_unused' },
      );
      return { facts, path: account.webhookPath };
    },
    { progress: (done) => options.log(`  ${done} of ${options.count} organizations made`) },
  );
  return { organizations, seconds: (Date.now() - t0) / 1000 };
}
