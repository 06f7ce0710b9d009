# mcp-extauthz: a static binary on distroless, non-root.
#   docker build -t ghcr.io/mcp-extauthz/mcp-extauthz:0.1.0 .
# .ci/run runs the `go build` line below as is (only /out replaced), so keep
# it on one line, with no Dockerfile-only flags.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/extauthz ./cmd/extauthz

# https://github.com/GoogleContainerTools/distroless: no shell, CA
# certificates (for OIDC discovery) and tzdata included, uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/extauthz /extauthz
USER 65532:65532
# 9191: gRPC envoy.service.auth.v3.Authorization and grpc.health.v1.Health.
# 9192: HTTP /metrics, /healthz, /readyz.
EXPOSE 9191 9192
ENTRYPOINT ["/extauthz"]
CMD ["serve"]
