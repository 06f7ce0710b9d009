//go:build amd64 && !purego

package mcpparse

import "golang.org/x/sys/cpu"

// simdPath: this machine runs the vectorized path (simd.go): AVX2, the
// least the validator (github.com/segmentio/asm/utf8) vectorizes with.
// Without AVX2 that validator falls back to the standard library's,
// which would make the up-front pass a second scalar one: the scalar
// path is then faster.
var simdPath = cpu.X86.HasAVX2

// indexSpecialAVX2 returns the index of the first byte of b that is '"',
// '\\' or below 0x20, or len(b); len(b) must be at least 32 and the
// machine must have AVX2 (simdPath). In simd_amd64.s.
//
//go:noescape
func indexSpecialAVX2(b []byte) int
