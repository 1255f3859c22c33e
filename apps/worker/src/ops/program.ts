/**
 * The ops CLI as a function: `runOps(argv, io)` parses and runs one command with `io`'s settings and
 * output, and returns its exit code. ops-cli.ts runs it for the process; tests run it in theirs.
 */
import { Command, CommanderError } from 'commander';
import { databaseTrouble } from '@timbra/db/light';
import {
  beginRun,
  CannotCheck,
  closeAll,
  exitCode,
  fail,
  printJson,
  setExitCode,
  UsageError,
  type OpsIo,
} from './context.ts';
import { csdCommands } from './csd-commands.ts';
import { deliveryCommands } from './delivery-commands.ts';
import { globalCommands } from './global-commands.ts';
import { historyCommands } from './history-commands.ts';
import { invoiceCommands } from './invoice-commands.ts';
import { keyCommands } from './key-commands.ts';
import { outboxCommands } from './outbox-commands.ts';
import { reconcileCommand } from './reconcile-command.ts';

/** Runs one command line (without `npm run ops --`); resolves to its exit code. One run at a time. */
export async function runOps(argv: readonly string[], io: OpsIo): Promise<number> {
  beginRun(io);
  const program = new Command('npm run ops --')
    .configureOutput({ writeOut: (text) => io.stdout(text), writeErr: (text) => io.stderr(text) })
    .description("Operations on the stamping pipeline (the worker's settings: DATABASE_URL, REDIS_URL, QUEUE_PREFIX).")
    .option('--json', 'print JSON instead of text (run `npm run -s ops -- …`: without -s npm prints a banner first)')
    .showHelpAfterError('(npm run ops -- --help lists the commands)')
    .addHelpText(
      'after',
      '\nExit codes: 0 done; 1 a problem found or an operation refused; 2 bad usage; 3 could not check.',
    )
    .hook('preAction', (command) => {
      printJson(Boolean(command.optsWithGlobals().json));
    });

  // In the order `--help` lists them.
  outboxCommands(program);
  deliveryCommands(program);
  csdCommands(program);
  globalCommands(program);
  invoiceCommands(program);
  keyCommands(program);
  historyCommands(program);
  reconcileCommand(program);

  // Every usage mistake — the parser's or ours — exits 2 with the message and a pointer to --help.
  program.exitOverride();
  for (const command of program.commands) command.exitOverride();
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end here with code 0; a parser error has printed its message already.
      setExitCode(error.exitCode === 0 ? 0 : 2);
    } else if (error instanceof UsageError) {
      fail(`${error.message}\n(npm run ops -- --help lists the commands)`, 2);
    } else if (error instanceof CannotCheck) {
      fail(error.message, 3);
    } else {
      // The database down, missing, refusing the login or not migrated: nothing was done (exit 3), and
      // one line says what to fix, not Prisma's report of the call. Anything else is a failure of ours
      // or of a service: one line (exit 1). Neither prints a stack unless LOG_LEVEL=debug.
      const trouble = databaseTrouble(error);
      fail(`ops: ${trouble?.message ?? (error as Error).message}`, trouble ? 3 : 1);
      if (io.env.LOG_LEVEL === 'debug') io.stderr(`${(error as Error).stack}\n`);
    }
  } finally {
    await closeAll();
  }
  return exitCode();
}
