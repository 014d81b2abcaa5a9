# dra-guard container image.
#
#   docker build -t REGISTRY/dra-guard:TAG --build-arg VERSION=$(git describe --always --dirty) .
#
# Two stages: the build stage is Debian 12 with the compiler, the -dev
# packages (the same ones `make deps` installs) and python3, which the
# profile-guided release build (`make release`) needs for its training
# corpus; the runtime stage is Debian 12 slim with only the shared libraries
# the binary links, runs as a numeric non-root user (the Deployment's
# runAsUser), and holds nothing but the binary. `make image` builds both
# stages for real and checks them (tests/image/test_image_build.py);
# tests/e2e/test_image.py checks this file against `ldd` of the built binary.
#
# The base images are arguments only so that a test can build from a local
# Debian 12 image without pretending it is the registry's; the defaults are
# what a release is built from.
ARG BUILD_IMAGE=debian:12
ARG RUNTIME_IMAGE=debian:12-slim

FROM ${BUILD_IMAGE} AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      gcc libc6-dev make pkg-config openssl python3 \
      libmicrohttpd-dev libgnutls28-dev libssl-dev libjansson-dev libyaml-dev libcurl4-openssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# .dockerignore keeps .git out of the context, so the version comes in here.
ARG VERSION=dev
# Parallel jobs of the build (the PGO training itself runs on one core).
ARG JOBS=2
RUN make -j"$JOBS" VERSION="$VERSION" release \
 && build/release/dra-guard version \
 && install -D -m 0755 build/release/dra-guard /out/dra-guard

FROM ${RUNTIME_IMAGE} AS runtime
# The libraries the binary links directly (its DT_NEEDED entries, less libc6,
# which every Debian image has); apt brings what they depend on.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libmicrohttpd12 libgnutls30 libssl3 libjansson4 libyaml-0-2 libcurl4 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/dra-guard /usr/local/bin/dra-guard
# Numeric, so the kubelet can check runAsNonRoot without an /etc/passwd entry;
# the same uid/gid as the Deployment's securityContext.
USER 65532:65532
EXPOSE 8443 9090
ENTRYPOINT ["/usr/local/bin/dra-guard"]
CMD ["serve"]
