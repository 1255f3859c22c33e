/** `npm run ops --` commands: API keys and expired Idempotency-Keys. */
import { type Command } from 'commander';
import { API_KEY_NAME_RULE, DEFAULT_SCOPES, isApiKeyName, isScope, SCOPES } from '@timbra/db/light';
import { dbLib, UsageError, out, fail, organizationDb, organizationNamed } from './context.ts';

const ORGANIZATION = ['--organization <id or RFC>', "the organization (platform mode; default EMISOR_RFC's)"] as const;
/** The client of the organization the command names: its keys are its own. */
const organizationOf = async (options: { organization?: string }) =>
  organizationDb((await organizationNamed(options.organization)).id);

/** `keys:create`: a new API key, printed once and stored hashed. */
function keysCreate(program: Command): void {
  program
    .command('keys:create')
    .description('a new API key, printed once and stored hashed')
    .argument('<name>', 'its name (letters, digits, _ . -)')
    .option('--scopes <list>', `comma-separated: ${SCOPES.join(', ')}`, DEFAULT_SCOPES.join(','))
    .option(...ORGANIZATION)
    .action(async (name: string, options: { scopes: string; organization?: string }) => {
      if (!isApiKeyName(name)) throw new UsageError(`<name>: ${JSON.stringify(name)} is not ${API_KEY_NAME_RULE}`);
      const scopes = options.scopes.split(',').map((s) => s.trim());
      const unknown = scopes.filter((s) => !isScope(s));
      if (unknown.length > 0)
        throw new UsageError(`--scopes: ${unknown.join(', ')}: the scopes are ${SCOPES.join(', ')}`);
      const prisma = await organizationOf(options);
      const { createApiKey, ApiKeyNameTaken } = await dbLib.keys();
      try {
        const made = await createApiKey(prisma, name, [...new Set(scopes.filter(isScope))]);
        out(
          { key: made.key, ...made.apiKey },
          `${made.key}\n(API key ${made.apiKey.name}, scopes ${made.apiKey.scopes.join(', ')}: shown this once, stored hashed)`,
        );
      } catch (error) {
        if (!(error instanceof ApiKeyNameTaken)) throw error;
        fail(error.message);
      }
    });
}

/** `keys:list`: the organization's API keys: name, prefix, scopes, source, last used, revoked (never the secret). */
function keysList(program: Command): void {
  program
    .command('keys:list')
    .description("the organization's API keys: name, prefix, scopes, source, last used, revoked (never the secret)")
    .option(...ORGANIZATION)
    .action(async (options: { organization?: string }) => {
      const prisma = await organizationOf(options);
      const keys = await (await dbLib.keys()).listApiKeys(prisma);
      out(
        keys,
        keys
          .map(
            (k) =>
              `${k.name.padEnd(20)} ${(k.prefix ?? '—').padEnd(9)} ${k.scopes.join(',').padEnd(24)} ${k.source.padEnd(6)} last used ${k.lastUsedAt?.toISOString() ?? 'never'}${k.revokedAt ? `  REVOKED ${k.revokedAt.toISOString()}` : ''}`,
          )
          .join('\n') || 'no API keys',
      );
    });
}

/** `keys:revoke`: revoke an API key: refused at once on every API instance. */
function keysRevoke(program: Command): void {
  program
    .command('keys:revoke')
    .description('revoke an API key: refused at once on every API instance')
    .argument('<key>', 'its name, prefix or id')
    .option(...ORGANIZATION)
    .action(async (target: string, options: { organization?: string }) => {
      const prisma = await organizationOf(options);
      const revoked = await (await dbLib.keys()).revokeApiKey(prisma, target);
      if (!revoked) return fail(`no single API key named ${target} (name, prefix or id)`);
      out(revoked, `API key ${revoked.name} revoked at ${revoked.revokedAt!.toISOString()}`);
    });
}

/** `keys:purge`: delete expired Idempotency-Key records. */
function keysPurge(program: Command): void {
  program
    .command('keys:purge')
    .description("delete the organization's expired Idempotency-Key records")
    .option(...ORGANIZATION)
    .action(async (options: { organization?: string }) => {
      const prisma = await organizationOf(options);
      const count = await (await dbLib.keys()).purgeExpiredIdempotencyKeys(prisma);
      out({ purged: count }, `purged ${count} expired idempotency keys`);
    });
}

export function keyCommands(program: Command): void {
  keysCreate(program);
  keysList(program);
  keysRevoke(program);
  keysPurge(program);
}
