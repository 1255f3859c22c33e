import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { documentedVariables } from '@timbra/test-support';
import { API_VARIABLES } from '../src/config.ts';

const documented = documentedVariables(
  fileURLToPath(new URL('../../../docs/configuration.md', import.meta.url)),
  '## API',
);

describe('configuration documentation (docs/configuration.md, "API")', () => {
  it('lists every variable the configuration reads', () => {
    expect(API_VARIABLES.filter((v) => !documented.has(v))).toEqual([]);
  });

  it('lists no variable the configuration does not read', () => {
    expect([...documented].filter((v) => !API_VARIABLES.includes(v))).toEqual([]);
  });
});
