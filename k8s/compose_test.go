package k8s

import (
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/mcp-extauthz/mcp-extauthz/envoy"
)

// composeFile is the part of the Compose specification compose.yaml uses
// (https://github.com/compose-spec/compose-spec/blob/main/spec.md),
// decoded strictly: a key outside it (a typo such as network-mode) fails.
type composeFile struct {
	Name     string                    `json:"name"`
	Services map[string]composeService `json:"services"`
}

type composeService struct {
	Image string `json:"image"`
	Build *struct {
		Context    string `json:"context"`
		Dockerfile string `json:"dockerfile"`
	} `json:"build"`
	Command     []string `json:"command"`
	Volumes     []string `json:"volumes"`
	Ports       []string `json:"ports"`
	NetworkMode string   `json:"network_mode"`
	Healthcheck *struct {
		Test     []string `json:"test"`
		Interval string   `json:"interval"`
		Timeout  string   `json:"timeout"`
		Retries  int      `json:"retries"`
	} `json:"healthcheck"`
}

// mounts returns s's bind mounts, container path to host path (relative to
// the repository root), and whether each is read-only.
func (s composeService) mounts(t *testing.T) (map[string]string, map[string]bool) {
	t.Helper()
	src, ro := map[string]string{}, map[string]bool{}
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || !strings.HasPrefix(parts[0], "./") {
			t.Fatalf("volume %q: want ./HOST:CONTAINER[:ro]", v)
		}
		src[parts[1]] = filepath.Clean(parts[0])
		ro[parts[1]] = len(parts) == 3 && parts[2] == "ro"
	}
	return src, ro
}

// unescape is Compose's interpolation of a value without variables: $$ is
// a literal $. A lone $ would be a variable, which compose.yaml must not use.
func unescape(t *testing.T, s string) string {
	t.Helper()
	if strings.Contains(strings.ReplaceAll(s, "$$", ""), "$") {
		t.Fatalf("%q: a variable; compose.yaml must run without an environment", s)
	}
	return strings.ReplaceAll(s, "$$", "$")
}

func argAfterIn(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// TestComposeRunsTheShippedSidecar: compose.yaml is the sidecar layout of
// envoy/sidecar.yaml, mounted as is, with the service on the quick-start
// config and the example MCP server: the addresses the bootstrap's clusters
// dial are the ones the services listen on, in the one network namespace
// the loopback addresses need; only Envoy's listeners are published; every
// image is built from this repository or pinned like the chart's.
func TestComposeRunsTheShippedSidecar(t *testing.T) {
	raw, err := os.ReadFile("../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.UnmarshalStrict(raw, &cf); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	var names []string
	for n := range cf.Services {
		names = append(names, n)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"envoy", "extauthz", "payments-mcp"}) {
		t.Fatalf("services %v, want envoy, extauthz, payments-mcp", names)
	}
	ev, ex, mcp := cf.Services["envoy"], cf.Services["extauthz"], cf.Services["payments-mcp"]

	// Envoy: the chart's image, the shipped bootstrap and overload files.
	var values struct {
		Sidecar struct {
			Envoy struct {
				Image struct{ Repository, Tag, Digest string }
			}
		}
	}
	vb, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(vb, &values); err != nil {
		t.Fatal(err)
	}
	img := values.Sidecar.Envoy.Image
	if want := img.Repository + ":" + img.Tag + "@" + img.Digest; ev.Image != want {
		t.Errorf("envoy image %q, want the chart's %q", ev.Image, want)
	}
	if len(ev.Command) != 3 || ev.Command[0] != "/bin/sh" || ev.Command[1] != "-c" {
		t.Fatalf("envoy command %q, want /bin/sh -c 'exec envoy …'", ev.Command)
	}
	script := unescape(t, ev.Command[2])
	args := strings.Fields(script)
	if len(args) < 2 || args[0] != "exec" || args[1] != "envoy" {
		t.Fatalf("envoy script %q, want exec envoy …", script)
	}
	evMounts, evRO := ev.mounts(t)
	bootstrapPath := argAfterIn(args, "-c")
	if evMounts[bootstrapPath] != "envoy/sidecar.yaml" || !evRO[bootstrapPath] {
		t.Errorf("envoy -c %s is %q (read-only %v), want ./envoy/sidecar.yaml mounted read-only, not a copy", bootstrapPath, evMounts[bootstrapPath], evRO[bootstrapPath])
	}
	overload := regexp.MustCompile(`--config-yaml "\$\(cat (\S+)\)"`).FindStringSubmatch(script)
	if overload == nil || evMounts[overload[1]] != "envoy/"+envoy.OverloadFile {
		t.Errorf("envoy script %q: want --config-yaml \"$(cat PATH)\" of the mounted envoy/%s", script, envoy.OverloadFile)
	}
	if c := argAfterIn(args, "--concurrency"); c != "1" {
		t.Errorf("envoy --concurrency %q, want 1", c)
	}
	for dst, src := range evMounts {
		if _, err := os.Stat(filepath.Join("..", src)); err != nil {
			t.Errorf("envoy mounts %s at %s: %v", src, dst, err)
		}
	}

	y, err := os.ReadFile("../envoy/sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := envoy.ValidateBootstrapYAML(y)
	if err != nil {
		t.Fatal(err)
	}
	if err := envoy.CheckInvariants(b); err != nil {
		t.Fatal(err)
	}

	// Published: exactly Envoy's listeners that are not on loopback, each on
	// the host's loopback at the same port.
	var wantPorts []string
	for _, l := range b.GetStaticResources().GetListeners() {
		sa := l.GetAddress().GetSocketAddress()
		if a, err := netip.ParseAddr(sa.GetAddress()); err == nil && !a.IsLoopback() {
			p := strconv.Itoa(int(sa.GetPortValue()))
			wantPorts = append(wantPorts, "127.0.0.1:"+p+":"+p)
		}
	}
	slices.Sort(wantPorts)
	gotPorts := slices.Clone(ev.Ports)
	slices.Sort(gotPorts)
	if !slices.Equal(gotPorts, wantPorts) {
		t.Errorf("envoy publishes %v, want its listeners %v", gotPorts, wantPorts)
	}
	for name, s := range map[string]composeService{"extauthz": ex, "payments-mcp": mcp} {
		if len(s.Ports) > 0 {
			t.Errorf("%s publishes %v: only Envoy's listeners may be reachable", name, s.Ports)
		}
	}

	// extauthz: the repository's image on the shipped example config.
	if ex.Build == nil || ex.Build.Context != "." || ex.Build.Dockerfile != "Dockerfile" {
		t.Errorf("extauthz build %+v, want context . and the repository's Dockerfile", ex.Build)
	}
	exMounts, exRO := ex.mounts(t)
	if len(ex.Command) != 3 || ex.Command[0] != "serve" || ex.Command[1] != "--config" {
		t.Fatalf("extauthz command %q, want serve --config FILE (the Dockerfile's ENTRYPOINT is /extauthz)", ex.Command)
	}
	cfgPath := ex.Command[2]
	host := ""
	for dst, src := range exMounts {
		if rel, err := filepath.Rel(dst, cfgPath); err == nil && !strings.HasPrefix(rel, "..") && exRO[dst] {
			host = filepath.Join(src, rel)
		}
	}
	if host != "examples/config.yaml" {
		t.Fatalf("extauthz --config %s is %q on the host, want examples/config.yaml mounted read-only", cfgPath, host)
	}
	var cfg map[string]any
	cb, err := os.ReadFile("../examples/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(cb, &cfg); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"policy", "jwks-file", "approver-jwks-file"} { // relative to the config: inside the mount
		if p, _ := cfg[k].(string); p == "" || filepath.IsAbs(p) || strings.HasPrefix(filepath.Clean(p), "..") {
			t.Errorf("examples/config.yaml %s %q: want a path beside the config, inside the mount", k, p)
		}
	}
	if cfg["allow-test-keys"] != true {
		t.Error("examples/config.yaml trusts the published test keys without allow-test-keys: serve would refuse to start")
	}
	grpcAddr, _ := cfg["grpc-addr"].(string)
	httpAddr, _ := cfg["http-addr"].(string)
	if ex.Healthcheck == nil || !slices.Equal(ex.Healthcheck.Test, []string{"CMD", "/extauthz", "healthcheck", "--addr", grpcAddr}) {
		t.Errorf("extauthz healthcheck %+v, want /extauthz healthcheck --addr %s", ex.Healthcheck, grpcAddr)
	}

	// payments-mcp: built from this repository, on the address Envoy dials.
	if mcp.Build == nil || mcp.Build.Context != "." || mcp.Build.Dockerfile != "examples/payments-mcp/Dockerfile" {
		t.Errorf("payments-mcp build %+v, want context . and examples/payments-mcp/Dockerfile", mcp.Build)
	}
	src, err := os.ReadFile("../examples/payments-mcp/main.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range mcp.Command {
		if name, ok := strings.CutPrefix(a, "--"); ok && !strings.Contains(string(src), `flag.String("`+name+`"`) {
			t.Errorf("payments-mcp command passes %s, which examples/payments-mcp does not define", a)
		}
	}
	for _, s := range []composeService{ex, mcp} {
		if _, err := os.Stat(filepath.Join("..", s.Build.Context, s.Build.Dockerfile)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat("../examples/payments-mcp/Dockerfile.dockerignore"); err != nil {
		t.Errorf("the payments-mcp build context is the whole repository without it: %v", err)
	}

	// Every address a cluster dials is a listener of a service in Envoy's
	// network namespace (the bootstrap's 127.0.0.1 works unchanged only
	// there), and every such service is dialled.
	listens := map[string]string{
		grpcAddr:                            "extauthz",
		httpAddr:                            "extauthz",
		argAfterIn(mcp.Command, "--listen"): "payments-mcp",
	}
	adm := b.GetAdmin().GetAddress().GetSocketAddress()
	listens[adm.GetAddress()+":"+strconv.Itoa(int(adm.GetPortValue()))] = "envoy"
	dialled := map[string]bool{}
	for _, c := range b.GetStaticResources().GetClusters() {
		for _, ep := range envoy.Endpoints(c) {
			svc, ok := listens[ep]
			if !ok {
				t.Errorf("cluster %s dials %s, where no compose service listens", c.GetName(), ep)
				continue
			}
			dialled[svc] = true
			if a, err := netip.ParseAddrPort(ep); err != nil || !a.Addr().IsLoopback() {
				t.Errorf("cluster %s dials %s: compose.yaml relies on loopback endpoints", c.GetName(), ep)
			}
			if svc != "envoy" && cf.Services[svc].NetworkMode != "service:envoy" {
				t.Errorf("cluster %s dials %s on loopback, but %s is not in Envoy's network namespace (network_mode: service:envoy)", c.GetName(), ep, svc)
			}
		}
	}
	for _, svc := range []string{"extauthz", "payments-mcp"} {
		if !dialled[svc] {
			t.Errorf("no cluster of envoy/sidecar.yaml reaches %s", svc)
		}
	}
}
