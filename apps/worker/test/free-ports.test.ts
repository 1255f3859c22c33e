/**
 * The tests' and harnesses' free ports (`freePorts` in @timbra/test-support): every port of one call
 * is different and can be bound at once — the dev command's test once failed because two of its
 * ports, taken one after the other, came out the same — and none is one the kernel hands out on its
 * own: a port let go below the ephemeral range is not given to another test's server listening on
 * port 0 before the process it was found for binds it (the close timer's test once read another
 * server's metrics that way).
 */
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { freePorts } from './helpers.ts';

describe('freePorts', () => {
  it('gives n different ports, all of which can be bound together', async () => {
    const ports = await freePorts(32);
    expect(ports).toHaveLength(32);
    expect(new Set(ports).size).toBe(32);
    const servers: Server[] = [];
    try {
      for (const port of ports)
        servers.push(
          await new Promise<Server>((bound, failed) => {
            const server = createServer();
            server.once('error', failed).listen(port, '127.0.0.1', () => bound(server));
          }),
        );
      expect(servers).toHaveLength(32);
    } finally {
      await Promise.all(servers.map((s) => new Promise((closed) => s.close(closed))));
    }
  });

  it("gives ports below the kernel's ephemeral range, which port 0 never gets", async () => {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    const ports = await freePorts(64);
    expect(ports.filter((p) => p >= low! || p < 1024)).toEqual([]);
  });
});
