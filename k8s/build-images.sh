#!/usr/bin/env bash
# Builds and pushes the two images the chart, the kustomize overlays,
# k8s/istio/in-pod and compose.yaml name, which this repository does not
# publish: mcp-extauthz (Dockerfile) and example-payments-mcp
# (examples/payments-mcp/Dockerfile), both static Go binaries on distroless,
# non-root. Then prints the values that point the manifests at them.
#
#   k8s/build-images.sh REGISTRY [TAG]
#
# REGISTRY: where to push, e.g. registry.example.com/platform. TAG: default
# `git describe --tags --always --dirty` (the version `extauthz version`
# prints). DOCKER=podman builds with Podman (daemonless; same commands).
# PUSH=0 builds without pushing. Runs from any directory.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REGISTRY=${1:?usage: k8s/build-images.sh REGISTRY [TAG]}
REGISTRY=${REGISTRY%/}
VERSION=$(git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
TAG=${2:-$VERSION}
DOCKER=${DOCKER:-docker}

# build NAME DOCKERFILE [BUILD-ARG...]: REGISTRY/NAME:TAG, from the repository root.
build() {
  local name=$1 file=$2
  shift 2
  "$DOCKER" build "$@" -f "$file" -t "$REGISTRY/$name:$TAG" .
  if [ "${PUSH:-1}" != 0 ]; then
    "$DOCKER" push "$REGISTRY/$name:$TAG"
  fi
}
build mcp-extauthz Dockerfile --build-arg "VERSION=$VERSION" --build-arg "COMMIT=$COMMIT"
build example-payments-mcp examples/payments-mcp/Dockerfile

cat <<END
Built$([ "${PUSH:-1}" != 0 ] && echo " and pushed") $REGISTRY/mcp-extauthz:$TAG and $REGISTRY/example-payments-mcp:$TAG.
Helm:
  --set image.repository=$REGISTRY/mcp-extauthz --set image.tag=$TAG
  the example MCP server (mode=sidecar): --set sidecar.mcpServer.image.repository=$REGISTRY/example-payments-mcp --set sidecar.mcpServer.image.tag=$TAG
kustomize, in your overlay's kustomization.yaml:
  images:
    - {name: ghcr.io/mcp-extauthz/mcp-extauthz, newName: $REGISTRY/mcp-extauthz, newTag: "$TAG"}
    - {name: ghcr.io/mcp-extauthz/example-payments-mcp, newName: $REGISTRY/example-payments-mcp, newTag: "$TAG"}
END
