//go:build !amd64 || purego

package mcpparse

// simdPath: only amd64 (with AVX2, without the purego tag) runs the
// vectorized path (simd.go); everywhere else every pass is scalar.
var simdPath = false

// indexSpecialAVX2 is the amd64 assembly's contract, by a byte loop; it
// is not called where simdPath is false.
func indexSpecialAVX2(b []byte) int {
	for i, c := range b {
		if c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return len(b)
}
