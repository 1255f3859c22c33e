/** `npm run ops --` commands: The CSD's validity. */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { CSD_EXPIRY_WARNING_DAYS, csdExpiry, noCertificadoOf, rfcOf } from '@timbra/cfdi-core/csd';
import { out, fail, setExitCode, env } from './context.ts';

/** `csd:check`: when the emisor's CSD expires: exit 1 within --days of its end (30) or past it — renew it at the SAT (CertiSAT) before. */
function csdCheck(program: Command): void {
  program
    .command('csd:check')
    .description(
      "when the emisor's CSD expires: exit 1 within --days of its end (30) or past it — renew it at the SAT (CertiSAT) before",
    )
    .option('--cer <path>', 'the certificate (.cer, DER or PEM); default CSD_CER_PATH')
    .addOption(
      new Option('--days <n>', 'how many days before the end it is reported (exit 1)')
        .default(CSD_EXPIRY_WARNING_DAYS)
        .argParser((v) => {
          const n = Number(v);
          if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('a whole number of days');
          return n;
        }),
    )
    .action((options: { cer?: string; days: number }) => {
      const given = options.cer ?? env().CSD_CER_PATH;
      if (!given) return fail('csd:check: give --cer or set CSD_CER_PATH', 2);
      // npm runs the CLI from apps/worker; a relative path means where the operator typed it (INIT_CWD).
      const path = resolve(env().INIT_CWD ?? process.cwd(), given);
      let cert: X509Certificate;
      try {
        cert = new X509Certificate(readFileSync(path));
      } catch (error) {
        return fail(`csd:check: ${path} is not a certificate (${(error as Error).message})`, 3);
      }
      const expiry = csdExpiry(
        { noCertificado: noCertificadoOf(cert), rfc: rfcOf(cert), validTo: new Date(cert.validTo) },
        new Date(),
        options.days,
      );
      out(
        expiry,
        `${expiry.rfc} CSD ${expiry.noCertificado}: valid until ${expiry.validTo.toISOString()} — ${
          expiry.expired
            ? 'EXPIRED'
            : `${expiry.daysLeft} days left${expiry.expiring ? ` (within ${options.days}: renew it now)` : ''}`
        }`,
      );
      setExitCode(expiry.expiring ? 1 : 0);
    });
}

export function csdCommands(program: Command): void {
  csdCheck(program);
}
