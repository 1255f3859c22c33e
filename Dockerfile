# One image for api, worker, pac-sandbox and migrate; the command picks the process.
# Build: docker build -t timbra .   (docker compose up builds it too)

FROM node:22-bookworm-slim AS build
# libxml2's binding (libxmljs2, the PAC sandbox's XSD check) builds with node-gyp when no prebuilt
# binary matches.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# Manifests first: the dependency layer is cached until a package.json or the lockfile changes.
COPY package.json package-lock.json ./
COPY packages/cfdi-core/package.json packages/cfdi-core/
COPY packages/db/package.json packages/db/
COPY apps/api/package.json apps/api/
COPY apps/worker/package.json apps/worker/
COPY apps/pac-sandbox/package.json apps/pac-sandbox/
COPY packages/test-support/package.json packages/test-support/
COPY packages/provider-client/package.json packages/provider-client/
COPY apps/provider-sandbox/package.json apps/provider-sandbox/
# npm ci's postinstall generates the Prisma client: it needs the schema and the generator's stub.
COPY prisma.config.ts ./
COPY prisma ./prisma
COPY packages/db/scripts packages/db/scripts
RUN npm ci --no-audit --no-fund
COPY . .
ENV TURBO_TELEMETRY_DISABLED=1
RUN npx turbo run build && npm prune --omit=dev --ignore-scripts

FROM node:22-bookworm-slim AS runtime
# tini forwards SIGTERM to node, so the api and worker shut down gracefully.
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production SAT_DIR=/app/sat
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json /app/package-lock.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/prisma ./prisma
COPY --from=build --chown=node:node /app/packages ./packages
COPY --from=build --chown=node:node /app/apps ./apps
# The SAT's public reference files; the sandbox profile also takes its test CSDs from here.
COPY --from=build --chown=node:node /app/sat ./sat
USER node
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "apps/api/dist/main.js"]
