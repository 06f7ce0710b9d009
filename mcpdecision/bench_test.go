package mcpdecision

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"syscall"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// cpuNow is the process's user+system CPU time.
func cpuNow(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loopCPU runs loop and reports cpu-ns/op (other processes' time on a
// shared machine does not count).
func loopCPU(b *testing.B, loop func()) {
	b.ReportAllocs()
	start := cpuNow(b)
	loop()
	b.ReportMetric(float64(cpuNow(b)-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkSign: Signer.Sign of a typical statement against the bare
// signature primitive over an input of the same size, per algorithm, in
// one run: the difference is the statement's own cost (payload, base64).
func BenchmarkSign(b *testing.B) {
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	st := baseStatement(`{"query":"refunds"}`)
	for _, k := range []jose.JSONWebKey{{Key: ed, KeyID: "ed"}, {Key: ec, KeyID: "ec"}} {
		s, err := NewSigner([]jose.JSONWebKey{k})
		if err != nil {
			b.Fatal(err)
		}
		j, _ := s.Sign(st)
		in := []byte(j[:len(j)-87]) // header.payload, about
		alg := "EdDSA"
		if k.KeyID == "ec" {
			alg = "ES256"
		}
		b.Run(alg+"/primitive", func(b *testing.B) {
			loopCPU(b, func() {
				for b.Loop() {
					if alg == "EdDSA" {
						ed25519.Sign(ed, in)
					} else {
						h := sha256.Sum256(in)
						_, _ = ecdsa.SignASN1(rand.Reader, ec, h[:])
					}
				}
			})
		})
		b.Run(alg+"/Sign", func(b *testing.B) {
			loopCPU(b, func() {
				for b.Loop() {
					_, _ = s.Sign(st)
				}
			})
		})
	}
}
