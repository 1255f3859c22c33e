/**
 * `npm run ops -- <command>`: operations on the stamping pipeline. `npm run ops -- --help` lists the
 * commands, `npm run ops -- <command> --help` explains one. Settings are the worker's (DATABASE_URL,
 * REDIS_URL, QUEUE_PREFIX, each also as `<NAME>_FILE`). Exit codes: 0 done; 1 a problem found or an
 * operation refused; 2 bad usage; 3 could not check (the PAC ledger unreachable or not covering the
 * window asked for).
 */

import { processIo } from './context.ts';
import { runOps } from './program.ts';

process.exitCode = await runOps(process.argv.slice(2), processIo);
