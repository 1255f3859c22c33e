/**
 * `npm run freeze -- <request.json|-> [options]` — freezes an invoice request and prints the sealed
 * XML and its cadena original. See packages/cfdi-core/README.md for the options.
 *
 * Exit codes: 0 frozen; 2 invalid request or CSD (the error code and every problem on stderr);
 * 64 bad usage.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CfdiError, CfdiValidationError, freezeComprobante, loadCsd } from '@timbra/cfdi-core';

const USAGE = `usage: npm run freeze -- <request.json | -> [--json] [--cer FILE --key FILE --password-file FILE] [--sat-dir DIR]

Freezes an invoice request (JSON, see packages/cfdi-core/README.md) into a sealed CFDI 4.0 and prints
the XML, then a blank line and the cadena original. Without --cer/--key the SAT test CSD of the
request's emisor RFC is used from <sat-dir>/csd (default: $SAT_DIR or the repository's sat/).
  --json            print { xml, cadenaOriginal, sello, noCertificado, fecha, timeZone, stampKey, totals } as JSON
`;

function main(argv: string[]): number {
  let args;
  try {
    args = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        json: { type: 'boolean', default: false },
        cer: { type: 'string' },
        key: { type: 'string' },
        'password-file': { type: 'string' },
        'sat-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}`);
    return 64;
  }
  const { values, positionals } = args;
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const source = positionals[0];
  if (source === undefined || positionals.length > 1) {
    process.stderr.write(USAGE);
    return 64;
  }

  let request: unknown;
  try {
    // npm runs workspace scripts in the workspace folder; paths are relative to where npm was invoked.
    const path = source === '-' ? 0 : resolve(process.env.INIT_CWD ?? process.cwd(), source);
    request = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    process.stderr.write(`cannot read request ${source}: ${(error as Error).message}\n`);
    return 2;
  }

  try {
    const csd = readCsd(request, values);
    const frozen = freezeComprobante(request, csd);
    if (values.json) {
      const { request: _request, ...rest } = frozen;
      process.stdout.write(`${JSON.stringify(rest, null, 2)}\n`);
    } else {
      process.stdout.write(`${frozen.xml}\n\n${frozen.cadenaOriginal}\n`);
    }
    return 0;
  } catch (error) {
    if (error instanceof CfdiValidationError) {
      process.stderr.write(`${error.code}: invalid invoice request\n`);
      for (const issue of error.issues) process.stderr.write(`  ${issue.path || '(root)'}: ${issue.message}\n`);
      return 2;
    }
    if (error instanceof CfdiError) {
      process.stderr.write(`${error.code}: ${error.message}\n`);
      return 2;
    }
    if (error instanceof UsageError) {
      process.stderr.write(`${error.message}\n`);
      return 64;
    }
    throw error;
  }
}

class UsageError extends Error {}

function readCsd(
  request: unknown,
  values: { cer?: string; key?: string; 'password-file'?: string; 'sat-dir'?: string },
) {
  if (values.cer !== undefined || values.key !== undefined) {
    if (values.cer === undefined || values.key === undefined || values['password-file'] === undefined) {
      throw new UsageError('--cer, --key and --password-file go together');
    }
    return loadCsd(
      readFileSync(values.cer),
      readFileSync(values.key),
      readFileSync(values['password-file'], 'utf8').trim(),
    );
  }
  const here = dirname(fileURLToPath(import.meta.url));
  const satDir = values['sat-dir'] ?? process.env.SAT_DIR ?? resolve(here, '../../../../sat');
  const rfc = (request as { emisor?: { rfc?: unknown } } | null)?.emisor?.rfc;
  if (typeof rfc !== 'string' || !/^[A-Z&Ñ0-9]{12,13}$/u.test(rfc)) {
    throw new UsageError('the request has no emisor.rfc to pick a test CSD for; pass --cer/--key/--password-file');
  }
  const base = join(satDir, 'csd', rfc);
  if (!existsSync(`${base}.cer`)) {
    throw new UsageError(`no test CSD for ${rfc} in ${join(satDir, 'csd')}; pass --cer/--key/--password-file`);
  }
  return loadCsd(
    readFileSync(`${base}.cer`),
    readFileSync(`${base}.key`),
    readFileSync(`${base}.password.txt`, 'utf8'),
  );
}

process.exitCode = main(process.argv.slice(2));
