/** `npm run ops --` commands: the CSD's validity, and the CSDs and e.firmas stored sealed in the database. */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { CSD_EXPIRY_WARNING_DAYS, csdExpiry, noCertificadoOf, rfcOf } from '@timbra/cfdi-core/csd';
import {
  CannotCheck,
  UsageError,
  config,
  db,
  dbLib,
  note,
  out,
  fail,
  setExitCode,
  env,
  organizationDb,
  organizationNamed,
} from './context.ts';

/** A path as the operator typed it: npm runs the CLI from apps/worker, so relative means INIT_CWD. */
const typed = (path: string) => resolve(env().INIT_CWD ?? process.cwd(), path);

function readTyped(option: string, path: string): Buffer {
  try {
    return readFileSync(typed(path));
  } catch (error) {
    throw new UsageError(`${option}: cannot read ${typed(path)} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/** The emisor row of --rfc (default EMISOR_RFC): the API makes it at its first start. */
async function emisorOf(rfc: string | undefined): Promise<{ id: string; rfc: string }> {
  const wanted = (rfc ?? env().EMISOR_RFC)?.toUpperCase();
  if (!wanted) throw new UsageError('give --rfc or set EMISOR_RFC');
  const emisor = await (await import('@timbra/db/invoices')).emisorByRfc(await db(), wanted);
  if (!emisor)
    throw new CannotCheck(`no emisor ${wanted} in the database: start the API once with EMISOR_RFC=${wanted}`);
  return emisor;
}

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
      const path = typed(given);
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

/** What an upload command was given: the files read, the trusted CAs, and the vault that seals. */
async function uploaded(options: { cer: string; key: string; passwordFile: string; trustedCas?: string }) {
  const files = {
    cer: readTyped('--cer', options.cer),
    key: readTyped('--key', options.key),
    password: readTyped('--password-file', options.passwordFile)
      .toString('utf8')
      .replace(/\r?\n$/, ''),
  };
  const node = await import('@timbra/cfdi-node');
  const { readCertificates, CfdiError } = await import('@timbra/cfdi-core');
  const trustedCas = options.trustedCas ? readCertificates(readTyped('--trusted-cas', options.trustedCas)) : undefined;
  const vault = node.vaultOf((await config()).VAULT_KEYS);
  if (!vault) throw new CannotCheck('VAULT_KEYS is not set (VAULT_KEYS_FILE: the master key file): nothing stored');
  return { files, trustedCas, vault, node, CfdiError };
}

/** `csd:upload`: check a CSD for the emisor, seal its key and password, store it; active from now (or --active-from). */
function csdUpload(program: Command): void {
  program
    .command('csd:upload')
    .description(
      'check a CSD for the emisor (the pair, a CSD and not an e.firma, the RFC, validity, the chain), seal its key and password with VAULT_KEYS and store it; both apps seal with it from their next start once it is active',
    )
    .requiredOption('--cer <path>', 'the certificate (.cer)')
    .requiredOption('--key <path>', 'the private key (.key, encrypted PKCS#8)')
    .requiredOption('--password-file <path>', "a file holding the key's password (never on the command line)")
    .option('--rfc <rfc>', 'the emisor (default EMISOR_RFC)')
    .option('--trusted-cas <path>', "the SAT's CA certificates (PEM bundle or DER): the CSD must chain to one")
    .option('--active-from <iso>', 'when it starts sealing (default now): a renewal prepared ahead')
    .action(
      async (options: {
        cer: string;
        key: string;
        passwordFile: string;
        rfc?: string;
        trustedCas?: string;
        activeFrom?: string;
      }) => {
        const activeFrom = options.activeFrom === undefined ? undefined : new Date(options.activeFrom);
        if (activeFrom && Number.isNaN(activeFrom.getTime()))
          throw new UsageError(`--active-from: ${JSON.stringify(options.activeFrom)} is not an ISO 8601 time`);
        const { files, trustedCas, vault, node, CfdiError } = await uploaded(options);
        const emisor = await emisorOf(options.rfc);
        const { storeCsd, CsdAlreadyStored } = await dbLib.csds();
        try {
          const { stored } = await node.sealCsd(files, emisor, {
            vault,
            at: new Date(),
            ...(trustedCas ? { trustedCas } : {}),
          });
          const row = await storeCsd(await db(), { ...stored, ...(activeFrom ? { activeFrom } : {}) });
          if (row.chain === 'unchecked')
            note("the chain was not checked: give --trusted-cas with the SAT's CA certificates\n");
          out(
            { ...row, certificate: undefined, sealed: undefined },
            `stored CSD ${row.noCertificado} of ${row.rfc}: valid until ${row.validTo.toISOString()}, sealing from ${row.activeFrom.toISOString()} (the API and the worker pick it at their next start)`,
          );
        } catch (error) {
          if (error instanceof CfdiError) return fail(`${error.code}: ${error.message}`);
          if (error instanceof CsdAlreadyStored) return fail(error.message);
          throw error;
        }
      },
    );
}

/** `csd:list`: the emisor's stored CSDs: NoCertificado, validity, days left, which one seals now. */
function csdList(program: Command): void {
  program
    .command('csd:list')
    .description("the emisor's stored CSDs: NoCertificado, validity, days left, sealing from, which one seals now")
    .option('--rfc <rfc>', 'the emisor (default EMISOR_RFC)')
    .action(async (options: { rfc?: string }) => {
      const emisor = await emisorOf(options.rfc);
      const now = new Date();
      const csds = await (await dbLib.csds()).listCsds(await db(), emisor.id, now);
      out(
        csds,
        csds
          .map((c) => {
            const days = Math.floor((c.validTo.getTime() - now.getTime()) / 86_400_000);
            return `${c.noCertificado}  ${c.active ? 'SEALING' : '       '}  valid ${c.validFrom.toISOString().slice(0, 10)} to ${c.validTo.toISOString().slice(0, 10)} (${days < 0 ? 'EXPIRED' : `${days} days left`})  from ${c.activeFrom.toISOString()}  chain ${c.chain}`;
          })
          .join('\n') || `no CSD stored for ${emisor.rfc}`,
      );
    });
}

/** `efirma:upload`: check an e.firma for the organization, seal its key and password, store it. */
function efirmaUpload(program: Command): void {
  program
    .command('efirma:upload')
    .description(
      "check the organization's e.firma (FIEL: the pair, an e.firma and not a CSD, the RFC, validity, the chain), seal its key and password with VAULT_KEYS and store it; reconciliation with the SAT's record signs with it from its next run",
    )
    .requiredOption('--cer <path>', 'the certificate (.cer)')
    .requiredOption('--key <path>', 'the private key (.key, encrypted PKCS#8)')
    .requiredOption('--password-file <path>', "a file holding the key's password (never on the command line)")
    .option('--organization <id or RFC>', 'the organization (default EMISOR_RFC)')
    .option('--trusted-cas <path>', "the SAT's CA certificates (PEM bundle or DER): the e.firma must chain to one")
    .action(
      async (options: {
        cer: string;
        key: string;
        passwordFile: string;
        organization?: string;
        trustedCas?: string;
      }) => {
        const { files, trustedCas, vault, node, CfdiError } = await uploaded(options);
        const organization = await organizationNamed(options.organization);
        const { storeEfirma, EfirmaAlreadyStored } = await dbLib.csds();
        try {
          const sealed = await node.sealEfirma(files, organization, {
            vault,
            at: new Date(),
            ...(trustedCas ? { trustedCas } : {}),
          });
          const row = await storeEfirma(await organizationDb(organization.id), sealed);
          if (row.chain === 'unchecked')
            note("the chain was not checked: give --trusted-cas with the SAT's CA certificates\n");
          out(
            { ...row, certificate: undefined, sealed: undefined },
            `stored e.firma ${row.noCertificado} of ${row.rfc}: valid until ${row.validTo.toISOString()} (the SAT's record is asked with it from the next run)`,
          );
        } catch (error) {
          if (error instanceof CfdiError) return fail(`${error.code}: ${error.message}`);
          if (error instanceof EfirmaAlreadyStored) return fail(error.message);
          throw error;
        }
      },
    );
}

/** `efirma:list`: the organization's stored e.firmas: NoCertificado, validity, which one is in use. */
function efirmaList(program: Command): void {
  program
    .command('efirma:list')
    .description("the organization's stored e.firmas: NoCertificado, validity, days left, which one is in use now")
    .option('--organization <id or RFC>', 'the organization (default EMISOR_RFC)')
    .action(async (options: { organization?: string }) => {
      const organization = await organizationNamed(options.organization);
      const now = new Date();
      const { listEfirmas } = await dbLib.csds();
      const efirmas = await listEfirmas(await organizationDb(organization.id), organization.id, now);
      out(
        efirmas,
        efirmas
          .map((e) => {
            const days = Math.floor((e.validTo.getTime() - now.getTime()) / 86_400_000);
            return `${e.noCertificado}  ${e.current ? 'IN USE' : '      '}  valid ${e.validFrom.toISOString().slice(0, 10)} to ${e.validTo.toISOString().slice(0, 10)} (${days < 0 ? 'EXPIRED' : `${days} days left`})  uploaded ${e.uploadedAt.toISOString()}  chain ${e.chain}`;
          })
          .join('\n') || `no e.firma stored for ${organization.rfc}`,
      );
    });
}

export function csdCommands(program: Command): void {
  csdCheck(program);
  csdUpload(program);
  csdList(program);
  efirmaUpload(program);
  efirmaList(program);
}
