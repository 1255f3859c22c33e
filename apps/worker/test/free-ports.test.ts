/**
 * The tests' and harnesses' free ports (`freePorts` in @timbra/test-support): every port of one call
 * is different and can be bound at once — the dev command's test once failed because two of its
 * ports, taken one after the other, came out the same.
 */
import { describe, expect, it } from '@jest/globals';
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
});
