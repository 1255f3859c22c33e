import got from 'got';
import { pino } from 'pino';
import { PacError, type Csd, type FrozenCfdi, type InvoiceRequestInput } from '@timbra/cfdi-core';
import { FinkokClient, SwClient, type FinkokClientConfig, type SwClientConfig } from '@timbra/cfdi-node';
import { freezeSample, loadTestCsd, testCaPem, testCsdFiles, type TestRfc } from '@timbra/test-support';
import { Sandbox, type SandboxOptions } from '../src/sandbox.ts';

export { SAT_DIR } from '@timbra/test-support';

export function testCsd(rfc: TestRfc): { csd: Csd; cer: Buffer; key: Buffer; password: string } {
  const files = testCsdFiles(rfc);
  return { csd: loadTestCsd(rfc), ...files };
}

export const emisor = testCsd('EKU9003173C9');
export const pacCsd = testCsd('CACX7605101P8').csd;
export const ADMIN_TOKEN = 'test-admin-token';
export const SW = { user: 'timbra', password: 'timbra-sandbox' };
export const FINKOK = { username: 'timbra@example.com', password: 'timbra-sandbox' };

export interface RunningSandbox {
  sandbox: Sandbox;
  url: (instance?: string) => string;
  adminUrl: string;
  admin: (path: string, body?: unknown, instance?: string) => Promise<unknown>;
  stop: () => Promise<void>;
}

/** A sandbox with `primary` and `backup` on free ports, admin API on. */
export async function startSandbox(overrides: Partial<SandboxOptions> = {}): Promise<RunningSandbox> {
  const sandbox = new Sandbox({
    host: '127.0.0.1',
    instancePorts: { primary: 0, backup: 0 },
    adminPort: 0,
    adminToken: ADMIN_TOKEN,
    sw: SW,
    finkok: FINKOK,
    pacCsd,
    rfcProvCertif: 'SPR190613I52',
    tokenTtlMs: 7_200_000,
    policy: { acceptanceAbove: 5000, acceptDelayMs: 300 },
    seed: 7,
    logger: pino({ level: 'silent' }),
    // The tests' CSDs are re-issued by their own CA (valid until 2099): the sandbox trusts it.
    trustedCa: testCaPem(),
    ...overrides,
  });
  const ports = await sandbox.start();
  const adminUrl = `http://127.0.0.1:${ports.admin}`;
  return {
    sandbox,
    url: (instance = 'primary') => sandbox.url(instance),
    adminUrl,
    admin: (path, body, instance = 'primary') =>
      (body === undefined
        ? got.get(`${adminUrl}/__admin/${path}`, {
            searchParams: { instance },
            headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
          })
        : got.post(`${adminUrl}/__admin/${path}`, {
            json: { instance, ...(body as object) },
            headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
          })
      ).json(),
    stop: () => sandbox.stop(),
  };
}

/** A frozen Ingreso issued a minute ago (PACs refuse documents older than 72 hours). */
export function freshInvoice(overrides: Partial<InvoiceRequestInput> = {}): FrozenCfdi {
  return freezeSample(overrides, emisor.csd);
}

export interface Ledger {
  stamps: { uuid: string; cadenaHash: string; instance: string; customid?: string }[];
  duplicates: { cadenaHash: string; uuids: string[] }[];
  counts: Record<string, Record<string, number>>;
  received: { instance: string; customid?: string; xmlSha256: string; outcome: string }[];
}

/** Awaits a promise expected to fail with a PacError and returns it. */
export async function pacFailure(promise: Promise<unknown>): Promise<PacError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof PacError) return error;
    throw error;
  }
  throw new Error('expected a PacError');
}

/** Timbra's SW client pointed at an instance of the sandbox (default `primary`). */
export function swClient(run: RunningSandbox, instance = 'primary', overrides: Partial<SwClientConfig> = {}): SwClient {
  return new SwClient({
    name: instance,
    baseUrl: run.url(instance),
    user: SW.user,
    password: SW.password,
    satStatusUrl: `${run.url(instance)}/ConsultaCFDIService.svc`,
    timeouts: { connectMs: 1_000, responseMs: 2_000 },
    ...overrides,
  });
}

/** Timbra's Finkok client pointed at an instance of the sandbox (default `backup`). */
export function finkokClient(
  run: RunningSandbox,
  instance = 'backup',
  overrides: Partial<FinkokClientConfig> = {},
): FinkokClient {
  return new FinkokClient({
    name: instance,
    baseUrl: run.url(instance),
    username: FINKOK.username,
    password: FINKOK.password,
    satStatusUrl: `${run.url(instance)}/ConsultaCFDIService.svc`,
    timeouts: { connectMs: 1_000, responseMs: 2_000 },
    ...overrides,
  });
}
