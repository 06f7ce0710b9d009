#!/usr/bin/env bash
# The SDK rig through Istio's own config: ../shared/e2e-sdk/run-e2e.sh on a
# copy of this working tree whose envoy/sidecar.yaml is replaced by
# testdata/istio-inpod-sidecar.yaml, the in-pod layout's sidecar as Istio's
# translator generates it from k8s/istio (go test -run TestRigBootstrap
# -update writes it; its head lists every adaptation made for the rig's
# Envoy stand-in). Prints the rig's lines and counts; exits as the rig does.
#
#   k8s/istiogen/run-e2e-istio.sh [RIG]   RIG: the rig's run-e2e.sh
#                                         (default: ../shared/e2e-sdk/run-e2e.sh beside the repository)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
rig=${1:-$root/../shared/e2e-sdk/run-e2e.sh}
[ -x "$rig" ] || { echo "run-e2e-istio: no rig at $rig" >&2; exit 1; }
tree=$(mktemp -d -t istio-e2e.XXXXXX)
trap 'rm -rf "$tree"' EXIT
# The working tree as the rig copies it: tracked and untracked files, not ignored ones.
(cd "$root" && git ls-files -co --exclude-standard -z | while IFS= read -r -d '' f; do
  [ -e "$f" ] && { cp --parents "$f" "$tree" || exit 1; }; done)
cp "$root/k8s/istiogen/testdata/istio-inpod-sidecar.yaml" "$tree/envoy/sidecar.yaml"
"$rig" "$tree"
