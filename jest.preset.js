/** Jest for every workspace: native ESM with SWC; tests import the TypeScript sources directly. */
export default {
  testEnvironment: 'node',
  testEnvironmentOptions: { customExportConditions: ['@timbra/source', 'node', 'node-addons'] },
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  testTimeout: 60_000,
  // Two test files at a time (jest's default is one fewer than the cores: one, here). Most tests wait
  // on Postgres, Redis or a process they started, so two share a 2-core machine well: the API's
  // suite 87 → 58 s, cfdi-core's ~45 → 26 s. Every test file has its own database and queue prefix.
  maxWorkers: 2,
};
