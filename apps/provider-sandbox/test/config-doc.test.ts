import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { documentedVariables } from '@timbra/test-support';
import { PROVIDER_SANDBOX_VARIABLES } from '../src/config.ts';

const documented = documentedVariables(fileURLToPath(new URL('../README.md', import.meta.url)), '## Configuration');

describe('configuration documentation (README, "Configuration")', () => {
  it('lists every variable the configuration reads', () => {
    expect(PROVIDER_SANDBOX_VARIABLES.filter((v) => !documented.has(v))).toEqual([]);
  });

  it('lists no variable the configuration does not read', () => {
    expect([...documented].filter((v) => !PROVIDER_SANDBOX_VARIABLES.includes(v))).toEqual([]);
  });
});
