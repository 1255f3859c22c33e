import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// packages/db/{src,dist} → repository root → prisma/migrations. Containers copy the same layout.
export const MIGRATIONS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../../prisma/migrations');
