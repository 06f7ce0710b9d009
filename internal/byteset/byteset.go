// Package byteset tests strings against a set of bytes with a table, eight
// bytes a step and one branch per step: the check of a token, a header
// value or a digest that every Check reads.
package byteset

// Set marks the bytes in it with 1, the others with 0.
type Set [256]uint8

// Of returns the Set of the bytes c for which in(c) is true.
func Of(in func(c byte) bool) (t Set) {
	for c := range 256 {
		if in(byte(c)) {
			t[c] = 1
		}
	}
	return t
}

// All reports whether every byte of s is in t (true for "").
func (t *Set) All(s string) bool {
	for len(s) >= 8 {
		if t[s[0]]&t[s[1]]&t[s[2]]&t[s[3]]&t[s[4]]&t[s[5]]&t[s[6]]&t[s[7]] == 0 {
			return false
		}
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		if t[s[i]] == 0 {
			return false
		}
	}
	return true
}
