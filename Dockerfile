# syntax=docker/dockerfile:1.7
# treasury-bot worker image: build with dev dependencies, ship production dependencies only.

FROM node:24.21-bookworm-slim AS build
WORKDIR /app
# patches/ must be there before `npm ci`: its postinstall (patch-package) applies them, and finding no
# patch files is not an error, so a missing folder would silently ship the unpatched postgres driver.
COPY package.json package-lock.json ./
COPY patches ./patches
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM node:24.21-bookworm-slim AS deps
WORKDIR /app
# patch-package is a production dependency so that this postinstall works without dev dependencies.
COPY package.json package-lock.json ./
COPY patches ./patches
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:24.21-bookworm-slim AS runtime
ENV NODE_ENV=production \
    TREASURY_STRATEGIES=/app/strategies \
    TREASURY_CONFIG=/app/config/default.yaml \
    TREASURY_DATA_DIR=/app/data
WORKDIR /app
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --chown=root:root package.json ./
COPY --chown=root:root drizzle ./drizzle
COPY --chown=root:root config ./config
COPY --chown=root:root strategies ./strategies
# The code is owned by root and read-only to the worker; only the embedded data folder is writable.
RUN mkdir -p /app/data && chown node:node /app/data
USER node
# Operators mount their own strategy files and settings here; secrets come as files through
# TREASURY_API_TOKEN_FILE, TREASURY_WEBHOOK_SECRET_FILE and DATABASE_URL_FILE (e.g. Docker or Kubernetes
# secrets).
VOLUME ["/app/strategies", "/app/config", "/app/data"]
# 9464: operations (/metrics, /healthz, /readyz), on 127.0.0.1 unless TREASURY_OPS_ADDR opens it;
# 8080: the webhook receiver alone, when a webhook secret is set (TREASURY_WEBHOOK_ADDR).
EXPOSE 9464 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.TREASURY_OPS_ADDR||':9464').split(':').pop()+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["node", "--enable-source-maps", "dist/src/cli.js"]
CMD ["run"]
