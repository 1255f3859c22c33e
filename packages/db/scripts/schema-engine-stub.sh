#!/bin/sh
# Prisma's CLI downloads its native schema engine before `generate`, which machines without internet
# cannot do. `generate` never runs the engine, so pointing PRISMA_SCHEMA_ENGINE_BINARY here is enough.
# Migrations are applied by src/migrate.ts (plain SQL files in prisma/migrations), never by this.
echo "schema engine is not available here; migrations run with: npm run db:migrate" >&2
exit 1
