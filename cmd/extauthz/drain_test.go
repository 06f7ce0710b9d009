package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestEnvoyDrain: the preStop fails Envoy's readiness, then starts the
// graceful listener drain, both as POSTs to the admin API, and returns only
// after --drain-time; an admin error still waits, then exits 1.
func TestEnvoyDrain(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		wantCode int
	}{
		{"admin answers", http.StatusOK, 0},
		{"admin refuses", http.StatusInternalServerError, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				got = append(got, r.Method+" "+r.URL.RequestURI())
				mu.Unlock()
				w.WriteHeader(tt.status)
			}))
			defer admin.Close()
			addr := strings.TrimPrefix(admin.URL, "http://")
			start := time.Now()
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), []string{"envoy-drain", "--admin-addr", addr, "--drain-time", "300ms"}, &stdout, &stderr)
			if code := exitCode(err); code != tt.wantCode {
				t.Fatalf("exit %d (%v), want %d; stderr %s", code, err, tt.wantCode, stderr.String())
			}
			if d := time.Since(start); d < 300*time.Millisecond {
				t.Errorf("returned after %v, before --drain-time", d)
			}
			mu.Lock()
			defer mu.Unlock()
			want := []string{"POST /healthcheck/fail", "POST /drain_listeners?graceful"}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("admin calls %v, want %v", got, want)
			}
		})
	}
}

func TestEnvoyDrainBadAddr(t *testing.T) {
	var out bytes.Buffer
	if code := exitCode(run(t.Context(), []string{"envoy-drain", "--admin-addr", "nohostport"}, &out, &out)); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
}
