package mcpparse

import asmutf8 "github.com/segmentio/asm/utf8"

// The vectorized path (issue 31). Stage 1 validates the whole input's
// UTF-8 at once with AVX2 (github.com/segmentio/asm/utf8, the Keiser-Lemire
// lookup algorithm), before the strict pass; stage 2 is the same strict
// pass, which then skips the per-rune validation of strings: its string
// scanner stops only at '"', '\\' and control bytes.
//
// The two paths give the same result on every input (FuzzParseDifferential
// compares them): the scalar pass reports invalid UTF-8 anywhere in the
// input before any fault but the size (scanner.fail), and a pass that
// accepts an input has read all of it as UTF-8, so an input that stage 1
// rejects is ErrInvalidUTF8 at its first invalid sequence on both paths,
// and an input that it accepts has no invalid sequence for the scalar
// pass to find.
//
// simdPath (simd_amd64.go, simd_other.go) picks the path at start-up: amd64
// with AVX2 and without the purego build tag. The scalar path is the
// fallback everywhere else and the tests' oracle (scanner.scalar, or
// `go test -tags purego`).

// prevalidate runs stage 1 on p.in unless p.scalar or the machine has no
// vectorized path: p.valid reports that p.in is valid UTF-8. It returns
// false when p.in is not (the caller fails the pass: fail finds the first
// invalid sequence).
func (p *scanner) prevalidate() bool {
	p.valid = false
	if !simdPath || p.scalar {
		return true
	}
	if !asmutf8.Valid(p.in) {
		return false
	}
	p.valid = true
	return true
}
