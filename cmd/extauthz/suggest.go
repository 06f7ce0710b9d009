package main

import (
	"slices"
	"strings"
)

// configErrors are every problem of one configuration, so that serve
// reports them all in one try. The message is one line, the problems in
// the order found with "; " between (a log line's "error" field, and
// grep-able); errors.Is and errors.As see each problem.
type configErrors []error

func (e configErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e configErrors) Unwrap() []error { return e }

// joinProblems returns errs without the nils: nil for none, the error
// itself for one, else a configErrors (nested ones flattened).
func joinProblems(errs ...error) error {
	var out configErrors
	for _, err := range errs {
		// A type assertion, not errors.As: a problem that wraps a
		// configErrors keeps its own context.
		if ce, ok := err.(configErrors); ok {
			out = append(out, ce...)
		} else if err != nil {
			out = append(out, err)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return out
}

// nearestNames returns the names closest to typed, for a "did you mean":
// those at the smallest optimal-string-alignment (Damerau-Levenshtein)
// distance from it, ignoring case (so a name in another case is
// nearest), if that distance is at most 1 (2 for
// a typed name of 8 characters or more); else the names that typed is a
// prefix of, or that are a prefix of typed up to a '-' or '_' (both at
// least 4 characters). At most 3, sorted; none when nothing is close.
func nearestNames(typed string, names []string) []string {
	t := strings.ToLower(typed)
	limit := 1
	if len(t) >= 8 {
		limit = 2
	}
	best, out := limit, []string(nil)
	for _, n := range names {
		d := osaDistance(t, strings.ToLower(n))
		switch {
		case n == typed || d > best: // the name itself is not unknown
		case d < best:
			best, out = d, []string{n}
		default:
			out = append(out, n)
		}
	}
	if out == nil && len(t) >= 4 {
		for _, n := range names {
			l := strings.ToLower(n)
			if n != typed && len(l) >= 4 && (strings.HasPrefix(l, t) || strings.HasPrefix(t, l+"-") || strings.HasPrefix(t, l+"_")) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > 3 {
		out = out[:3]
	}
	return out
}

// didYouMean is " (did you mean A?)", " (did you mean A or B?)" or ""
// for the names given, each written as prefix+name.
func didYouMean(prefix string, names []string) string {
	if len(names) == 0 {
		return ""
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = prefix + n
	}
	return " (did you mean " + strings.Join(q, " or ") + "?)"
}

// osaDistance is the optimal string alignment distance of a and b (bytes):
// insertions, deletions, substitutions and transpositions of two adjacent
// bytes, each 1, no substring edited twice.
func osaDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
