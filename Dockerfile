# Multi-stage build of promptd: a static binary (no cgo: SQLite is pure Go)
# in a scratch image running as a non-root user (65532).
#
# Every base is pinned to an exact version (deploy/check fails on a
# floating or major-only tag); docs/deploy.md says how to pin digests as
# well. No `# syntax=` line: the builder's own Dockerfile frontend is used,
# so no floating frontend image is pulled either.

FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# VERSION names the build in --version and promptd_build_info
# (docker build --build-arg VERSION=v1.2.3 .).
ARG VERSION=dev
# timetzdata: the time zone database goes into the binary (scratch has no
# /usr/share/zoneinfo).
RUN CGO_ENABLED=0 go build -trimpath -tags timetzdata -ldflags="-s -w -X main.version=${VERSION}" -o /out/promptd ./cmd/promptd \
 && CGO_ENABLED=0 go build -trimpath -tags timetzdata -ldflags="-s -w -X main.version=${VERSION}" -o /out/promptctl ./cmd/promptctl \
 && mkdir -p /out/data /out/tmp \
 && chmod 1777 /out/tmp \
 && echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' > /out/passwd \
 && echo 'nonroot:x:65532:' > /out/group

FROM scratch
# CA roots for outgoing TLS (webhooks, MySQL/Redis/etcd over TLS, OTLP).
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
# The non-root user by name, for tools that look it up.
COPY --from=build /out/passwd /etc/passwd
COPY --from=build /out/group /etc/group
COPY --from=build /out/tmp /tmp
COPY --from=build /out/promptd /usr/local/bin/promptd
# promptctl beside it, for `docker exec ... promptctl` against the local API.
COPY --from=build /out/promptctl /usr/local/bin/promptctl
# The embedded-mode data directory (SQLite, generated tokens), owned by
# the non-root user.
COPY --from=build --chown=65532:65532 /out/data /data
ENV PROMPTD_ADDR=0.0.0.0:8080 \
    PROMPTD_DATA_DIR=/data
VOLUME ["/data"]
USER 65532:65532
EXPOSE 8080
# No shell or curl in the image: promptd probes itself (exit 0 on 200).
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/promptd", "healthcheck", "--ready"]
ENTRYPOINT ["/usr/local/bin/promptd"]
