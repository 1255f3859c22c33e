/**
 * The API as the process it is in production, when its Redis goes away: not ready (and why), every
 * line it writes still one JSON log line, and ready again when Redis is back.
 */
import { describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTestDatabase } from '@timbra/db/testing';
import { eventually, freePorts, privateRedisArgs, realClockEnv, testCsdPaths, tsEntryArgs } from '@timbra/test-support';

/** Every line a child writes to stdout and stderr. */
function linesOf(child: ChildProcess): string[] {
  const lines: string[] = [];
  for (const stream of [child.stdout, child.stderr])
    stream?.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
  return lines;
}

describe('the API process', () => {
  it('with Redis gone: not ready, every line a JSON log line, and ready again when Redis is back', async () => {
    const db = await createTestDatabase();
    const [redisPort, port] = (await freePorts(2)) as [number, number];
    const startRedis = () =>
      spawn('redis-server', privateRedisArgs(redisPort), { stdio: 'ignore', env: realClockEnv() });
    let redis = startRedis();
    const csd = testCsdPaths('EKU9003173C9');
    const api = spawn(process.execPath, tsEntryArgs(fileURLToPath(new URL('../src/main.ts', import.meta.url))), {
      env: {
        ...process.env,
        NODE_OPTIONS: '',
        TIMBRA_PROFILE: 'sandbox',
        DATABASE_URL: db.url,
        REDIS_URL: `redis://127.0.0.1:${redisPort}`,
        PORT: String(port),
        HOST: '127.0.0.1',
        METRICS_PORT: '0',
        API_KEYS: 'pos:process-test-key-0000:admin',
        // The board's own queue is made only with the dashboard on.
        DASHBOARD_USER: 'admin',
        DASHBOARD_PASSWORD: 'process-test-password',
        LOG_LEVEL: 'info',
        CSD_CER_PATH: csd.cer,
        CSD_KEY_PATH: csd.key,
        CSD_PASSWORD_FILE: csd.passwordFile,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines = linesOf(api);
    const readyz = async () => {
      const response = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
      return response ? { status: response.status, body: await response.json() } : undefined;
    };
    try {
      await eventually(async () => (await readyz())?.status === 200, 30_000);
      redis.kill('SIGKILL');
      await eventually(async () => (await readyz())?.status === 503, 20_000);
      expect((await readyz())?.body).toMatchObject({ ok: false });
      // A few reconnection rounds while Redis is gone: each error is logged, none printed raw.
      await new Promise((resolve) => setTimeout(resolve, 3000));
      redis = startRedis();
      await eventually(async () => (await readyz())?.status === 200, 30_000);
      // The outage is told once, and its end: logged as the connection is ready again, before the
      // ping /readyz answered with, but read here from another pipe than the answer's socket.
      await eventually(() => Promise.resolve(lines.some((l) => /redis reachable again/.test(l))), 5_000);
      expect(lines.filter((l) => /redis unreachable: retrying/.test(l))).toHaveLength(1);
      for (const line of lines) expect(() => JSON.parse(line) as unknown).not.toThrow();
    } finally {
      api.kill('SIGTERM');
      await new Promise((resolve) => (api.exitCode === null ? api.once('exit', resolve) : resolve(undefined)));
      redis.kill('SIGKILL');
      await db.drop();
    }
  });
});
