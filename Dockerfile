# syntax=docker/dockerfile:1
# Practice sessions service: gRPC, Connect, gRPC-Web and REST on one port (8080).
#
#   docker build -t practice-sessions .
#   docker run --rm -p 8080:8080 -e DATABASE_URL=mysql://user:pass@db:3306/practice \
#     -e JWT_SECRET=... practice-sessions
#
# There is no build step: the service runs its TypeScript through tsx, a
# runtime dependency, so the image holds src/ and gen/ as they are in git.
# Not built on the machines this repository is developed on (no Docker
# engine there); what it relies on was checked in a copy of the repository
# (see README, "Deploy").

ARG NODE_IMAGE=node:20-slim

# ---- production dependencies only ------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: no dependency install scripts, as in development (npm 11's
# allowScripts); esbuild (under tsx) finds its binary in its platform package.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force

# ---- runtime ------------------------------------------------------------------
FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    # tsx caches compiled files under TMPDIR by default; without the cache the
    # root filesystem can be read-only (start-up time was the same either way).
    TSX_DISABLE_CACHE=1
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY gen ./gen
COPY src ./src
COPY scripts ./scripts

# The base image's unprivileged "node" user, by number so that Kubernetes'
# runAsNonRoot can check it.
USER 1000:1000
EXPOSE 8080 9464

# Process up (GET /healthz); Kubernetes uses its own probes instead.
# The slim image has no curl: Node's fetch does it.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT||8080}/healthz`).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

# node itself, as `npm start` runs it but without npm in between: SIGTERM goes
# straight to the service, which shuts down gracefully. `--import tsx` runs
# the TypeScript in this one process. Migrations run at start-up.
CMD ["node", "--import", "tsx", "src/main.ts"]
