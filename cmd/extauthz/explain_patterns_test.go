package main

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// check --explain on resource patterns whose reading the trace spells out:
// a deny rule that held through a '**' of zero segments, an allow rule that
// missed only because its '**' needs one. Each input under
// testdata/explain-patterns has a golden file.
func TestCheckExplainPatternsGolden(t *testing.T) {
	const dir = "cmd/extauthz/testdata/explain-patterns"
	inputs, err := filepath.Glob(dir + "/*.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			var out bytes.Buffer
			err := run(t.Context(), []string{"check", "--explain", "--policy", dir + "/policy.yaml", "--server-id", "payments", "--sub", "alice", in}, &out, io.Discard)
			if c := exitCode(err); c != 0 && c != 1 {
				t.Fatalf("exit %d: %v", c, err)
			}
			golden(t, strings.TrimSuffix(in, ".json")+".golden", out.String())
		})
	}
}
