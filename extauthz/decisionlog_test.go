package extauthz

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcp-extauthz/mcp-extauthz/internal/decisionlog"
	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// TestDecisionLogger: with internal/decisionlog, lines are held until stop (or the flush interval),
// then written whole, as JSON without caller, one per decision.
func TestDecisionLogger(t *testing.T) {
	var out testkit.Buffer
	log, stop := decisionlog.New(&out, zapcore.InfoLevel, time.Hour)
	srv := staticRig(t, log)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_repo","arguments":{}}}`,
	} {
		if _, err := srv.Check(t.Context(), postReq(body).CheckRequest(true)); err != nil {
			t.Fatal(err)
		}
	}
	if got := out.String(); got != "" {
		t.Fatalf("written before a flush (one write per line): %q", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines after stop, want 2: %q", len(lines), out.String())
	}
	for i, want := range []string{"allowed", "policy_denied"} {
		var m map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &m); err != nil {
			t.Fatalf("line %d is not JSON: %v", i, err)
		}
		if m["reason"] != want || m["msg"] != "decision" || m["ts"] == nil {
			t.Errorf("line %d: %v", i, m)
		}
		if _, ok := m["caller"]; ok {
			t.Errorf("line %d captures the caller: %v", i, m)
		}
	}
}

// BenchmarkDecisionLog is one decision line written to a file: zap's
// production logger as serve built it before (caller captured, one write
// per line) and decisionlog.New.
func BenchmarkDecisionLog(b *testing.B) {
	srv := staticRig(b, nil)
	c := postReq(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}}`)
	r := RequestFromCheck(c.CheckRequest(true))
	d := srv.Decider.Decide(context.Background(), r)
	for _, tt := range []struct {
		name string
		log  func(f *os.File) (*zap.Logger, func() error)
	}{
		{"unbuffered+caller", func(f *os.File) (*zap.Logger, func() error) {
			zc := zap.NewProductionConfig()
			zc.OutputPaths, zc.Sampling = []string{f.Name()}, nil
			l, err := zc.Build()
			if err != nil {
				b.Fatal(err)
			}
			return l, l.Sync
		}},
		{"buffered", func(f *os.File) (*zap.Logger, func() error) {
			return decisionlog.New(f, zapcore.InfoLevel, 0)
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "decisions.log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			log, stop := tt.log(f)
			defer func() { _ = stop() }()
			s := &Server{Log: log}
			b.ReportAllocs()
			measureCPU(b, func() {
				for b.Loop() {
					s.logDecision(d, r, time.Millisecond, nil)
				}
			})
		})
	}
}
