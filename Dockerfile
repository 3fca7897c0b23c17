# The two images, gateway and catalog, from one build stage. Build from the repository root:
#   docker build --target gateway -t tool-directory/gateway:1.0.0 \
#     --build-arg REVISION="$(git rev-parse HEAD)" .
#   docker build --target catalog -t tool-directory/catalog:1.0.0 \
#     --build-arg REVISION="$(git rev-parse HEAD)" .
# The second build reuses the first one's build stage. Node 24 LTS (supported until April
# 2028), the release the `node` development dependency pins, so `npm test` runs on the Node
# these images ship. Each image holds the dependencies its own processes load, and its CycloneDX
# SBOM at /app/sbom.cdx.json. scripts/images/check.sh builds and runs both (CI); see
# docs/deploy.md.
ARG NODE_IMAGE=node:24.21.0-bookworm-slim
ARG VERSION=1.0.0
# The OCI labels' source, creation time (RFC 3339; check.sh gives the commit's) and base digest
# (the registry digest of NODE_IMAGE, when it was pulled: `docker image inspect --format
# '{{index .RepoDigests 0}}'`, the part after the @).
ARG SOURCE=unknown
ARG CREATED=unknown
ARG BASE_DIGEST=

# --- build: all dependencies, TypeScript compiled, then each image's dependency set --------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# build-ca.crt, when the context has it: the CA bundle of a registry reached through a
# TLS-inspecting proxy (CI copies the host's). Used by this stage only; without it this COPY
# takes the two package files alone.
COPY package.json package-lock.json build-ca.cr[t] ./
# --ignore-scripts: the project's prepare script would build before the sources are here, and
# the `node` development dependency would download a second Node. No production dependency
# needs an install script (better-sqlite3 and msgpackr-extract ship prebuilt binaries), so no
# compiler either.
RUN if [ -f build-ca.crt ]; then export NODE_EXTRA_CA_CERTS="$PWD/build-ca.crt"; fi && \
    npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY services ./services
COPY scripts ./scripts
# scripts/images/dependency-sets.ts: trace what each image's server and CLI load (@vercel/nft),
# take the production SBOM (cyclonedx-npm), prune to the production dependencies, then split the
# traced files into node_modules (loaded by both images) and images/<image>/ (loaded by that
# image only, with its SBOM); its compiled copy assembles, as tsx is pruned. The script itself
# stays out of dist/.
RUN npm run build && \
    npm run --silent images:deps -- trace && \
    npm run --silent images:sbom -- --output-file images/sbom.cdx.json && \
    npm prune --omit=dev --no-audit --no-fund && npm cache clean --force && \
    node dist/scripts/images/dependency-sets.js assemble && \
    rm -rf dist/scripts/images

# --- runtime: dist/ and the dependencies both images load; no compiler, no CA bundle ---------
FROM ${NODE_IMAGE} AS runtime
ARG NODE_IMAGE
ARG VERSION
ARG SOURCE
ARG BASE_DIGEST
# The labels that change with every commit (revision, created) come last in each image, so the
# layers before them are reused from one commit to the next while their files are the same.
LABEL org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="UNLICENSED" \
      org.opencontainers.image.vendor="Tool Directory" \
      org.opencontainers.image.base.name="docker.io/library/${NODE_IMAGE}" \
      org.opencontainers.image.base.digest="${BASE_DIGEST}" \
      dev.tool-directory.sbom="/app/sbom.cdx.json"
# The CLIs are `tool-directory …` (on PATH, below); npm, kept for their `npm run` aliases, checks
# for no update and writes no log files (the root filesystem may be read-only).
ENV NODE_ENV=production \
    DATA_DIR=/data \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_LOGS_MAX=0
WORKDIR /app
# Owned by root and read-only for the app user; only DATA_DIR (a volume) is writable.
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
# The operators' CLI, package.json's bin, on PATH as `tool-directory`; the link is root's.
RUN ln -s /app/dist/scripts/cli/tool-directory.js /usr/local/bin/tool-directory && \
    mkdir -p /data && chown 1000:1000 /data
# The "node" user of the base image (the chart's runAsUser).
USER 1000:1000

# --- catalog: also runs the seed job (tool-directory seed) and the catalog CLI --------------
FROM runtime AS catalog
# What only the catalog loads (the webhook queue: bullmq, msgpackr), and its SBOM.
COPY --from=build /app/images/catalog/ ./
LABEL org.opencontainers.image.title="tool-directory-catalog" \
      org.opencontainers.image.description="Tool Directory catalog: tools, categories, search, comparison and export; runs the seed job"
ENV CATALOG_PORT=8081 \
    METRICS_PORT=9465
EXPOSE 8081 9465
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.CATALOG_PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The base image's entry point execs this: node is PID 1 and receives SIGTERM itself.
CMD ["node", "dist/services/catalog/src/server.js"]
ARG REVISION=unknown
ARG CREATED
LABEL org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"

# --- gateway: also runs the API-key CLI --------------------------------------------------------
FROM runtime AS gateway
# What only the gateway loads (the MCP server, the API reference, CORS), and its SBOM.
COPY --from=build /app/images/gateway/ ./
LABEL org.opencontainers.image.title="tool-directory-gateway" \
      org.opencontainers.image.description="Tool Directory public API: API keys, quotas, developer portal, proxy to the catalog"
ENV PORT=8080 \
    METRICS_PORT=9464
EXPOSE 8080 9464
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node is PID 1 (no npm wrapper, which would not forward SIGTERM), with the gateway's flags
# (services/gateway/src/process/node-flags.ts).
CMD ["node", "--max-semi-space-size=32", "dist/services/gateway/src/server.js"]
ARG REVISION=unknown
ARG CREATED
LABEL org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
