# mcp-extauthz: a static binary on distroless, non-root.
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg COMMIT=$(git rev-parse HEAD) -t REGISTRY/mcp-extauthz:TAG .
# VERSION and COMMIT are what `extauthz version` prints (.git is not in the
# build context, so they come in as build arguments).
# .ci/run runs the `go build` line below as is (only /out replaced), so keep
# it on one line, with no Dockerfile-only flags.
# Base images are pinned by digest (multi-arch index digests); bump them
# deliberately, tag and digest together.

FROM golang:1.26@sha256:9edf71320ef8a791c4c33ec79f90496d641f306a91fb112d3d060d5c1cee4e20 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.buildVersion=${VERSION:-devel} -X main.buildCommit=${COMMIT:-unknown}" -o /out/extauthz ./cmd/extauthz

# https://github.com/GoogleContainerTools/distroless: no shell, CA
# certificates (for OIDC discovery) and tzdata included, uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot@sha256:b7bb25d9f7c31d2bdd1982feb4dafcaf137703c7075dbe2febb41c24212b946f
ARG VERSION=devel
ARG COMMIT=unknown
# https://github.com/opencontainers/image-spec/blob/main/annotations.md
LABEL org.opencontainers.image.title="mcp-extauthz"
LABEL org.opencontainers.image.description="Envoy ext_authz service deciding each MCP request"
LABEL org.opencontainers.image.source="https://github.com/mcp-extauthz/mcp-extauthz"
LABEL org.opencontainers.image.version="${VERSION}"
LABEL org.opencontainers.image.revision="${COMMIT}"
COPY --from=build /out/extauthz /extauthz
USER 65532:65532
# 9191: gRPC envoy.service.auth.v3.Authorization and grpc.health.v1.Health.
# 9192: HTTP /metrics, /healthz, /readyz.
EXPOSE 9191 9192
ENTRYPOINT ["/extauthz"]
CMD ["serve"]
