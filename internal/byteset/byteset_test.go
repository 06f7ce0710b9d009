package byteset

import (
	"strings"
	"testing"
)

// TestAll: All agrees with a byte-by-byte test for every byte at every
// position of 0 to 17 bytes.
func TestAll(t *testing.T) {
	in := func(c byte) bool { return c >= 'a' && c <= 'z' || c == '-' }
	set := Of(in)
	if !set.All("") {
		t.Error(`All("") = false`)
	}
	for n := 1; n <= 17; n++ {
		for at := range n {
			for c := range 256 {
				b := []byte(strings.Repeat("a", n))
				b[at] = byte(c)
				if got, want := set.All(string(b)), in(byte(c)); got != want {
					t.Fatalf("All(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
}
