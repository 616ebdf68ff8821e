# syntax=docker/dockerfile:1
# Practice sessions service: gRPC, Connect, gRPC-Web and REST on one port (8080).
#
#   docker build -t practice-sessions .
#   docker run --rm -p 8080:8080 -e DATABASE_URL=mysql://user:pass@db:3306/practice \
#     -e JWT_SECRET=... practice-sessions
#
# Three stages: the build compiles the TypeScript to dist/; the runtime holds
# that JavaScript and the production dependencies only.

ARG NODE_IMAGE=node:24-slim

# ---- build: every dependency, tsc emits dist/ (JavaScript + source maps) ------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the image is Node 24 already, so the `node` devDependency
# need not fetch its binary; better-sqlite3 ships prebuilds.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY gen ./gen
COPY src ./src
COPY scripts ./scripts
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json

# ---- production dependencies only --------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY patches ./patches
# The install scripts stay off; patches/ (Connect, the OTLP encoder) go on by hand.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && node_modules/.bin/patch-package --error-on-fail \
 && npm cache clean --force

# ---- runtime ------------------------------------------------------------------
FROM ${NODE_IMAGE}
# jemalloc, returning freed pages within a second from a thread of its own:
# glibc's malloc keeps what a flood of connections freed (its heap holes),
# so RSS stayed 180 MB up after one (docs/operations.md, "Memory").
RUN apt-get update \
 && apt-get install -y --no-install-recommends libjemalloc2 \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "$(find /usr/lib -name libjemalloc.so.2 | head -n 1)" /usr/local/lib/libjemalloc.so
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    LD_PRELOAD=/usr/local/lib/libjemalloc.so \
    MALLOC_CONF=background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
# Read at start-up: the service refuses to start if one is not applied.
COPY --from=deps /app/patches ./patches
COPY --from=build /app/dist ./dist
COPY package.json ./

# The base image's unprivileged "node" user, by number so that Kubernetes'
# runAsNonRoot can check it.
USER 1000:1000
EXPOSE 8080 9464

# Process up (GET /healthz); Kubernetes uses its own probes instead.
# The slim image has no curl: Node's fetch does it.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT||8080}/healthz`).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

# node itself, without npm in between, so SIGTERM reaches the service.
# Migrations run at start-up; as a job: node dist/scripts/migrate.js.
# main.js starts OpenTelemetry first when an OTEL_* variable asks for traces.
CMD ["node", "--enable-source-maps", "dist/src/main.js"]
