# dra-guard container image.
#
#   docker build -t REGISTRY/dra-guard:TAG --build-arg VERSION=$(git describe --always --dirty) .
#
# Two stages: the build stage is Debian 12 with the compiler and the -dev
# packages (the same ones `make deps` installs); the runtime stage is Debian 12
# slim with only the shared libraries the binary links, runs as a numeric
# non-root user (the Deployment's runAsUser), and holds nothing but the binary.
# tests/e2e/test_image.py checks the runtime package list against `ldd` of the
# built binary.

FROM debian:12 AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      gcc libc6-dev make pkg-config openssl \
      libmicrohttpd-dev libgnutls28-dev libssl-dev libjansson-dev libyaml-dev libcurl4-openssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# .dockerignore keeps .git out of the context, so the version comes in here.
ARG VERSION=dev
RUN make VERSION="$VERSION" dra-guard \
 && ./dra-guard version \
 && install -D -m 0755 dra-guard /out/dra-guard

FROM debian:12-slim AS runtime
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
