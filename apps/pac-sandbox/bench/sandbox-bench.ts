/**
 * `npm run bench:sandbox [-- --docs N --concurrency C --calls K --validation rules|on|off]` — two figures:
 *
 * 1. **The sandbox's capacity**: fresh stamps per second driven by a lean `node:http` client
 *    (keep-alive, SW's multipart request as our client sends it), the sandbox in its own process
 *    with no injected latency, beside the raw RSA sign + verify rate of node:crypto measured in the
 *    same run — the work a stamp cannot avoid (verify the emisor's Sello, sign the TFD). A figure:
 *    the sandbox is a test tool, and its target is that it never limits a benchmark (bench:e2e
 *    prints its capacity against what that run drove: ≥ 2×).
 * 2. **Our PAC clients' cost**: CPU of this process per call of `SwClient.stamp` and
 *    `FinkokClient.stamp` against a bare `node:http` request carrying the same bytes to the same
 *    server (the answer read as text), one call at a time, in alternating rounds of 20. A figure:
 *    their CPU is inside Timbra's own CPU a stamped payment, which bench:e2e --compare targets.
 *
 * The sandbox validates with the SAT rules only by default (`--validation rules`): its XSD check
 * costs ~6 ms a stamp (libxml2 compiles the schemas on every validation through libxmljs2) — a real
 * PAC's own work, not what this measures; `--validation on` prints the figure with it.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { Session } from 'node:inspector/promises';
import { cpus } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { FinkokClient, multipartXml, SwClient } from '@timbra/cfdi-node';
import { cpuMs, freePorts, rawVerifySignRate, testCaFile, tsEntryArgs } from '@timbra/test-support';
import { FINKOK, freshInvoice, SW } from '../test/helpers.ts';

const { values } = parseArgs({
  options: {
    docs: { type: 'string', default: '3000' },
    concurrency: { type: 'string', default: '16' },
    calls: { type: 'string', default: '300' },
    validation: { type: 'string', default: 'rules' },
    /** Write CPU profiles of this process's client rounds (phase 2): FILE for SwClient, FILE-finkok for FinkokClient. */
    profile: { type: 'string' },
  },
});
const docCount = Number(values.docs);
const concurrency = Number(values.concurrency);
const calls = Number(values.calls);
const here = dirname(fileURLToPath(import.meta.url));

// Raw floor: one RSA-2048 verify (the emisor's Sello) + one sign (the TFD), on one core.
const rawRate = rawVerifySignRate(2);

const [primary, backup, admin] = (await freePorts(3)) as [number, number, number];
// With TIMBRA_CPU_PROF_DIR set, the sandbox writes a V8 CPU profile to DIR/sandbox when it stops (as
// the harnesses' apps do: docs/performance.md).
const child = spawn(process.execPath, tsEntryArgs(resolve(here, '../src/main.ts'), 'sandbox'), {
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
});

/** The lean driver: one keep-alive POST, the answer as text. */
const agent = new Agent({ keepAlive: true, maxSockets: Math.max(concurrency, 1) });
function post(path: string, headers: Record<string, string>, body: Buffer | string) {
  return new Promise<{ status: number; text: string }>((done, fail) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: primary,
        path,
        method: 'POST',
        agent,
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => done({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', fail);
      },
    );
    req.on('error', fail);
    req.end(body);
  });
}

const swToken = async () => {
  const r = await post('/v2/security/authenticate', { 'content-type': 'application/json' }, JSON.stringify(SW));
  return (JSON.parse(r.text) as { data: { token: string } }).data.token;
};
const bareSw = async (token: string, xml: string, customid: string) => {
  const { body, contentType } = multipartXml(xml);
  return post('/v4/cfdi33/stamp/v4', { authorization: `Bearer ${token}`, customid, 'content-type': contentType }, body);
};
const bareFinkok = (xml: string) =>
  post(
    '/servicios/soap/stamp',
    { 'content-type': 'text/xml; charset=utf-8', soapaction: 'stamp' },
    '<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" ' +
      'xmlns:stamp="http://facturacion.finkok.com/stamp"><soapenv:Header/><soapenv:Body><stamp:stamp>' +
      `<stamp:xml>${Buffer.from(xml, 'utf8').toString('base64')}</stamp:xml>` +
      `<stamp:username>${FINKOK.username}</stamp:username><stamp:password>${FINKOK.password}</stamp:password>` +
      '</stamp:stamp></soapenv:Body></soapenv:Envelope>',
  );

const cpuOf = async (run: () => Promise<void>) => {
  const before = process.cpuUsage();
  await run();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
};

// `--profile FILE`: the inspector's CPU profiler runs only around the client rounds (not while the
// documents are sealed), so the profile shows where a call's CPU goes.
const session = values.profile ? new Session() : undefined;
if (session) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
}
const profiled = async (name: 'sw' | 'finkok', run: () => Promise<void>) => {
  if (session) await session.post('Profiler.start');
  await run();
  if (session) {
    const { profile } = await session.post('Profiler.stop');
    profiles[name] = profile;
  }
};
const profiles: Partial<Record<'sw' | 'finkok', unknown>> = {};

try {
  const base = `http://127.0.0.1:${primary}`;
  const sw = new SwClient({
    name: 'primary',
    baseUrl: base,
    user: SW.user,
    password: SW.password,
    satStatusUrl: `${base}/ConsultaCFDIService.svc`,
  });
  const finkok = new FinkokClient({
    name: 'primary',
    baseUrl: base,
    username: FINKOK.username,
    password: FINKOK.password,
    satStatusUrl: `${base}/ConsultaCFDIService.svc`,
  });
  // Wait for the sandbox to answer.
  for (let i = 0; ; i++) {
    try {
      await sw.stamp(freshInvoice().xml, { idempotencyKey: `warm-${i}` });
      break;
    } catch {
      if (i > 100) throw new Error('sandbox did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const token = await swToken();

  // 1. Capacity, with the lean driver.
  for (const d of Array.from({ length: 200 }, () => freshInvoice())) await bareSw(token, d.xml, `${d.stampKey}-warm`);
  const fresh = Array.from({ length: docCount }, () => freshInvoice());
  let next = 0;
  let stamped = 0;
  const cpuSandbox = cpuMs({ pid: child.pid });
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < fresh.length) {
        const d = fresh[next++]!;
        const r = await bareSw(token, d.xml, d.stampKey);
        if (r.status === 200) stamped++;
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const sandboxMsPerStamp = (cpuMs({ pid: child.pid }) - cpuSandbox) / stamped;
  const rate = stamped / seconds;
  const share = rate / rawRate;

  // 2. Client cost: one call at a time, bare and client in alternating rounds on fresh documents. The
  // rounds are short (20 calls), so the machine's drift — on a shared VM larger than the gap measured —
  // falls on both sides alike. Under --profile, three long rounds (the last one profiled).
  const rounds = values.profile ? 3 : Math.max(3, Math.round(calls / 20));
  const per = Math.max(1, Math.floor(calls / rounds));
  // One call on one fresh document each; the clients' last rounds are the ones profiled.
  type Doc = ReturnType<typeof freshInvoice>;
  const clientCalls: Record<'bareSw' | 'sw' | 'bareFinkok' | 'finkok', (d: Doc) => Promise<unknown>> = {
    bareSw: async (d) => {
      const r = await bareSw(token, d.xml, d.stampKey);
      if (r.status !== 200) throw new Error(`bare SW request answered ${r.status}`);
    },
    sw: (d) => sw.stamp(d.xml, { idempotencyKey: d.stampKey }),
    bareFinkok: async (d) => {
      const r = await bareFinkok(d.xml);
      if (r.status !== 200 || !r.text.includes('UUID')) throw new Error(`bare Finkok request answered ${r.status}`);
    },
    finkok: (d) => finkok.stamp(d.xml, { idempotencyKey: d.stampKey }),
  };
  // Each call's CPU: the process's CPU includes V8's background threads (concurrent GC, the
  // optimising compiler), whose bursts land on whichever call is running — here a bare request's p99
  // was 12× its median. The mean (all of it) is the target's figure; the medians are printed beside it.
  const each: Record<keyof typeof clientCalls, number[]> = { bareSw: [], sw: [], bareFinkok: [], finkok: [] };
  for (let round = 0; round < rounds; round++)
    for (const name of ['bareSw', 'sw', 'bareFinkok', 'finkok'] as const) {
      const docs = Array.from({ length: per }, () => freshInvoice());
      const run = async () => {
        for (const d of docs) {
          each[name].push(
            await cpuOf(async () => {
              await clientCalls[name](d);
            }),
          );
        }
      };
      await (name === 'sw' || name === 'finkok' ? profiled(name, run) : run());
    }
  if (values.profile) {
    writeFileSync(values.profile, JSON.stringify(profiles.sw));
    writeFileSync(values.profile.replace(/(\.cpuprofile)?$/, '-finkok.cpuprofile'), JSON.stringify(profiles.finkok));
  }
  const n = rounds * per;
  const totals = Object.fromEntries(
    Object.entries(each).map(([name, xs]) => [name, xs.reduce((sum, x) => sum + x, 0)]),
  ) as Record<keyof typeof each, number>;
  const ms = (v: number) => (v / n).toFixed(3);
  const swRatio = totals.sw / totals.bareSw;
  const finkokRatio = totals.finkok / totals.bareFinkok;
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1] ?? NaN;
  const medians = (client: 'sw' | 'finkok', bare: 'bareSw' | 'bareFinkok') =>
    `(medians ${median(each[bare]).toFixed(3)} → ${median(each[client]).toFixed(3)} ms = ${(median(each[client]) / median(each[bare])).toFixed(2)}×)`;
  process.stdout.write(
    [
      `bench:sandbox — ${new Date().toISOString()} — ${cpus()[0]?.model ?? 'cpu'} ×${cpus().length}, node ${process.version}`,
      `${stamped} fresh stamps by a lean node:http driver (SW protocol, concurrency ${concurrency}), sandbox in its own process, no injected latency, sandbox validation: ${values.validation}`,
      '',
      `  stamps through the sandbox           ${rate.toFixed(0).padStart(7)} stamps/s   (sandbox CPU ${sandboxMsPerStamp.toFixed(3)} ms a stamp)`,
      `  raw RSA-2048 verify + sign (1 core)  ${rawRate.toFixed(0).padStart(7)} ops/s   ← reference`,
      `  sandbox / raw = ${(share * 100).toFixed(1)}%   (a figure; the target is bench:e2e's sandbox headroom)`,
      '',
      `our PAC clients, CPU of this process per call, mean (${n} calls each, one at a time, ${rounds} alternating rounds):`,
      `  bare node:http, SW request           ${ms(totals.bareSw)} ms   ← reference`,
      `  SwClient.stamp                       ${ms(totals.sw)} ms   = ${swRatio.toFixed(2)}×   ${medians('sw', 'bareSw')}`,
      `  bare node:http, Finkok request       ${ms(totals.bareFinkok)} ms   ← reference`,
      `  FinkokClient.stamp                   ${ms(totals.finkok)} ms   = ${finkokRatio.toFixed(2)}×   ${medians('finkok', 'bareFinkok')}`,
      '',
    ].join('\n'),
  );
} finally {
  agent.destroy();
  child.kill('SIGTERM');
}
