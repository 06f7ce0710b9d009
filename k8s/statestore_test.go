package k8s

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// stateStoreSecrets are the Secrets the values' stateStore names.
func stateStoreSecrets(v chartutil.Values) []string {
	s, _ := v["stateStore"].(map[string]any)
	var out []string
	name := func(m any) {
		if n, _ := m.(map[string]any)["name"].(string); n != "" {
			out = append(out, n)
		}
	}
	name(s["passwordSecret"])
	name(s["sentinelPasswordSecret"])
	tls, _ := s["tls"].(map[string]any)
	name(tls["caSecret"])
	if n, _ := tls["clientCertSecret"].(string); n != "" {
		out = append(out, n)
	}
	return out
}

// checkStateStore asserts what every release holds about the state store:
// without a URL, one replica or an acknowledgment, which the service is
// told; with one, the URL as given (never a password in it), and every
// file setting inside a mounted Secret.
func checkStateStore(t *testing.T, d *appsv1.Deployment, ex *corev1.Container, v chartutil.Values) {
	t.Helper()
	s := v["stateStore"].(map[string]any)
	url, _ := s["url"].(string)
	ack, hasAck := env(ex, "EXTAUTHZ_STATE_STORE_MEMORY_PER_REPLICA_OK")
	got, hasURL := env(ex, "EXTAUTHZ_STATE_STORE")
	if _, ok := env(ex, "EXTAUTHZ_STATE_STORE_PASSWORD"); ok {
		t.Error("EXTAUTHZ_STATE_STORE_PASSWORD in the Pod spec: the password belongs in a mounted Secret")
	}
	if url == "" {
		if *d.Spec.Replicas > 1 && s["memoryPerReplicaAcknowledged"] != true {
			t.Errorf("%d replicas on the memory store without acknowledgment rendered", *d.Spec.Replicas)
		}
		if hasURL || !hasAck || ack != "true" {
			t.Errorf("memory store: EXTAUTHZ_STATE_STORE=%q (set %v), acknowledgment %q (set %v); want no URL and the acknowledgment", got, hasURL, ack, hasAck)
		}
		return
	}
	if got != url || hasAck {
		t.Errorf("EXTAUTHZ_STATE_STORE = %q, want %q; acknowledgment set %v, want none", got, url, hasAck)
	}
	if _, rest, _ := strings.Cut(url, "://"); strings.Contains(strings.SplitN(rest, "@", 2)[0], ":") && strings.Contains(rest, "@") {
		t.Errorf("stateStore.url %q holds a password", url)
	}
	for _, k := range []string{"EXTAUTHZ_STATE_STORE_PASSWORD_FILE", "EXTAUTHZ_STATE_STORE_SENTINEL_PASSWORD_FILE",
		"EXTAUTHZ_STATE_STORE_TLS_CA_FILE", "EXTAUTHZ_STATE_STORE_TLS_CERT_FILE", "EXTAUTHZ_STATE_STORE_TLS_KEY_FILE"} {
		if p, ok := env(ex, k); ok && !mountedFrom(ex, d.Spec.Template.Spec, p, "secret") {
			t.Errorf("%s=%s is not inside a Secret mount", k, p)
		}
	}
	if n := s["waitReplicas"].(float64); n > 0 {
		if w, _ := env(ex, "EXTAUTHZ_STATE_STORE_WAIT_REPLICAS"); w != strings.TrimSpace(yamlScalar(n)) {
			t.Errorf("EXTAUTHZ_STATE_STORE_WAIT_REPLICAS = %q, want %v", w, n)
		}
	}
}

func yamlScalar(x any) string {
	b, _ := yaml.Marshal(x)
	return string(b)
}

// TestChartStateStoreRefuses: a release that cannot hold single use, or
// that serve would refuse, fails to render with a message saying why.
func TestChartStateStoreRefuses(t *testing.T) {
	c := loadChart(t)
	tests := []struct {
		name string
		give string
		want string
	}{
		{"two replicas, memory", "replicaCount: 2", "replicaCount is 2 and stateStore.url is empty"},
		{"three replicas, memory", "replicaCount: 3", "replicaCount is 3"},
		{"sidecar, two replicas, memory", "replicaCount: 2\nmode: sidecar\nserverId: p\nsidecar: {mcpServer: {image: {repository: x, tag: '1'}}}", "stateStore.url is empty"},
		{"acknowledgment with a Redis", storeBase + "stateStore: {url: 'redis://r:6379', memoryPerReplicaAcknowledged: true}", "is for the memory store"},
		{"password Secret without a URL", "replicaCount: 1\nstateStore: {passwordSecret: {name: p, key: password}}", "set stateStore.url"},
		{"wait without a URL", "replicaCount: 1\nstateStore: {waitReplicas: 1}", "set stateStore.url"},
		{"TLS CA on plaintext", "stateStore: {url: 'redis://r:6379', tls: {caSecret: {name: ca, key: ca.crt}}}", "needs a TLS URL"},
		{"client certificate on plaintext", "stateStore: {url: 'redis-cluster://n1:6379,n2:6379', tls: {clientCertSecret: c}}", "needs a TLS URL"},
		{"Sentinel password without Sentinel", "stateStore: {url: 'rediss://r:6379', sentinelPasswordSecret: {name: s, key: password}}", "needs a redis-sentinel://"},
		{"password in the URL", "stateStore: {url: 'redis://extauthz:secret@r:6379/0'}", "'/stateStore/url'"},
		{"query parameters", "stateStore: {url: 'rediss://r:6379/0?skip_verify=true'}", "'/stateStore/url'"},
		{"unknown scheme", "stateStore: {url: 'memcached://r:11211'}", "'/stateStore/url'"},
		{"wait timeout not a duration", "stateStore: {url: 'redis://r:6379', waitReplicas: 1, waitTimeout: 0}", "'/stateStore/waitTimeout'"},
		{"negative wait", "stateStore: {url: 'redis://r:6379', waitReplicas: -1}", "'/stateStore/waitReplicas'"},
		{"typo", "stateStore: {URL: 'redis://r:6379'}", "'URL' not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantRefused(t, c, tt.give, tt.want) })
	}
}

// TestChartStateStoreVariants: the memory store is acknowledged for the
// service exactly when one replica answers or the values say so; a
// Sentinel store with passwords, TLS and WAIT reaches the service as the
// flags' environment forms, every file from a mounted Secret.
func TestChartStateStoreVariants(t *testing.T) {
	tests := []struct {
		name    string
		give    string
		wantEnv map[string]string // "" value: must be absent
	}{
		{"one replica on memory", "replicaCount: 1", map[string]string{"EXTAUTHZ_STATE_STORE_MEMORY_PER_REPLICA_OK": "true", "EXTAUTHZ_STATE_STORE": ""}},
		{"two replicas on memory, acknowledged", "stateStore: {memoryPerReplicaAcknowledged: true}", map[string]string{"EXTAUTHZ_STATE_STORE_MEMORY_PER_REPLICA_OK": "true"}},
		{"Redis", storeBase, map[string]string{"EXTAUTHZ_STATE_STORE": storeURL, "EXTAUTHZ_STATE_STORE_MEMORY_PER_REPLICA_OK": "", "EXTAUTHZ_STATE_STORE_WAIT_REPLICAS": ""}},
		{"Sentinel, TLS, passwords and WAIT", `stateStore:
  url: rediss-sentinel://extauthz@s0:26379,s1:26379/mymaster/0
  passwordSecret: {name: acl, key: pw}
  sentinelPasswordSecret: {name: sentinel, key: pw}
  tls: {caSecret: {name: ca, key: bundle.pem}, clientCertSecret: client, serverName: redis.svc}
  waitReplicas: 2
  waitTimeout: 100ms`, map[string]string{
			"EXTAUTHZ_STATE_STORE":                        "rediss-sentinel://extauthz@s0:26379,s1:26379/mymaster/0",
			"EXTAUTHZ_STATE_STORE_PASSWORD_FILE":          "/etc/mcp-extauthz/redis-password/password",
			"EXTAUTHZ_STATE_STORE_SENTINEL_PASSWORD_FILE": "/etc/mcp-extauthz/redis-sentinel-password/password",
			"EXTAUTHZ_STATE_STORE_TLS_CA_FILE":            "/etc/mcp-extauthz/redis-ca/ca.crt",
			"EXTAUTHZ_STATE_STORE_TLS_CERT_FILE":          "/etc/mcp-extauthz/redis-client-cert/tls.crt",
			"EXTAUTHZ_STATE_STORE_TLS_KEY_FILE":           "/etc/mcp-extauthz/redis-client-cert/tls.key",
			"EXTAUTHZ_STATE_STORE_TLS_SERVER_NAME":        "redis.svc",
			"EXTAUTHZ_STATE_STORE_WAIT_REPLICAS":          "2",
			"EXTAUTHZ_STATE_STORE_WAIT_TIMEOUT":           "100ms",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, v := renderObjects(t, tt.give)
			checkRelease(t, o, v)
			ex := container(o.Deployments[0], "extauthz")
			for k, want := range tt.wantEnv {
				got, ok := env(ex, k)
				if want == "" && ok {
					t.Errorf("%s = %q, want it absent", k, got)
				}
				if want != "" && got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
	// The Secret keys land where the service reads them.
	o, _ := renderObjects(t, "stateStore: {url: 'rediss://r:6380', passwordSecret: {name: acl, key: pw}, tls: {caSecret: {name: ca, key: bundle.pem}}}")
	for _, vol := range o.Deployments[0].Spec.Template.Spec.Volumes {
		if vol.Secret == nil || !strings.HasPrefix(vol.Name, "redis-") {
			continue
		}
		want := map[string]string{"redis-password": "pw=password", "redis-ca": "bundle.pem=ca.crt"}[vol.Name]
		if len(vol.Secret.Items) != 1 || vol.Secret.Items[0].Key+"="+vol.Secret.Items[0].Path != want {
			t.Errorf("volume %s items %+v, want %s", vol.Name, vol.Secret.Items, want)
		}
	}
}
