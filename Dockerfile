# syntax=docker/dockerfile:1
# Multi-stage build of promptd: a static binary (no cgo: SQLite is pure Go)
# in a distroless image running as a non-root user.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# VERSION names the build in --version and promptd_build_info
# (docker build --build-arg VERSION=v1.2.3 .).
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /out/promptd ./cmd/promptd \
 && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /out/promptctl ./cmd/promptctl \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/promptd /usr/local/bin/promptd
# promptctl beside it, for `docker exec ... promptctl` against the local API.
COPY --from=build /out/promptctl /usr/local/bin/promptctl
# The embedded-mode data directory (SQLite, generated tokens), owned by
# the image's nonroot user (65532).
COPY --from=build --chown=65532:65532 /out/data /data
ENV PROMPTD_ADDR=0.0.0.0:8080 \
    PROMPTD_DATA_DIR=/data
VOLUME ["/data"]
USER nonroot:nonroot
EXPOSE 8080
# No shell or curl in the image: promptd probes itself (exit 0 on 200).
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/promptd", "healthcheck", "--ready"]
ENTRYPOINT ["/usr/local/bin/promptd"]
