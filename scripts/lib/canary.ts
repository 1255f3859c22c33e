/**
 * How fast the machine ran during a measured phase, measured in it: a child process does one fixed
 * piece of work (hashing and JSON, ~1.5 ms with its wake-up: 3% of a core) every 50 ms, and the CPU
 * a piece took is the machine's speed then. On shared VMs the same work costs ±30% CPU from one run
 * to the next (the PAC sandbox's CPU a stamp, a fixed workload, ranged 2.7–3.9 ms over the six runs
 * of one comparison); a figure divided by the canary's of the same phase carries less of that.
 */
import { spawn, type ChildProcess } from 'node:child_process';

const SOURCE = `
const { createHash } = require('node:crypto');
const data = Buffer.alloc(16384, 7);
let pieces = 0;
setInterval(() => {
  let h = data;
  for (let i = 0; i < 8; i++) h = createHash('sha256').update(h).update(data).digest();
  const rows = [];
  for (let i = 0; i < 150; i++) rows.push({ i, name: 'row ' + i, at: new Date(i * 1000).toISOString() });
  if (JSON.parse(JSON.stringify(rows)).length !== rows.length) throw new Error('unreachable');
  pieces++;
}, 50);
process.on('message', () => {
  const u = process.cpuUsage();
  process.send({ pieces, cpuMs: (u.user + u.system) / 1000 });
});
process.on('disconnect', () => process.exit(0));
`;

export interface CanaryReading {
  pieces: number;
  cpuMs: number;
}

export class Canary {
  private readonly child: ChildProcess;

  constructor() {
    this.child = spawn(process.execPath, ['-e', SOURCE], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  }

  /** The pieces done and the CPU taken so far. */
  read(): Promise<CanaryReading> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the canary did not answer in 10 s')), 10_000);
      this.child.once('message', (reading) => {
        clearTimeout(timer);
        resolve(reading as CanaryReading);
      });
      this.child.send('read');
    });
  }

  /** µs of CPU a piece between two readings. */
  static microsPerPiece(before: CanaryReading, after: CanaryReading): number {
    const pieces = after.pieces - before.pieces;
    return pieces > 0 ? ((after.cpuMs - before.cpuMs) * 1000) / pieces : Number.NaN;
  }

  stop(): void {
    this.child.disconnect();
  }
}
