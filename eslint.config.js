// ESLint flat config for every workspace: typescript-eslint's type-checked rules (no-floating-promises
// matters in queue code), the project's boundaries (below), Prettier owns formatting.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

// Where each kind of code may reach. Apps import packages, never each other; packages never import
// apps; no runtime code uses `got`: the PAC clients have their own transport (cfdi-node/src/pac/http.ts,
// ARCHITECTURE.md) and other HTTP uses fetch — tests, benchmarks and scripts may use got as a test client.
const apps = ['@timbra/api', '@timbra/worker', '@timbra/pac-sandbox', '@timbra/provider-sandbox'];
const noAppsFrom = (self) => ({
  group: apps.filter((a) => a !== self).flatMap((a) => [a, `${a}/*`]),
  message: 'apps never import each other (ARCHITECTURE.md); share code through packages/*.',
});
const noApps = {
  group: apps.flatMap((a) => [a, `${a}/*`]),
  message: 'packages never import apps (ARCHITECTURE.md).',
};
const noGot = {
  name: 'got',
  message: 'runtime HTTP is fetch, or PacHttp for a PAC (cfdi-node/src/pac/http.ts); got is for tests and scripts.',
};
const noTestSupport = {
  group: ['@timbra/test-support', '@timbra/db/testing'],
  message: 'test kits are for tests, benchmarks and scripts, never runtime code.',
};
const restrict = (patterns, paths = []) => ['error', { patterns, paths }];
// The apps reach their data through @timbra/db's functions (one entry per table group), never
// through Prisma's model methods or raw SQL: each query and each write has one owner.
const noPrisma = {
  name: '@timbra/db',
  importNames: ['Prisma'],
  allowTypeImports: true,
  message: "raw SQL and Prisma's values live in @timbra/db; import the function you need from its entry.",
};
const PRISMA_METHODS =
  'findUnique|findUniqueOrThrow|findFirst|findFirstOrThrow|findMany|create|createMany|createManyAndReturn|update|updateMany|upsert|delete|deleteMany|count|aggregate|groupBy';
const noPrismaCalls = [
  'error',
  ...['callee.object.object.name=/^(prisma|tx|db|trx|client)$/', "callee.object.object.property.name='prisma'"].map(
    (owner) => ({
      selector: `CallExpression[callee.property.name=/^(${PRISMA_METHODS})$/][${owner}]`,
      message:
        'the apps read and write through @timbra/db (an entry per table group), not Prisma: add the query there.',
    }),
  ),
  {
    selector: 'MemberExpression[property.name=/^[$](queryRaw|executeRaw|queryRawUnsafe|executeRawUnsafe)$/]',
    message: 'raw SQL lives in @timbra/db, one typed function per statement.',
  },
];
const ioModules = (message) => [
  {
    group: [
      'fs',
      'fs/*',
      'net',
      'http',
      'https',
      'http2',
      'tls',
      'dns',
      'dns/*',
      'dgram',
      'child_process',
      'module',
    ].flatMap((m) => [m, `node:${m}`]),
    message,
  },
];
// The ops CLI answers --help and a usage mistake without loading the data layer (~0.5 s instead of
// ~1.5 s): these only as `import type` at the top, and by `await import()` in the command that uses them.
const loadedByTheCommand = [
  '@timbra/db',
  ...[
    'invoices',
    'payments',
    'tickets',
    'catalog',
    'outbox',
    'deliveries',
    'webhook-events',
    'keys',
    'retention',
    'redis',
  ].map((entry) => `@timbra/db/${entry}`),
  '@timbra/cfdi-core',
  'bullmq',
  '../config.ts',
  '../config-schema.ts',
  '../operations/reconcile.ts',
].map((name) => ({
  name,
  allowTypeImports: true,
  message: "the ops commands load this in the command that needs it (await import); parsing uses '@timbra/db/light'.",
}));

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/.turbo/**', '**/coverage/**', '**/generated/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js'] })],
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      'no-console': 'error',
      // A cycle makes initialisation order matter and hides which module owns what.
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
  },
  // Runtime sources, by where they live.
  {
    files: ['apps/api/src/**/*.ts'],
    rules: {
      'no-restricted-imports': restrict([noAppsFrom('@timbra/api'), noTestSupport], [noGot, noPrisma]),
      'no-restricted-syntax': noPrismaCalls,
    },
  },
  {
    files: ['apps/worker/src/**/*.ts'],
    rules: {
      'no-restricted-imports': restrict([noAppsFrom('@timbra/worker'), noTestSupport], [noGot, noPrisma]),
      'no-restricted-syntax': noPrismaCalls,
    },
  },
  {
    files: ['apps/worker/src/ops/*.ts'],
    rules: {
      'no-restricted-imports': restrict(
        [noAppsFrom('@timbra/worker'), noTestSupport],
        [noGot, noPrisma, ...loadedByTheCommand],
      ),
    },
  },
  {
    files: ['apps/pac-sandbox/src/**/*.ts'],
    rules: { 'no-restricted-imports': restrict([noAppsFrom('@timbra/pac-sandbox'), noTestSupport], [noGot]) },
  },
  {
    files: ['apps/provider-sandbox/src/**/*.ts'],
    rules: { 'no-restricted-imports': restrict([noAppsFrom('@timbra/provider-sandbox'), noTestSupport], [noGot]) },
  },
  { files: ['packages/*/src/**/*.ts'], rules: { 'no-restricted-imports': restrict([noApps, noTestSupport], [noGot]) } },
  // cfdi-core is pure: what it needs from files or the network comes from its caller as bytes or
  // objects, and its Node adapters (the PAC clients, file readers) live in @timbra/cfdi-node.
  {
    files: ['packages/cfdi-core/src/**/*.ts'],
    rules: {
      'no-restricted-imports': restrict(
        [noApps, noTestSupport, ...ioModules('cfdi-core does no I/O: read it in @timbra/cfdi-node and pass it in.')],
        [noGot],
      ),
    },
  },
  { files: ['packages/db/src/testing.ts'], rules: { 'no-restricted-imports': restrict([noApps]) } },
  { files: ['packages/test-support/**/*.ts'], rules: { 'no-restricted-imports': restrict([noApps]) } },
  // Tests, benchmarks and scripts of an app may use test kits and got, never another app.
  {
    files: ['apps/api/{test,bench,scripts}/**/*.ts'],
    rules: { 'no-restricted-imports': restrict([noAppsFrom('@timbra/api')]) },
  },
  {
    files: ['apps/worker/{test,bench}/**/*.ts'],
    rules: { 'no-restricted-imports': restrict([noAppsFrom('@timbra/worker')]) },
  },
  {
    files: ['apps/pac-sandbox/{test,bench,scripts}/**/*.ts'],
    rules: { 'no-restricted-imports': restrict([noAppsFrom('@timbra/pac-sandbox')]) },
  },
  {
    files: ['apps/provider-sandbox/test/**/*.ts'],
    rules: { 'no-restricted-imports': restrict([noAppsFrom('@timbra/provider-sandbox')]) },
  },
  { files: ['**/*.js', '**/*.mjs'], ...tseslint.configs.disableTypeChecked },
  prettier,
);
