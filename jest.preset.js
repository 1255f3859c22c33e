/** Jest for every workspace: native ESM with SWC; tests import the TypeScript sources directly. */
export default {
  testEnvironment: 'node',
  testEnvironmentOptions: { customExportConditions: ['@timbra/source', 'node', 'node-addons'] },
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  testTimeout: 60_000,
};
