package k8s

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The example MCP server image of the sidecar ci values and the kustomize
// sidecar overlay is buildable from this repository: its Dockerfile builds
// examples/payments-mcp under that image name, and the server takes the
// flags the values pass it.
func TestExampleServerImageIsBuildable(t *testing.T) {
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("..", p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var values struct {
		Sidecar struct {
			MCPServer struct {
				Image struct{ Repository, Tag string }
				Args  []string
			} `json:"mcpServer"`
		}
	}
	if err := yaml.Unmarshal([]byte(read("k8s/helm/mcp-extauthz/ci/sidecar-values.yaml")), &values); err != nil {
		t.Fatal(err)
	}
	img := values.Sidecar.MCPServer.Image.Repository + ":" + values.Sidecar.MCPServer.Image.Tag
	dockerfile := read("examples/payments-mcp/Dockerfile")
	if !strings.Contains(dockerfile, "-f examples/payments-mcp/Dockerfile -t "+img+" .") {
		t.Errorf("examples/payments-mcp/Dockerfile does not document building %s", img)
	}
	if !regexp.MustCompile(`(?m)^RUN .*go build .* \./examples/payments-mcp$`).MatchString(dockerfile) {
		t.Error("examples/payments-mcp/Dockerfile does not build ./examples/payments-mcp")
	}
	ignore := read("examples/payments-mcp/Dockerfile.dockerignore")
	for _, want := range []string{"!go.mod", "!go.sum", "!examples/payments-mcp/*.go"} {
		if !strings.Contains(ignore, want) {
			t.Errorf("Dockerfile.dockerignore lacks %s: the build context would miss it", want)
		}
	}
	src := read("examples/payments-mcp/main.go")
	for _, a := range values.Sidecar.MCPServer.Args {
		if name, ok := strings.CutPrefix(a, "--"); ok && !strings.Contains(src, `flag.String("`+name+`"`) {
			t.Errorf("ci values pass %s, which examples/payments-mcp does not define", a)
		}
	}
	kust := read("k8s/kustomize/overlays/sidecar/kustomization.yaml")
	if !strings.Contains(kust, "newName: "+values.Sidecar.MCPServer.Image.Repository) {
		t.Errorf("the kustomize sidecar overlay does not use %s", values.Sidecar.MCPServer.Image.Repository)
	}
}
