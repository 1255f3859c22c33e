/**
 * `npm run bench:sandbox [-- --docs N --concurrency C --validation rules|on|off]` — stamps per second through the SW client
 * against the sandbox running as its own process (no injected latency), beside the raw RSA
 * sign + verify rate of node:crypto measured in the same run: the work a stamp cannot avoid (verify
 * the emisor's Sello, sign the TFD). Target: ≥ 30% of that raw rate, so the sandbox is never the
 * bottleneck of end-to-end figures. The sandbox validates with the SAT rules only by default
 * (`--validation rules`): its XSD check costs ~6 ms a stamp (libxml2 compiles the schemas on every
 * validation through libxmljs2) — a real PAC's own work, not what this measures; `--validation on`
 * prints the figure with it.
 */
import { spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { SwClient } from '@timbra/cfdi-core';
import { cpuMs, freePort, rawVerifySignRate, testCaFile } from '@timbra/test-support';
import { freshInvoice, SW } from '../test/helpers.ts';

const { values } = parseArgs({
  options: {
    docs: { type: 'string', default: '3000' },
    concurrency: { type: 'string', default: '16' },
    validation: { type: 'string', default: 'rules' },
  },
});
const docCount = Number(values.docs);
const concurrency = Number(values.concurrency);
const here = dirname(fileURLToPath(import.meta.url));

// Raw floor: one RSA-2048 verify (the emisor's Sello) + one sign (the TFD), on one core.
const rawRate = rawVerifySignRate(2);

const [primary, backup, admin] = [await freePort(), await freePort(), await freePort()];
const child = spawn(
  process.execPath,
  ['--import', 'tsx', '--conditions=@timbra/source', resolve(here, '../src/main.ts')],
  {
    env: {
      ...process.env,
      SANDBOX_PRIMARY_PORT: String(primary),
      SANDBOX_BACKUP_PORT: String(backup),
      SANDBOX_ADMIN_PORT: String(admin),
      SANDBOX_VALIDATION: values.validation,
      // The documents are sealed with the tests' CSD, re-issued by their CA (valid until 2099).
      SANDBOX_TRUSTED_CA_FILE: testCaFile(),
      LOG_LEVEL: 'error',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  },
);
try {
  const client = new SwClient({
    name: 'primary',
    baseUrl: `http://127.0.0.1:${primary}`,
    user: SW.user,
    password: SW.password,
    satStatusUrl: `http://127.0.0.1:${primary}/ConsultaCFDIService.svc`,
  });
  // Wait for the sandbox to answer.
  for (let i = 0; ; i++) {
    try {
      await client.stamp(freshInvoice().xml, { idempotencyKey: `warm-${i}` });
      break;
    } catch {
      if (i > 100) throw new Error('sandbox did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const docs = Array.from({ length: docCount }, () => freshInvoice());
  for (const d of docs.slice(0, 200))
    await client.stamp(d.xml, { idempotencyKey: `${d.stampKey}-warm` }).catch(() => undefined);
  const fresh = Array.from({ length: docCount }, () => freshInvoice());
  let next = 0;
  let stamped = 0;
  const cpuClient = process.cpuUsage();
  const cpuSandbox = cpuMs({ pid: child.pid });
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < fresh.length) {
        const d = fresh[next++]!;
        const r = await client.stamp(d.xml, { idempotencyKey: d.stampKey });
        if (!r.recovered) stamped++;
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const clientCpu = process.cpuUsage(cpuClient);
  const clientMsPerStamp = (clientCpu.user + clientCpu.system) / 1000 / stamped;
  const sandboxMsPerStamp = (cpuMs({ pid: child.pid }) - cpuSandbox) / stamped;
  const rate = stamped / seconds;
  const share = rate / rawRate;
  process.stdout.write(
    [
      `bench:sandbox — ${new Date().toISOString()} — ${cpus()[0]?.model ?? 'cpu'} ×${cpus().length}, node ${process.version}`,
      `${stamped} fresh stamps through the SW client (concurrency ${concurrency}), sandbox in its own process, no injected latency, sandbox validation: ${values.validation}`,
      '',
      `  stamps through SW client + sandbox   ${rate.toFixed(0).padStart(7)} stamps/s`,
      `  raw RSA-2048 verify + sign (1 core)  ${rawRate.toFixed(0).padStart(7)} ops/s   ← reference`,
      `  CPU per stamp: sandbox ${sandboxMsPerStamp.toFixed(3)} ms, client ${clientMsPerStamp.toFixed(3)} ms`,
      '',
      `  sandbox / raw = ${(share * 100).toFixed(1)}%   (target ≥ 30%)  ${share >= 0.3 ? 'OK' : 'MISSED'}`,
      '',
    ].join('\n'),
  );
} finally {
  child.kill('SIGTERM');
}
