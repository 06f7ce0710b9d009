package k8s

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Objects are the decoded objects of one rendered release or kustomize build.
type Objects struct {
	Deployments     []*appsv1.Deployment
	Services        []*corev1.Service
	ConfigMaps      []*corev1.ConfigMap
	Secrets         []*corev1.Secret
	ServiceAccounts []*corev1.ServiceAccount
	Namespaces      []*corev1.Namespace
	PDBs            []*policyv1.PodDisruptionBudget
	NetworkPolicies []*networkingv1.NetworkPolicy
	ServiceMonitors []*ServiceMonitor
	AuthzPolicies   []*AuthorizationPolicy
	ServiceEntries  []*ServiceEntry
}

// ServiceMonitor is the part of monitoring.coreos.com/v1 ServiceMonitor the
// chart renders (a CRD: no k8s.io/api type; decoded strictly into this).
// https://prometheus-operator.dev/docs/api-reference/api/#monitoring.coreos.com/v1.ServiceMonitor
type ServiceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
		} `json:"endpoints"`
	} `json:"spec"`
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeObjects splits a multi-document YAML stream and decodes each object
// strictly (sigs.k8s.io/yaml.UnmarshalStrict: unknown or duplicate fields
// fail) into the type its apiVersion and kind name. A kind this project
// does not render is an error.
func decodeObjects(stream []byte) (*Objects, error) {
	o := &Objects{}
	for _, doc := range docSep.Split(string(stream), -1) {
		if isBlank(doc) {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return nil, err
		}
		var into any
		switch gvk := tm.APIVersion + "/" + tm.Kind; gvk {
		case "apps/v1/Deployment":
			into = appendNew(&o.Deployments)
		case "v1/Service":
			into = appendNew(&o.Services)
		case "v1/ConfigMap":
			into = appendNew(&o.ConfigMaps)
		case "v1/Secret":
			into = appendNew(&o.Secrets)
		case "v1/Namespace":
			into = appendNew(&o.Namespaces)
		case "v1/ServiceAccount":
			into = appendNew(&o.ServiceAccounts)
		case "policy/v1/PodDisruptionBudget":
			into = appendNew(&o.PDBs)
		case "networking.k8s.io/v1/NetworkPolicy":
			into = appendNew(&o.NetworkPolicies)
		case "monitoring.coreos.com/v1/ServiceMonitor":
			into = appendNew(&o.ServiceMonitors)
		case "security.istio.io/v1/AuthorizationPolicy":
			into = appendNew(&o.AuthzPolicies)
		case "networking.istio.io/v1/ServiceEntry":
			into = appendNew(&o.ServiceEntries)
		default:
			return nil, fmt.Errorf("unexpected object %s:\n%s", gvk, doc)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			return nil, fmt.Errorf("%s/%s: %w", tm.APIVersion, tm.Kind, err)
		}
	}
	return o, nil
}

func appendNew[T any](s *[]*T) *T {
	v := new(T)
	*s = append(*s, v)
	return v
}

// isBlank reports whether a YAML document holds only comments and space.
func isBlank(doc string) bool {
	for _, l := range strings.Split(doc, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// checkPodTemplate reports every way a Pod template breaks the chart's
// promises: each container has readiness and liveness probes whose named
// ports exist, CPU and memory requests and a memory limit, and a hardened
// securityContext (runAsNonRoot at Pod or container level,
// readOnlyRootFilesystem, no privilege escalation, ALL capabilities
// dropped, seccomp RuntimeDefault at Pod or container level). It also
// requires that mounts name declared volumes and that the service account
// token is not mounted.
func checkPodTemplate(t *testing.T, what string, pt corev1.PodTemplateSpec) {
	t.Helper()
	ps := pt.Spec
	if len(ps.Containers) == 0 {
		t.Errorf("%s: no containers", what)
	}
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
		t.Errorf("%s: automountServiceAccountToken is not false", what)
	}
	volumes := map[string]bool{}
	for _, v := range ps.Volumes {
		volumes[v.Name] = true
	}
	psc := ps.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	for _, c := range slices.Concat(ps.InitContainers, ps.Containers) {
		where := what + " container " + c.Name
		ports := map[string]bool{}
		for _, p := range c.Ports {
			ports[p.Name] = true
		}
		for name, p := range map[string]*corev1.Probe{"readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe} {
			if p == nil {
				t.Errorf("%s: no %s", where, name)
				continue
			}
			h := p.ProbeHandler
			switch {
			case h.TCPSocket != nil:
				checkNamedPort(t, where, name, h.TCPSocket.Port.StrVal, ports)
			case h.HTTPGet != nil:
				checkNamedPort(t, where, name, h.HTTPGet.Port.StrVal, ports)
			case h.GRPC != nil:
				if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.ContainerPort == h.GRPC.Port }) {
					t.Errorf("%s: %s: grpc port %d is not a container port", where, name, h.GRPC.Port)
				}
			case h.Exec != nil:
				if len(h.Exec.Command) == 0 {
					t.Errorf("%s: %s: empty exec command", where, name)
				}
			default:
				t.Errorf("%s: %s has no handler", where, name)
			}
		}
		r := c.Resources
		if r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() {
			t.Errorf("%s: cpu and memory requests missing: %v", where, r.Requests)
		}
		if r.Limits.Memory().IsZero() || r.Limits.Cpu().IsZero() {
			t.Errorf("%s: cpu and memory limits missing: %v", where, r.Limits)
		}
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("%s: no securityContext", where)
			continue
		}
		if !isTrue(sc.RunAsNonRoot) && !(sc.RunAsNonRoot == nil && isTrue(psc.RunAsNonRoot)) {
			t.Errorf("%s: runAsNonRoot is not true at Pod or container level", where)
		}
		if !isTrue(sc.ReadOnlyRootFilesystem) {
			t.Errorf("%s: readOnlyRootFilesystem is not true", where)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: allowPrivilegeEscalation is not false", where)
		}
		if isTrue(sc.Privileged) {
			t.Errorf("%s: privileged", where)
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
			t.Errorf("%s: capabilities do not drop ALL (or add some): %+v", where, sc.Capabilities)
		}
		seccomp := sc.SeccompProfile
		if seccomp == nil {
			seccomp = psc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: seccomp profile is not RuntimeDefault", where)
		}
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				t.Errorf("%s: mounts undeclared volume %q", where, m.Name)
			}
			if !m.ReadOnly {
				t.Errorf("%s: volume %q mounted read-write", where, m.Name)
			}
		}
	}
}

func checkNamedPort(t *testing.T, where, probe, name string, ports map[string]bool) {
	t.Helper()
	if name != "" && !ports[name] {
		t.Errorf("%s: %s names port %q, which the container does not declare", where, probe, name)
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

// container returns the named container of d, or nil.
func container(d *appsv1.Deployment, name string) *corev1.Container {
	for i := range d.Spec.Template.Spec.Containers {
		if c := &d.Spec.Template.Spec.Containers[i]; c.Name == name {
			return c
		}
	}
	return nil
}

// env returns the value of the environment variable name in c.
func env(c *corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// selects reports whether selector's matchLabels all appear in labels.
func selects(selector map[string]string, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// configMap returns the first ConfigMap whose name contains part (kustomize
// appends a content hash), or nil.
func (o *Objects) configMap(part string) *corev1.ConfigMap {
	for _, cm := range o.ConfigMaps {
		if strings.Contains(cm.Name, part) {
			return cm
		}
	}
	return nil
}
