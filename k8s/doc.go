// Package k8s holds no code: it is where the tests of the Kubernetes and
// container artifacts live. They render the Helm chart under helm/ with
// Helm's own Go SDK, build every kustomization under kustomize/ with
// kustomize's krusty, decode every object strictly into k8s.io/api types,
// and check what a cluster would not (probes, limits, hardening, the Envoy
// config). The Istio configs under istio/ (in-pod/ included), the Envoy
// gateway under gateway/, the Dockerfiles and the repository's compose.yaml
// are checked here too.
package k8s
