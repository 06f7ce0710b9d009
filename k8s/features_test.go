package k8s

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/mcp-extauthz/mcp-extauthz/envoy"
)

// TestChartFeatureValues: every feature value reaches extauthz serve as
// its flag's environment form (or argument), every key file from a mounted
// Secret, and nothing is set that the values leave off.
func TestChartFeatureValues(t *testing.T) {
	const one = "replicaCount: 1\n"
	tests := []struct {
		name     string
		give     string
		wantEnv  map[string]string // "" value: must be absent
		wantArgs []string          // after serve
		secrets  map[string]string // volume -> secret key=path
	}{
		{"the defaults", one, map[string]string{
			"EXTAUTHZ_APPROVER_ISSUER": "", "EXTAUTHZ_APPROVER_JWKS_FILE": "", "EXTAUTHZ_APPROVAL_URL": "", "EXTAUTHZ_APPROVAL_MAX_LIFETIME": "",
			"EXTAUTHZ_IDEMPOTENCY_HEADER": "Idempotency-Key", "EXTAUTHZ_IDEMPOTENCY_META": "", "EXTAUTHZ_IDEMPOTENCY_TTL": "24h",
			"EXTAUTHZ_DRY_RUN": "", "EXTAUTHZ_DENIAL_STATUS": "auto", "EXTAUTHZ_CONCEAL_AS": "go-sdk", "EXTAUTHZ_CONCEAL_JSON_RESPONSE": "",
			"EXTAUTHZ_CURSOR_KEY_FILE": "", "EXTAUTHZ_LIST_CACHE_TTL": "", "EXTAUTHZ_RESPONSE_SEAM": "true", "EXTAUTHZ_DECISION_KEY_FILE": "",
		}, nil, nil},
		{"signed decisions with a key Secret", one + "signedDecisions: {keySecret: {name: decision-key, key: k.json}}", map[string]string{
			"EXTAUTHZ_DECISION_KEY_FILE": "/etc/mcp-extauthz/decision-key/decision.jwk.json",
		}, nil, map[string]string{"decision-key": "decision-key:k.json=decision.jwk.json"}},
		{"approvals with discovered keys", one + "approvals: {issuer: 'https://approver.example.com', url: 'https://approve.example.com/{digest}', maxLifetime: 10m}", map[string]string{
			"EXTAUTHZ_APPROVER_ISSUER": "https://approver.example.com", "EXTAUTHZ_APPROVER_JWKS_FILE": "",
			"EXTAUTHZ_APPROVAL_URL": "https://approve.example.com/{digest}", "EXTAUTHZ_APPROVAL_MAX_LIFETIME": "10m",
		}, nil, nil},
		{"approvals with a key Secret", one + "approvals: {issuer: 'https://approver.example.com', jwksSecret: {name: approver-keys, key: keys.json}}", map[string]string{
			"EXTAUTHZ_APPROVER_ISSUER": "https://approver.example.com", "EXTAUTHZ_APPROVER_JWKS_FILE": "/etc/mcp-extauthz/approver-jwks/jwks.json",
			"EXTAUTHZ_APPROVAL_MAX_LIFETIME": "1h",
		}, nil, map[string]string{"approver-jwks": "approver-keys:keys.json=jwks.json"}},
		{"idempotency by _meta, custom header and TTL", one + "idempotency: {header: X-Request-Key, meta: io.mcp-extauthz/idempotency-key, ttl: 2h}", map[string]string{
			"EXTAUTHZ_IDEMPOTENCY_HEADER": "X-Request-Key", "EXTAUTHZ_IDEMPOTENCY_META": "io.mcp-extauthz/idempotency-key", "EXTAUTHZ_IDEMPOTENCY_TTL": "2h",
		}, nil, nil},
		// An empty EXTAUTHZ_ value means the flag's default: no header is
		// said with the argument.
		{"no idempotency header", one + "idempotency: {header: ''}", map[string]string{"EXTAUTHZ_IDEMPOTENCY_HEADER": ""}, []string{"--idempotency-header="}, nil},
		{"dry run", one + "dryRun: true", map[string]string{"EXTAUTHZ_DRY_RUN": "true"}, nil, nil},
		{"denials as HTTP errors", one + "denialStatus: http-error", map[string]string{"EXTAUTHZ_DENIAL_STATUS": "http-error"}, nil, nil},
		{"concealment as the TypeScript SDK with JSON responses", one + "concealment: {as: typescript-sdk, jsonResponse: true}", map[string]string{
			"EXTAUTHZ_CONCEAL_AS": "typescript-sdk", "EXTAUTHZ_CONCEAL_JSON_RESPONSE": "true",
		}, nil, nil},
		{"the seam's cursor key and ttlMs", one + "responseSeam: {cursorKeySecret: {name: seam, key: k}, listTtlMs: 30000}", map[string]string{
			"EXTAUTHZ_CURSOR_KEY_FILE": "/etc/mcp-extauthz/cursor-key/cursor.key", "EXTAUTHZ_LIST_CACHE_TTL": "30000ms",
		}, nil, map[string]string{"cursor-key": "seam:k=cursor.key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, v := renderObjects(t, tt.give)
			checkRelease(t, o, v)
			d := o.Deployments[0]
			ex := container(d, "extauthz")
			for k, want := range tt.wantEnv {
				got, ok := env(ex, k)
				if want == "" && ok {
					t.Errorf("%s = %q, want it absent", k, got)
				}
				if want != "" && got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if got := ex.Args[1:]; !slices.Equal(got, tt.wantArgs) && (len(got) > 0 || len(tt.wantArgs) > 0) {
				t.Errorf("args after serve = %q, want %q", got, tt.wantArgs)
			}
			for _, k := range []string{"EXTAUTHZ_APPROVER_JWKS_FILE", "EXTAUTHZ_CURSOR_KEY_FILE", "EXTAUTHZ_DECISION_KEY_FILE"} {
				if p, ok := env(ex, k); ok && !mountedFrom(ex, d.Spec.Template.Spec, p, "secret") {
					t.Errorf("%s=%s is not inside a Secret mount", k, p)
				}
			}
			got := map[string]string{}
			for _, vol := range d.Spec.Template.Spec.Volumes {
				if vol.Secret != nil && (vol.Name == "approver-jwks" || vol.Name == "cursor-key" || vol.Name == "decision-key") {
					var items []string
					for _, it := range vol.Secret.Items {
						items = append(items, it.Key+"="+it.Path)
					}
					got[vol.Name] = vol.Secret.SecretName + ":" + strings.Join(items, ",")
				}
			}
			if len(got) != len(tt.secrets) {
				t.Errorf("key Secret volumes %v, want %v", got, tt.secrets)
			}
			for k, w := range tt.secrets {
				if got[k] != w {
					t.Errorf("volume %s = %q, want %q", k, got[k], w)
				}
			}
		})
	}
}

// TestChartFeatureValuesRefused: values serve would refuse, or that would
// silently do nothing, fail the render.
func TestChartFeatureValuesRefused(t *testing.T) {
	c := loadChart(t)
	tests := []struct {
		name string
		give string
		want string
	}{
		{"approver keys without an issuer", "replicaCount: 1\napprovals: {jwksSecret: {name: k, key: jwks.json}}", "set approvals.issuer"},
		{"approval URL without an issuer", "replicaCount: 1\napprovals: {url: 'https://a.example.com'}", "set approvals.issuer"},
		{"plain http approver", "replicaCount: 1\napprovals: {issuer: 'http://approver.example.com'}", "'/approvals/issuer'"},
		{"approval lifetime not a duration", "replicaCount: 1\napprovals: {issuer: 'https://a.example.com', maxLifetime: 1}", "'/approvals/maxLifetime'"},
		{"idempotency header not a token", "replicaCount: 1\nidempotency: {header: 'Idempotency Key'}", "'/idempotency/header'"},
		{"idempotency TTL zero", "replicaCount: 1\nidempotency: {ttl: 0s}", "'/idempotency/ttl'"},
		{"unknown denial status", "replicaCount: 1\ndenialStatus: '403'", "'/denialStatus'"},
		{"unknown SDK to conceal as", "replicaCount: 1\nconcealment: {as: python-sdk}", "'/concealment/as'"},
		{"dry run as a string", "replicaCount: 1\ndryRun: 'yes'", "'/dryRun'"},
		{"negative ttlMs", "replicaCount: 1\nresponseSeam: {listTtlMs: -1}", "'/responseSeam/listTtlMs'"},
		{"cursor key Secret without a key", "replicaCount: 1\nresponseSeam: {cursorKeySecret: {name: s, key: ''}}", "'/responseSeam/cursorKeySecret/key'"},
		{"typo", "replicaCount: 1\napprovals: {issuer: 'https://a.example.com', jwks: x}", "'jwks' not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var vals map[string]any
			if err := yaml.Unmarshal([]byte(tt.give), &vals); err != nil {
				t.Fatal(err)
			}
			_, _, err := render(c, vals)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

// TestChartSidecarPassesIdempotencyHeader: in sidecar mode Envoy sends
// Check the idempotency header the values name, as it sends
// Idempotency-Key by default.
func TestChartSidecarPassesIdempotencyHeader(t *testing.T) {
	for _, tt := range []struct {
		give string
		want string
	}{
		{sidecarBase, "idempotency-key"},
		{sidecarBase + "idempotency: {header: X-Request-Key}", "x-request-key"},
	} {
		o, _ := renderObjects(t, tt.give)
		b, err := envoy.ValidateBootstrapYAML([]byte(o.configMap("-envoy").Data["envoy.yaml"]))
		if err != nil {
			t.Fatal(err)
		}
		if err := envoy.CheckInvariants(b); err != nil {
			t.Fatal(err)
		}
		hcms, err := envoy.HTTPConnectionManagers(b)
		if err != nil {
			t.Fatal(err)
		}
		ea, _, err := envoy.ExtAuthz(hcms[0].HCM)
		if err != nil {
			t.Fatal(err)
		}
		if !envoy.AllowsHeader(ea, tt.want) {
			t.Errorf("%q: ext_authz allowed_headers drop %q", tt.give, tt.want)
		}
	}
}
