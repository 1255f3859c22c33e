# Two images from one build; the command picks the process.
#   production (the default target): the API, the worker and the migration — no PAC or provider
#     sandbox, no test CSDs, no dev dependencies. The CSD and every secret come from files at run time
#     (docs/deploying.md: CSD_CER_PATH, CSD_KEY_PATH, CSD_PASSWORD_FILE and the other *_FILE settings).
#       docker build -t timbra .
#   sandbox: everything, for the compose file's PAC and provider sandboxes and its demo.
#       docker build --target sandbox -t timbra-sandbox .

FROM node:22-bookworm-slim AS build
# libxml2's binding (libxmljs2, the PAC sandbox's XSD check) builds with node-gyp when no prebuilt
# binary matches.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# Manifests first: the dependency layer is cached until a package.json or the lockfile changes.
COPY package.json package-lock.json ./
COPY packages/cfdi-core/package.json packages/cfdi-core/
COPY packages/cfdi-node/package.json packages/cfdi-node/
COPY packages/settings/package.json packages/settings/
COPY packages/db/package.json packages/db/
COPY packages/globals/package.json packages/globals/
COPY apps/api/package.json apps/api/
COPY apps/worker/package.json apps/worker/
COPY apps/pac-sandbox/package.json apps/pac-sandbox/
COPY packages/test-support/package.json packages/test-support/
COPY packages/provider-client/package.json packages/provider-client/
COPY packages/client/package.json packages/client/
COPY apps/provider-sandbox/package.json apps/provider-sandbox/
# npm ci's postinstall generates the Prisma client (it needs the schema and the generator's stub) and
# @timbra/client's types (from the API's spec).
COPY apps/api/openapi.yaml apps/api/
COPY prisma.config.ts ./
COPY prisma ./prisma
COPY packages/db/scripts packages/db/scripts
RUN npm ci --no-audit --no-fund
COPY . .
ENV TURBO_TELEMETRY_DISABLED=1
# The demo client (scripts/demo, the compose `demo` profile) is compiled beside the workspaces.
RUN npx turbo run build && npx tsc -p scripts/demo/tsconfig.build.json && npm prune --omit=dev --ignore-scripts
# The production tree: the API, the worker, the migration and the packages they import, with the
# production dependencies; the sandboxes' workspaces and the SAT's test CSDs left out.
RUN mkdir -p /prod/apps /prod/packages /prod/sat /prod/scripts /prod/docs \
 && cp -a package.json package-lock.json prisma node_modules /prod/ \
 && cp -a docs/errors.md /prod/docs/ \
 && cp -a scripts/healthcheck.mjs /prod/scripts/ \
 && cp -a apps/api apps/worker /prod/apps/ \
 && cp -a packages/cfdi-core packages/cfdi-node packages/settings packages/db packages/globals packages/provider-client packages/client /prod/packages/ \
 && cp -a sat/README.md sat/catalogos sat/cfd /prod/sat/ \
 && rm -rf /prod/node_modules/@timbra/pac-sandbox /prod/node_modules/@timbra/provider-sandbox \
      /prod/node_modules/@timbra/test-support /prod/node_modules/libxmljs2

FROM node:22-bookworm-slim AS base
# tini forwards SIGTERM to node, so the api and worker shut down gracefully.
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production SAT_DIR=/app/sat
WORKDIR /app
ENTRYPOINT ["/usr/bin/tini", "--"]
# The API's /readyz on PORT by default; the worker's container sets HEALTHCHECK_URL to its health
# port's /readyz (docker-compose.yml does), the sandboxes to their /healthz.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["node", "scripts/healthcheck.mjs"]

FROM base AS sandbox
COPY --from=build --chown=node:node /app/package.json /app/package-lock.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/prisma ./prisma
COPY --from=build --chown=node:node /app/scripts/healthcheck.mjs ./scripts/healthcheck.mjs
COPY --from=build --chown=node:node /app/scripts/demo/dist ./scripts/demo/dist
COPY --from=build --chown=node:node /app/packages ./packages
COPY --from=build --chown=node:node /app/apps ./apps
# The SAT's public reference files and its test CSDs (the sandbox profile's).
COPY --from=build --chown=node:node /app/sat ./sat
USER node
CMD ["node", "apps/pac-sandbox/dist/main.js"]

# The last stage is the default target: production.
FROM base AS production
COPY --from=build --chown=node:node /prod/ ./
USER node
CMD ["node", "apps/api/dist/main.js"]
