import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { documentedVariables } from '@timbra/test-support';
import { WORKER_VARIABLES } from '../src/config.ts';

const documented = documentedVariables(
  fileURLToPath(new URL('../../../docs/configuration.md', import.meta.url)),
  '## Worker',
);

describe('configuration documentation (docs/configuration.md, "Worker")', () => {
  it('lists every variable the configuration reads', () => {
    expect(WORKER_VARIABLES.filter((v) => !documented.has(v))).toEqual([]);
  });

  it('lists no variable the configuration does not read', () => {
    expect([...documented].filter((v) => !WORKER_VARIABLES.includes(v))).toEqual([]);
  });
});
