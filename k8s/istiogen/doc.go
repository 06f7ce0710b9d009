// Package istiogen runs Istio's own translator over k8s/istio: the fake
// discovery server of Istio's pilot tests (istio.io/istio/pilot/test/xds)
// builds the listeners, routes, clusters and endpoints istiod would send an
// MCP workload's sidecar, from the repository's mesh config
// (k8s/istio/mesh-config.yaml), its CUSTOM AuthorizationPolicy, its
// EnvoyFilters and the workload's Kubernetes objects. Its tests hold
// Istio's output, not our reading of Istio, to what mcp-extauthz needs
// (istiogen_test.go), and write it as a static Envoy bootstrap that the
// SDK rig (../shared/e2e-sdk) runs in place of envoy/sidecar.yaml
// (testdata/istio-inpod-sidecar.yaml, docs/deploy.md, "Istio").
//
// It is a module of its own so that istio.io/istio (and its dependencies)
// stays out of the main module's and k8s's go.mod. The pin,
// istio.io/istio v0.0.0-20260827124520-eed52ebb66ad, is Istio's master
// branch after release-1.30 was cut (VERSION 1.31; istio.io/api
// v1.31.0-rc.0): the 1.31 development line.
//
// The ambient layout is generated too (waypoint_test.go): the waypoint of
// the MCP server's Service runs the CUSTOM check; it has no response seam.
package istiogen
