import { afterEach, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { classifyPacFailure, type PacOutcome } from '@timbra/cfdi-core';
import { networkFailure, PacHttp, PacTransportError, type PacTimeouts } from '../src/index.ts';

// The PAC clients' transport against real sockets on this machine: every way a request can fail,
// and what the ambiguity rule then says (was the whole request handed over before it failed?).

const servers: net.Server[] = [];
const clients: PacHttp[] = [];
const sockets = new Set<net.Socket>();

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  await Promise.all(servers.splice(0).map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
});

async function listen<S extends net.Server>(server: S): Promise<{ server: S; url: string }> {
  servers.push(server);
  server.on('connection', (socket: net.Socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

function client(url: string, timeouts: PacTimeouts = { connectMs: 1_000, responseMs: 1_000 }): PacHttp {
  const c = new PacHttp(url, timeouts);
  clients.push(c);
  return c;
}

async function failure(
  promise: Promise<unknown>,
): Promise<{ error: PacTransportError; outcome: PacOutcome; code: string }> {
  const error = await promise.then(
    () => {
      throw new Error('expected the request to fail');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PacTransportError);
  const c = classifyPacFailure(networkFailure(error));
  return { error: error as PacTransportError, outcome: c.outcome, code: c.code };
}

/** A body larger than the kernel's socket buffers on both sides, so writing it has to wait for the peer. */
const LARGE = Buffer.alloc(48 * 1024 * 1024, 'x');

describe('PacHttp', () => {
  it('returns every status as an answer, with its body, and reuses one kept-alive connection', async () => {
    let connections = 0;
    const seen: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
    const { server, url } = await listen(
      http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          seen.push({
            method: req.method!,
            url: req.url!,
            headers: req.headers,
            body: Buffer.concat(chunks).toString(),
          });
          res.writeHead(seen.length === 1 ? 200 : 503, { 'content-type': 'text/plain' });
          res.end(seen.length === 1 ? 'ñandú ✓' : 'busy');
        });
      }),
    );
    server.on('connection', () => connections++);
    const pac = client(`${url}/services`);

    const first = await pac.post('v4/stamp', { body: '<x/>', headers: { soapaction: 'stamp' } });
    const second = await pac.get('/lookup/a%2Fb');

    expect(first).toEqual({ statusCode: 200, body: 'ñandú ✓' });
    expect(second).toEqual({ statusCode: 503, body: 'busy' });
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/services/v4/stamp', body: '<x/>' });
    expect(seen[0]!.headers).toMatchObject({ soapaction: 'stamp', 'content-length': '4' });
    expect(seen[1]).toMatchObject({ method: 'GET', url: '/services/lookup/a%2Fb', body: '' });
    expect(connections).toBe(1);
  });

  it('posts to the base URL itself for the empty path (the SAT status service)', async () => {
    let path = '';
    const { url } = await listen(
      http.createServer((req, res) => {
        path = req.url!;
        req.resume();
        res.end('ok');
      }),
    );
    await client(`${url}/ConsultaCFDIService.svc`).post('', { body: 'q' });
    expect(path).toBe('/ConsultaCFDIService.svc');
  });

  it('connection refused: not sent, transient', async () => {
    const { server, url } = await listen(net.createServer());
    await new Promise<void>((resolve) => server.close(() => resolve()));
    servers.splice(servers.indexOf(server), 1);
    const f = await failure(client(url).post('stamp', { body: 'x' }));
    expect(f.error).toMatchObject({ code: 'ECONNREFUSED', sent: false, timedOut: false });
    expect(f.outcome).toBe('transient');
  });

  it('no answer after the whole request was written: a response timeout, ambiguous', async () => {
    const { url } = await listen(http.createServer((req) => req.resume()));
    const started = Date.now();
    const f = await failure(client(url, { connectMs: 1_000, responseMs: 300 }).post('stamp', { body: 'x' }));
    expect(f.error).toMatchObject({ code: 'ETIMEDOUT', sent: true, phase: 'response', timedOut: true });
    expect(f.outcome).toBe('ambiguous');
    expect(f.code).toBe('ETIMEDOUT:response');
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('the response timeout also runs on a kept-alive connection', async () => {
    let requests = 0;
    const { url } = await listen(
      http.createServer((req, res) => {
        req.resume();
        if (++requests === 1) res.end('first');
      }),
    );
    const pac = client(url, { connectMs: 1_000, responseMs: 300 });
    await expect(pac.post('stamp', { body: 'x' })).resolves.toEqual({ statusCode: 200, body: 'first' });
    const f = await failure(pac.post('stamp', { body: 'x' }));
    expect(f.error).toMatchObject({ code: 'ETIMEDOUT', sent: true, phase: 'response' });
  });

  it('a reset after the request was read: sent, ambiguous', async () => {
    const { url } = await listen(
      http.createServer((req) => {
        req.resume();
        req.on('end', () => req.socket.resetAndDestroy());
      }),
    );
    const f = await failure(client(url).post('stamp', { body: 'x' }));
    expect(f.error).toMatchObject({ sent: true, timedOut: false });
    expect(['ECONNRESET', 'EPIPE']).toContain(f.error.code);
    expect(f.outcome).toBe('ambiguous');
  });

  it('an answer cut short (fewer bytes than its Content-Length): ambiguous', async () => {
    const { url } = await listen(
      http.createServer((req, res) => {
        req.resume();
        res.writeHead(200, { 'content-length': '1000' });
        res.write('<partial');
        setTimeout(() => req.socket.destroy(), 20);
      }),
    );
    const f = await failure(client(url).post('stamp', { body: 'x' }));
    expect(f.error).toMatchObject({ code: 'ECONNRESET', sent: true });
    expect(f.outcome).toBe('ambiguous');
  });

  it('a reset while the request is still being written: not sent, transient', async () => {
    const { url } = await listen(
      net.createServer((socket) => {
        socket.once('data', () => socket.resetAndDestroy());
      }),
    );
    const f = await failure(client(url, { connectMs: 1_000, responseMs: 5_000 }).post('stamp', { body: LARGE }));
    expect(f.error).toMatchObject({ sent: false, timedOut: false });
    expect(['ECONNRESET', 'EPIPE']).toContain(f.error.code);
    expect(f.outcome).toBe('transient');
  });

  it('a peer that stops reading: a send timeout, not sent, transient', async () => {
    const { url } = await listen(net.createServer((socket) => socket.pause()));
    const f = await failure(client(url, { connectMs: 1_000, responseMs: 400 }).post('stamp', { body: LARGE }));
    expect(f.error).toMatchObject({ code: 'ETIMEDOUT', sent: false, phase: 'send', timedOut: true });
    expect(f.outcome).toBe('transient');
  });

  it('an aborted request fails with ABORT_ERR and tells whether it was sent', async () => {
    const { url } = await listen(http.createServer((req) => req.resume()));
    const controller = new AbortController();
    const request = client(url).post('stamp', { body: 'x', signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    const f = await failure(request);
    expect(f.error).toMatchObject({ code: 'ABORT_ERR', sent: true });
    expect(f.outcome).toBe('ambiguous');
  });

  it('never copies a header or the body into an error', async () => {
    const { url } = await listen(
      http.createServer((req) => {
        req.resume();
        req.on('end', () => req.socket.destroy());
      }),
    );
    const f = await failure(
      client(url).post('stamp', { body: '{"password":"s3cr3t-pw"}', headers: { authorization: 'Bearer t0k3n' } }),
    );
    const text = JSON.stringify({ ...f.error, message: f.error.message, stack: f.error.stack });
    expect(text).not.toMatch(/s3cr3t-pw|t0k3n/);
  });

  it('refuses a URL that is not http(s)', () => {
    expect(() => new PacHttp('ftp://pac.example')).toThrow(/http\(s\)/);
  });
});
