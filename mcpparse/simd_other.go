//go:build !amd64 || purego

package mcpparse

// simdPath: only amd64 (with AVX2, without the purego tag) runs the
// vectorized path (simd.go); everywhere else every pass is scalar.
var simdPath = false
