package policy

import (
	"reflect"
	"testing"
)

// TestRules: every rule of the file, deciding and shadow, of every kind,
// in file order with its decision; ids Compile gives are listed too.
func TestRules(t *testing.T) {
	tests := []struct {
		name string
		give string
		want []RuleRef
	}{
		{name: "none", give: "default: deny\n", want: []RuleRef{}},
		{
			name: "every kind and shadow",
			give: `default: ask
allow:
  - id: search
    match: "*/search"
deny:
  - id: no-deletes
    match: "*/delete_*"
  - id: would-deny
    match: "*/read_file"
    shadow: true
ask:
  - match: "payments/issue_refund"
methods:
  allow:
    - id: ping
      method: ping
`,
			want: []RuleRef{
				{ID: "search", Decision: Allow},
				{ID: "no-deletes", Decision: Deny},
				{ID: "would-deny", Decision: Deny, Shadow: true},
				{ID: "ask[0]", Decision: Ask},
				{ID: "ping", Decision: Allow},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile("p.yaml", []byte(tt.give))
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Rules(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Rules() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
