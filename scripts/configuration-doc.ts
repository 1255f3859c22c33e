/** `npm run docs:config`: writes docs/configuration.md from the settings' schema (packages/settings). */
import { writeFileSync } from 'node:fs';
import { configurationDoc } from '@timbra/settings';

const path = new URL('../docs/configuration.md', import.meta.url);
writeFileSync(path, configurationDoc());
process.stdout.write(`wrote ${path.pathname}\n`);
