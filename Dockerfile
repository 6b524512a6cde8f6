# The service as one container image: the Bun-compiled executable, CA certificates and the C library it links, nothing else.
#
# From source (CI, any machine that reaches the registries):
#   docker build --build-arg REVISION="$(git rev-parse HEAD)" --build-arg VERSION=0.1.0 \
#     --build-arg SOURCE=https://example.com/your/repository -t codeowner-approval-service:0.1.0 .
# From a binary built on the host from the same commit (no Bun download; what e2e/container runs with --network=none):
#   BUILD_REVISION="$(git rev-parse HEAD)" bun run build
#   podman build --target prebuilt --network=none --build-arg BASE_IMAGE=localhost/debian:bookworm-slim \
#     --build-arg REVISION="$(git rev-parse HEAD)" --build-arg VERSION=0.1.0 -t codeowner-approval-service:0.1.0 .
#
# No secret belongs in a build argument, a layer or an environment default: the App key, the webhook secret and the
# database URL are mounted at run time as read-only files (see docs/operations.md "Deployment").

# Base images are arguments so a machine without a registry can build from locally made bases (docs/operations.md "Container image").
ARG BUN_IMAGE=docker.io/oven/bun:1.4.4
ARG BASE_IMAGE=docker.io/library/debian:bookworm-slim

# ---- build: the pinned Bun installs from the lockfile, builds the playground and compiles the executable ----
FROM ${BUN_IMAGE} AS build
WORKDIR /src
COPY package.json bun.lock bunfig.toml tsconfig.json ./
RUN test "$(bun --version)" = "1.4.4" && bun install --frozen-lockfile
COPY scripts ./scripts
COPY migrations ./migrations
COPY server ./server
COPY web ./web
# The verified source commit (40 or 64 lowercase hex) baked into /api/runtime-identity as build_revision; empty: null.
ARG REVISION=""
RUN BUILD_REVISION="${REVISION}" bun run build \
 && mkdir -p /out && cp dist/service /out/service

# ---- rootfs: CA certificates, the C library the executable links, and a passwd entry for the fixed non-root user ----
FROM ${BASE_IMAGE} AS rootfs
RUN set -eu; \
    if [ ! -s /etc/ssl/certs/ca-certificates.crt ]; then \
      apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates; \
      rm -rf /var/lib/apt/lists/*; \
    fi; \
    mkdir -p /rootfs/etc/ssl/certs /rootfs/tmp; \
    chmod 1777 /rootfs/tmp; \
    cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ca-certificates.crt; \
    for lib in libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2; do \
      path=$(ldconfig -p | awk -v lib="$lib" '$1 == lib { print $NF; exit }'); \
      test -n "$path"; \
      cp --parents -L "$path" /rootfs; \
    done; \
    for loader in /lib64/ld-linux-*.so.* /lib/ld-linux-*.so.*; do \
      if [ -e "$loader" ]; then cp --parents -L "$loader" /rootfs; fi; \
    done; \
    echo 'nonroot:x:65532:65532:nonroot:/nonexistent:/usr/sbin/nologin' > /rootfs/etc/passwd; \
    echo 'nonroot:x:65532:' > /rootfs/etc/group; \
    echo 'hosts: files dns' > /rootfs/etc/nsswitch.conf

# ---- runtime-base: everything but the executable and the labels ----
FROM scratch AS runtime-base
COPY --from=rootfs /rootfs/ /
USER 65532:65532
WORKDIR /
EXPOSE 8080
ENTRYPOINT ["/service"]
CMD ["serve"]

# The labels come last in each final stage: buildah (podman build) 1.28 reuses a cached LABEL layer even when the build
# arguments in it changed, so they must follow the executable, which changes with the revision baked into it.

# ---- prebuilt: the executable built on the host from the same commit (`--target prebuilt`) ----
FROM runtime-base AS prebuilt
ARG PREBUILT_BINARY=dist/service
COPY --chown=0:0 --chmod=0555 ${PREBUILT_BINARY} /service
ARG VERSION=""
ARG REVISION=""
ARG SOURCE=""
LABEL org.opencontainers.image.title="codeowner-approval-service" \
      org.opencontainers.image.description="Self-hosted code-owner approval check service" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}"

# ---- runtime (default): the executable compiled by the build stage ----
FROM runtime-base AS runtime
COPY --from=build --chown=0:0 --chmod=0555 /out/service /service
ARG VERSION=""
ARG REVISION=""
ARG SOURCE=""
LABEL org.opencontainers.image.title="codeowner-approval-service" \
      org.opencontainers.image.description="Self-hosted code-owner approval check service" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}"
