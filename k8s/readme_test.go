package k8s

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/strvals"
)

// shellWords splits one shell command as sh would for these lines: single
// and double quotes, backslash-newline joins, a # comment at a word's start;
// $NAME is replaced from vars (an unknown one is an error).
func shellWords(s string, vars map[string]string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in := false // inside a word
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
			continue
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i++
			continue
		case c == '$' && quote != '\'':
			m := regexp.MustCompile(`^\$([A-Za-z_][A-Za-z0-9_]*)`).FindStringSubmatch(s[i:])
			if m == nil {
				return nil, fmt.Errorf("a $ that is no plain variable in %q", s)
			}
			v, ok := vars[m[1]]
			if !ok {
				return nil, fmt.Errorf("$%s is not set by README", m[1])
			}
			cur.WriteString(v)
			in = true
			i += len(m[0]) - 1
			continue
		case quote == '"':
			if c == '"' {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
			continue
		case c == '\'' || c == '"':
			quote, in = c, true
			continue
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
			continue
		case c == '#' && !in:
			for i < len(s) && s[i] != '\n' {
				i++
			}
			continue
		}
		cur.WriteByte(c)
		in = true
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// readmeHelmCommands returns README's `helm template` and `helm install`
// commands (continuation lines joined), and the NAME=value assignments of
// its shell blocks, for the variables they use.
func readmeHelmCommands(t *testing.T) (cmds []string, vars map[string]string) {
	t.Helper()
	b := docsText(t)
	vars = map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z][A-Z0-9_]*)=([^\s$'"]+)$`).FindAllStringSubmatch(string(b), -1) {
		vars[m[1]] = m[2]
	}
	for _, m := range regexp.MustCompile(`(?m)^helm (?:template|install) (?:.*\\\n)*.*$`).FindAllString(string(b), -1) {
		cmds = append(cmds, m)
	}
	return cmds, vars
}

// TestReadmeHelmCommands renders every `helm template` and `helm install` of
// README as Helm's CLI would, without a cluster and without the helm binary:
// the same value files, --set and --set-file merged by Helm's own
// values.Options, the chart's kubeVersion checked against --kube-version
// (an install's cluster is taken to run the version the other renders
// assume), the schema validated and the templates run. A flag README uses
// that this test does not know fails it, so the commands cannot drift
// away from what is checked.
func TestReadmeHelmCommands(t *testing.T) {
	cmds, vars := readmeHelmCommands(t)
	if len(cmds) < 4 {
		t.Fatalf("README: %d helm template/install commands, want the 2 installs, 2 templates and the example server's install", len(cmds))
	}
	for _, line := range cmds {
		t.Run(strings.SplitN(line, "\n", 2)[0], func(t *testing.T) {
			w, err := shellWords(line, vars)
			if err != nil {
				t.Fatal(err)
			}
			if len(w) < 4 {
				t.Fatalf("want helm VERB RELEASE CHART …, got %q", w)
			}
			verb, release, chartPath := w[1], w[2], w[3]
			ns, kv := "default", kubeVersion
			// What Helm's values.Options.MergeValues does (pkg/cli/values),
			// in its order: value files deep-merged, then --set, then
			// --set-file.
			var valueFiles, sets, fileSets []string
			for i := 4; i < len(w); i++ {
				arg := func() string {
					i++
					if i >= len(w) {
						t.Fatalf("%s needs a value", w[i-1])
					}
					return w[i]
				}
				switch w[i] {
				case "-n", "--namespace":
					ns = arg()
				case "--create-namespace":
				case "--kube-version":
					v, err := chartutil.ParseKubeVersion(arg())
					if err != nil {
						t.Fatal(err)
					}
					kv = *v
				case "-f", "--values":
					valueFiles = append(valueFiles, "../"+arg())
				case "--set":
					sets = append(sets, arg())
				case "--set-file":
					k, p, ok := strings.Cut(arg(), "=")
					if !ok {
						t.Fatalf("--set-file %s: want KEY=PATH", w[i])
					}
					fileSets = append(fileSets, k+"=../"+p)
				default:
					t.Fatalf("README's helm %s uses %s, which this test does not know", verb, w[i])
				}
			}
			c, err := loader.Load("../" + chartPath)
			if err != nil {
				t.Fatal(err)
			}
			if !chartutil.IsCompatibleRange(c.Metadata.KubeVersion, kv.String()) {
				t.Fatalf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", c.Metadata.KubeVersion, kv.String())
			}
			vals := map[string]any{}
			for _, f := range valueFiles {
				v, err := chartutil.ReadValuesFile(f)
				if err != nil {
					t.Fatal(err)
				}
				vals = mergeMaps(vals, v)
			}
			for _, s := range sets {
				if err := strvals.ParseInto(s, vals); err != nil {
					t.Fatalf("--set %s: %v", s, err)
				}
			}
			for _, s := range fileSets {
				read := func(rs []rune) (any, error) {
					b, err := os.ReadFile(string(rs))
					return string(b), err
				}
				if err := strvals.ParseIntoFile(s, vals, read); err != nil {
					t.Fatalf("--set-file %s: %v", s, err)
				}
			}
			caps := chartutil.DefaultCapabilities.Copy()
			caps.KubeVersion = kv
			rv, err := chartutil.ToRenderValues(c, vals, chartutil.ReleaseOptions{Name: release, Namespace: ns, Revision: 1, IsInstall: true}, caps)
			if err != nil {
				t.Fatal(err)
			}
			files, err := engine.Render(c, rv)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(files[c.Name()+"/templates/deployment.yaml"], "kind: Deployment") {
				t.Errorf("renders no Deployment")
			}
		})
	}
}

// mergeMaps is Helm's pkg/cli/values mergeMaps: b's values over a's,
// maps merged key by key.
func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if vm, ok := v.(map[string]any); ok {
			if om, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(om, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

func TestShellWords(t *testing.T) {
	got, err := shellWords("helm x --set 'a={b,c}' \\\n  --set k=$R/y \"q r\"   # c d", map[string]string{"R": "reg"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"helm", "x", "--set", "a={b,c}", "--set", "k=reg/y", "q r"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := shellWords("helm $UNSET", nil); err == nil {
		t.Error("an unset variable was accepted")
	}
}
