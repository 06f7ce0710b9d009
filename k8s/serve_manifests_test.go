package k8s

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// buildExtauthz builds cmd/extauthz into a temporary folder of t's.
func buildExtauthz(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "extauthz")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/extauthz")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/extauthz: %v\n%s", err, out)
	}
	return bin
}

// manifestServe is one shipped extauthz container as a Pod would run it.
type manifestServe struct {
	name string
	d    *appsv1.Deployment
	cms  map[string]map[string]string // ConfigMap name -> data
}

// TestShippedManifestsStart runs the real `extauthz serve` with the
// arguments and environment of every shipped extauthz container (Istio
// in-pod, kustomize base and overlays, k8s/gateway, the chart's default
// render and every ci/ values set), its ConfigMap mounts written to disk,
// secrets replaced by fresh files of the same kind, listen addresses moved
// to 127.0.0.1:0 and a Redis state store to the test Redis: serve must
// reach "serving ext_authz". A manifest serve refuses (a memory store
// behind replicas, a missing flag) never starts in a cluster either; the
// other tests read manifests, this one runs them.
func TestShippedManifestsStart(t *testing.T) {
	bin := buildExtauthz(t)
	var cases []manifestServe
	add := func(name string, o *Objects) {
		cms := map[string]map[string]string{}
		for _, cm := range o.ConfigMaps {
			cms[cm.Name] = cm.Data
		}
		for _, d := range o.Deployments {
			if container(d, "extauthz") != nil {
				cases = append(cases, manifestServe{name: name + "/" + d.Name, d: d, cms: cms})
			}
		}
	}
	add("istio/in-pod", inPod(t))
	for _, dir := range []string{"kustomize/base", "kustomize/overlays/istio", "kustomize/overlays/sidecar", "kustomize/overlays/standalone", "gateway"} {
		add(dir, build(t, dir))
	}
	c := loadChart(t)
	sets := valueSets(t)
	names := make([]string, 0, len(sets))
	for n := range sets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out, _, err := render(c, sets[n])
		if err != nil {
			t.Fatalf("helm %s: %v", n, err)
		}
		o, err := decodeObjects([]byte(out))
		if err != nil {
			t.Fatal(err)
		}
		add("helm "+n, o)
	}
	if len(cases) < 10 {
		t.Fatalf("only %d extauthz containers found", len(cases))
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			args, env, why := tt.command(t)
			if why != "" {
				t.Skip(why)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Env = env
			cmd.Dir = t.TempDir()
			var stderr syncBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case err := <-done:
					t.Fatalf("serve exited (%v) before serving:\n%s", err, stderr.String())
				case <-tick.C:
					if strings.Contains(stderr.String(), `"msg":"serving ext_authz"`) {
						_ = cmd.Process.Kill() // started is all this test asks
						<-done
						return
					}
				case <-ctx.Done():
					_ = cmd.Process.Kill()
					<-done
					t.Fatalf("serve did not reach serving ext_authz in 30s:\n%s", stderr.String())
				}
			}
		})
	}
}

// command returns serve's argv and environment for the container, or why
// it cannot run here.
func (m manifestServe) command(t *testing.T) (args, env []string, skip string) {
	ex := container(m.d, "extauthz")
	ps := m.d.Spec.Template.Spec
	dir := t.TempDir()
	paths := map[string]string{} // mount path -> local dir
	for _, vm := range ex.VolumeMounts {
		local := filepath.Join(dir, strings.ReplaceAll(strings.Trim(vm.MountPath, "/"), "/", "_"))
		if err := os.MkdirAll(local, 0o700); err != nil {
			t.Fatal(err)
		}
		paths[vm.MountPath] = local
		for _, v := range ps.Volumes {
			if v.Name != vm.Name {
				continue
			}
			switch {
			case v.ConfigMap != nil:
				data, ok := m.cms[v.ConfigMap.Name]
				if !ok {
					t.Fatalf("volume %s: ConfigMap %s is not in the manifests", v.Name, v.ConfigMap.Name)
				}
				writeItems(t, local, data, v.ConfigMap.Items)
			case v.Secret != nil:
				// Secrets are the operator's: a fresh file of the kind the
				// flag reads stands in for each key (see secretFile).
				for _, it := range v.Secret.Items {
					writeFile(t, filepath.Join(local, it.Path), nil)
				}
			}
		}
	}
	local := func(p string) string {
		best := ""
		for mp := range paths {
			if (p == mp || strings.HasPrefix(p, strings.TrimSuffix(mp, "/")+"/")) && len(mp) > len(best) {
				best = mp
			}
		}
		if best == "" {
			return p
		}
		return paths[best] + strings.TrimPrefix(p, best)
	}
	env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir}
	for _, e := range ex.Env {
		if e.ValueFrom != nil {
			continue // the downward API: names of the Pod, not settings
		}
		v := e.Value
		switch {
		case e.Name == "EXTAUTHZ_GRPC_ADDR" || e.Name == "EXTAUTHZ_HTTP_ADDR":
			v = "127.0.0.1:0"
		case e.Name == "EXTAUTHZ_STATE_STORE" && strings.HasPrefix(v, "rediss"):
			return nil, nil, "a TLS state store: its certificates are the operator's (internal/state's tests start TLS, Sentinel and Cluster servers)"
		case e.Name == "EXTAUTHZ_STATE_STORE" && strings.HasPrefix(v, "redis"):
			addr := os.Getenv("EXTAUTHZ_TEST_REDIS")
			if addr == "" {
				if os.Getenv("CI") == "true" {
					t.Fatal("EXTAUTHZ_TEST_REDIS is unset under CI=true")
				}
				return nil, nil, "a Redis state store and no EXTAUTHZ_TEST_REDIS"
			}
			v = "redis://" + addr + "/0"
		case strings.HasPrefix(v, "/"):
			v = local(v)
			if strings.HasSuffix(e.Name, "_FILE") {
				secretFile(t, e.Name, v)
			}
		}
		env = append(env, e.Name+"="+v)
	}
	for _, a := range ex.Args {
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(v, "/") {
			a = k + "=" + local(v)
		}
		args = append(args, a)
	}
	return args, env, ""
}

// secretFile fills a file a *_FILE flag reads with content of its kind.
func secretFile(t *testing.T, name, path string) {
	t.Helper()
	if st, err := os.Stat(path); err == nil && st.Size() > 0 {
		return // from a ConfigMap
	}
	switch {
	case name == "EXTAUTHZ_DECISION_KEY_FILE":
		writeFile(t, path, freshSigningJWK(t))
	case strings.Contains(name, "JWKS"):
		writeFile(t, path, freshJWKS(t))
	case strings.Contains(name, "PASSWORD"):
		writeFile(t, path, nil) // the test Redis has no password
	default: // keys: 32 random bytes, base64 (the cursor key's form)
		k := make([]byte, 32)
		_, _ = rand.Read(k)
		writeFile(t, path, []byte(base64.StdEncoding.EncodeToString(k)+"\n"))
	}
}

// freshJWKS is a key set of one new P-256 public key: never a published
// test key, which serve refuses.
func freshJWKS(t *testing.T) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := k.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	b, err := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": "fresh",
		"x": enc(pub[1:33]), "y": enc(pub[33:]),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// freshSigningJWK is a new private Ed25519 JWK (RFC 8037), the form
// --decision-key-file reads.
func freshSigningJWK(t *testing.T) []byte {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	b, err := json.Marshal(map[string]string{"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "kid": "fresh-decision",
		"x": enc(pub), "d": enc(priv.Seed())})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeItems(t *testing.T, dir string, data map[string]string, items []corev1.KeyToPath) {
	t.Helper()
	if len(items) == 0 {
		for k, v := range data {
			writeFile(t, filepath.Join(dir, k), []byte(v))
		}
		return
	}
	for _, it := range items {
		writeFile(t, filepath.Join(dir, it.Path), []byte(data[it.Key]))
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for the process's writer and the
// test's reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
