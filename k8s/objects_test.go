package k8s

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
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
	PodMonitors     []*PodMonitor
	PrometheusRules []*PrometheusRule
	AuthzPolicies   []*AuthorizationPolicy
	EnvoyFilters    []*EnvoyFilter
	ServiceEntries  []*ServiceEntry
}

// ServiceMonitor is the part of monitoring.coreos.com/v1 ServiceMonitor the
// chart renders (a CRD: no k8s.io/api type; decoded strictly into this).
// https://prometheus-operator.dev/docs/api-reference/api/#monitoring.coreos.com/v1.ServiceMonitor
type ServiceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		JobLabel  string                   `json:"jobLabel"`
		Selector  metav1.LabelSelector     `json:"selector"`
		Endpoints []ServiceMonitorEndpoint `json:"endpoints"`
	} `json:"spec"`
}

// ServiceMonitorEndpoint is one scrape endpoint of a ServiceMonitor or
// PodMonitor.
type ServiceMonitorEndpoint struct {
	Port              string           `json:"port"`
	Path              string           `json:"path"`
	Interval          string           `json:"interval"`
	ScrapeTimeout     string           `json:"scrapeTimeout"`
	Relabelings       []map[string]any `json:"relabelings,omitempty"`
	MetricRelabelings []map[string]any `json:"metricRelabelings,omitempty"`
}

// PodMonitor is the part of monitoring.coreos.com/v1 PodMonitor the chart
// renders.
// https://prometheus-operator.dev/docs/api-reference/api/#monitoring.coreos.com/v1.PodMonitor
type PodMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		JobLabel          string               `json:"jobLabel"`
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector"`
		PodMetricsEndpoints []ServiceMonitorEndpoint `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// PrometheusRule is monitoring.coreos.com/v1 PrometheusRule: rule groups
// as in a Prometheus rule file.
// https://prometheus-operator.dev/docs/api-reference/api/#monitoring.coreos.com/v1.PrometheusRule
type PrometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              RuleFile `json:"spec"`
}

// RuleFile is a Prometheus rule file (and a PrometheusRule's spec).
type RuleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []Rule `json:"rules"`
	} `json:"groups"`
}

// Rule is one recording or alerting rule.
type Rule struct {
	Record      string            `json:"record,omitempty"`
	Alert       string            `json:"alert,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
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
		case "monitoring.coreos.com/v1/PodMonitor":
			into = appendNew(&o.PodMonitors)
		case "monitoring.coreos.com/v1/PrometheusRule":
			into = appendNew(&o.PrometheusRules)
		case "security.istio.io/v1/AuthorizationPolicy":
			into = appendNew(&o.AuthzPolicies)
		case "networking.istio.io/v1alpha3/EnvoyFilter":
			into = appendNew(&o.EnvoyFilters)
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
//
// probed names containers whose readiness Envoy reports (probedByEnvoy):
// they may go without probes. An emptyDir may be mounted read-write.
func checkPodTemplate(t *testing.T, what string, pt corev1.PodTemplateSpec, probed map[string]bool) {
	t.Helper()
	ps := pt.Spec
	if len(ps.Containers) == 0 {
		t.Errorf("%s: no containers", what)
	}
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
		t.Errorf("%s: automountServiceAccountToken is not false", what)
	}
	volumes := map[string]bool{}
	scratch := map[string]bool{}
	for _, v := range ps.Volumes {
		volumes[v.Name] = true
		scratch[v.Name] = v.EmptyDir != nil
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
				if !probed[c.Name] {
					t.Errorf("%s: no %s (and Envoy's readiness does not cover it)", where, name)
				}
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
			if !m.ReadOnly && !scratch[m.Name] {
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

// container returns the named container (or native sidecar init
// container) of d, or nil.
func container(d *appsv1.Deployment, name string) *corev1.Container {
	ps := &d.Spec.Template.Spec
	for _, cs := range [][]corev1.Container{ps.Containers, ps.InitContainers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
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

// service returns the Service called name, or nil.
func (o *Objects) service(name string) *corev1.Service {
	for _, s := range o.Services {
		if s.Name == name {
			return s
		}
	}
	return nil
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

// object is one decoded object of any kind.
type object struct {
	Kind string
	metav1.Object
}

// all returns every decoded object.
func (o *Objects) all() []object {
	var out []object
	out = appendObjects(out, "Deployment", o.Deployments)
	out = appendObjects(out, "Service", o.Services)
	out = appendObjects(out, "ConfigMap", o.ConfigMaps)
	out = appendObjects(out, "Secret", o.Secrets)
	out = appendObjects(out, "ServiceAccount", o.ServiceAccounts)
	out = appendObjects(out, "Namespace", o.Namespaces)
	out = appendObjects(out, "PodDisruptionBudget", o.PDBs)
	out = appendObjects(out, "NetworkPolicy", o.NetworkPolicies)
	out = appendObjects(out, "ServiceMonitor", o.ServiceMonitors)
	out = appendObjects(out, "PodMonitor", o.PodMonitors)
	out = appendObjects(out, "PrometheusRule", o.PrometheusRules)
	out = appendObjects(out, "AuthorizationPolicy", o.AuthzPolicies)
	out = appendObjects(out, "EnvoyFilter", o.EnvoyFilters)
	out = appendObjects(out, "ServiceEntry", o.ServiceEntries)
	return out
}

func appendObjects[T metav1.Object](out []object, kind string, xs []T) []object {
	for _, x := range xs {
		out = append(out, object{kind, x})
	}
	return out
}

// checkPodReferences reports every ConfigMap or Secret that the Pod
// template of d uses (volume, projected volume, envFrom, env valueFrom)
// and that the rendered objects do not hold under exactly that name in
// d's namespace: such a Pod never starts (ContainerCreating, or
// CreateContainerConfigError). A name that merely contains the reference
// (kustomize's hash suffix) or a copy in another namespace does not count.
// external names Secrets the user creates (auth.jwks.existingSecret).
func checkPodReferences(t *testing.T, o *Objects, d *appsv1.Deployment, external map[string]bool) {
	t.Helper()
	ns := d.Namespace
	hasCM := func(name string) bool {
		return slices.ContainsFunc(o.ConfigMaps, func(c *corev1.ConfigMap) bool { return c.Name == name && c.Namespace == ns })
	}
	hasSecret := func(name string) bool {
		return external[name] || slices.ContainsFunc(o.Secrets, func(s *corev1.Secret) bool { return s.Name == name && s.Namespace == ns })
	}
	check := func(where, kind, name string) {
		t.Helper()
		if name == "" {
			t.Errorf("Deployment %s: %s names no %s", d.Name, where, kind)
			return
		}
		ok := hasCM
		if kind == "Secret" {
			ok = hasSecret
		}
		if !ok(name) {
			t.Errorf("Deployment %s/%s: %s references %s %q, which is not in the output in namespace %q", ns, d.Name, where, kind, name, ns)
		}
	}
	ps := d.Spec.Template.Spec
	n := 0
	for _, v := range ps.Volumes {
		where := "volume " + v.Name
		switch {
		case v.ConfigMap != nil:
			check(where, "ConfigMap", v.ConfigMap.Name)
			n++
		case v.Secret != nil:
			check(where, "Secret", v.Secret.SecretName)
			n++
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					check(where, "ConfigMap", s.ConfigMap.Name)
					n++
				}
				if s.Secret != nil {
					check(where, "Secret", s.Secret.Name)
					n++
				}
			}
		}
	}
	for _, c := range slices.Concat(ps.InitContainers, ps.Containers) {
		for _, ef := range c.EnvFrom {
			where := "container " + c.Name + " envFrom"
			if ef.ConfigMapRef != nil {
				check(where, "ConfigMap", ef.ConfigMapRef.Name)
			}
			if ef.SecretRef != nil {
				check(where, "Secret", ef.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			where := "container " + c.Name + " env " + e.Name
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				check(where, "ConfigMap", r.Name)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				check(where, "Secret", r.Name)
			}
		}
	}
	if n == 0 {
		t.Errorf("Deployment %s mounts no ConfigMap: the policy volume is missing", d.Name)
	}
}

// checkNamespaces reports every namespaced object without a namespace and a
// Deployment outside want, when want (the namespace the base sets) is set.
func checkNamespaces(t *testing.T, o *Objects, want string) {
	t.Helper()
	if want == "" {
		return
	}
	for _, x := range o.all() {
		if x.Kind == "Namespace" {
			continue
		}
		if x.GetNamespace() == "" {
			t.Errorf("%s %s has no namespace (the base sets %s)", x.Kind, x.GetName(), want)
		}
	}
	for _, d := range o.Deployments {
		if d.Namespace != want {
			t.Errorf("Deployment %s in namespace %q, want %q", d.Name, d.Namespace, want)
		}
	}
}

// portOf resolves a probe or NetworkPolicy port (a name or a number) to the
// container port of c it means, or 0.
func portOf(c *corev1.Container, p intstr.IntOrString) int32 {
	if p.Type == intstr.Int {
		return p.IntVal
	}
	return containerPort(c, p.StrVal)
}

// checkExtauthzProbes: liveness asks only whether the process runs (HTTP
// /healthz). gRPC health and `extauthz healthcheck` report readiness
// (policy compiled and identity-provider keys available): as liveness, an
// IdP outage would make the kubelet restart every replica. Kubelet probes
// target the Pod IP, so the HTTP address must not be loopback.
func checkExtauthzProbes(t *testing.T, what string, ex *corev1.Container) {
	t.Helper()
	httpAddr, _ := env(ex, "EXTAUTHZ_HTTP_ADDR")
	hap, err := netip.ParseAddrPort(httpAddr)
	if err != nil || !hap.Addr().IsUnspecified() {
		t.Errorf("%s: EXTAUTHZ_HTTP_ADDR = %q, want 0.0.0.0:port (kubelet probes reach the Pod IP)", what, httpAddr)
	}
	lp := ex.LivenessProbe
	switch {
	case lp == nil:
		t.Errorf("%s: extauthz has no liveness probe", what)
	case lp.GRPC != nil:
		t.Errorf("%s: extauthz liveness is the gRPC health service (NOT_SERVING while the IdP is down): %+v", what, lp.GRPC)
	case lp.Exec != nil:
		t.Errorf("%s: extauthz liveness runs %v (gRPC health: NOT_SERVING while the IdP is down)", what, lp.Exec.Command)
	case lp.HTTPGet == nil || lp.HTTPGet.Path != "/healthz" || portOf(ex, lp.HTTPGet.Port) != int32(hap.Port()):
		t.Errorf("%s: extauthz liveness = %+v, want httpGet /healthz on the HTTP port %d", what, lp.ProbeHandler, hap.Port())
	}
	grpcAddr, _ := env(ex, "EXTAUTHZ_GRPC_ADDR")
	gap, _ := netip.ParseAddrPort(grpcAddr)
	rp := ex.ReadinessProbe
	switch {
	case rp == nil:
		t.Errorf("%s: extauthz has no readiness probe", what)
	case rp.GRPC != nil && rp.GRPC.Port == int32(gap.Port()) && gap.Addr().IsUnspecified():
	case rp.Exec != nil && strings.Join(rp.Exec.Command, " ") == "/extauthz healthcheck --addr "+grpcAddr:
	case rp.HTTPGet != nil && rp.HTTPGet.Path == "/readyz" && portOf(ex, rp.HTTPGet.Port) == int32(hap.Port()):
	default:
		t.Errorf("%s: extauthz readiness = %+v, want gRPC health or HTTP /readyz", what, rp.ProbeHandler)
	}
}

// checkGracePeriod: on SIGTERM the service drains (--drain-period, 5s) and
// then lets in-flight Checks finish (--shutdown-timeout, 10s; 0 means 10s).
// The kubelet's SIGKILL must come after both.
func checkGracePeriod(t *testing.T, what string, d *appsv1.Deployment, ex *corev1.Container) {
	t.Helper()
	dur := func(name string, def time.Duration) time.Duration {
		s, ok := env(ex, name)
		if !ok {
			return def
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Errorf("%s: %s = %q: %v", what, name, s, err)
		}
		if v == 0 && name == "EXTAUTHZ_SHUTDOWN_TIMEOUT" {
			return def
		}
		return v
	}
	need := dur("EXTAUTHZ_DRAIN_PERIOD", 5*time.Second) + dur("EXTAUTHZ_SHUTDOWN_TIMEOUT", 10*time.Second)
	g := d.Spec.Template.Spec.TerminationGracePeriodSeconds
	if g == nil {
		t.Errorf("%s: terminationGracePeriodSeconds unset, want > %v (drain + shutdown timeout)", what, need)
	} else if time.Duration(*g)*time.Second <= need {
		t.Errorf("%s: terminationGracePeriodSeconds = %d, want > %v (drain + shutdown timeout)", what, *g, need)
	}
}

// netpolOpens reports whether some ingress rule of np admits port of c,
// and whether such a rule admits it from every peer (the kubelet and
// Prometheus included).
func netpolOpens(np *networkingv1.NetworkPolicy, c *corev1.Container, port int32) (covered, fromAll bool) {
	for _, rule := range np.Spec.Ingress {
		match := len(rule.Ports) == 0
		for _, p := range rule.Ports {
			if p.Port == nil || portOf(c, *p.Port) == port {
				match = true
			}
		}
		if match {
			covered = true
			fromAll = fromAll || len(rule.From) == 0
		}
	}
	return covered, fromAll
}

// checkNetpolHTTP: every NetworkPolicy selecting the Pods admits the
// extauthz HTTP port (liveness /healthz, readiness /readyz, /metrics); from
// every peer unless restricted is set (the chart's networkPolicy.metricsFrom).
func checkNetpolHTTP(t *testing.T, o *Objects, ex *corev1.Container, restricted bool) {
	t.Helper()
	addr, _ := env(ex, "EXTAUTHZ_HTTP_ADDR")
	ap, _ := netip.ParseAddrPort(addr)
	for _, np := range o.NetworkPolicies {
		covered, fromAll := netpolOpens(np, ex, int32(ap.Port()))
		if !covered || (!restricted && !fromAll) {
			t.Errorf("NetworkPolicy %s: HTTP port %d (probes, metrics) admitted=%v from all=%v", np.Name, ap.Port(), covered, fromAll)
		}
	}
}

// pdbAllowsDrain reports whether pdb lets one Pod of replicas be evicted.
func pdbAllowsDrain(pdb *policyv1.PodDisruptionBudget, replicas int) bool {
	if mu := pdb.Spec.MaxUnavailable; mu != nil {
		return mu.Type == intstr.Int && mu.IntVal >= 1
	}
	return pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int && int(pdb.Spec.MinAvailable.IntVal) < replicas
}
