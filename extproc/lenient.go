package extproc

import (
	"context"
	"errors"

	"github.com/mcp-extauthz/mcp-extauthz/internal/listfilter"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// maxLossyNumbers bounds the numbers withoutLossyNumbers replaces.
const maxLossyNumbers = 64

// withoutLossyNumbers returns a copy of body (one JSON-RPC message or a
// batch) in which each number mcpparse refuses as not exactly an IEEE 754
// double (ErrNonCanonicalNumber: 2^53+1, a nanosecond timestamp, 1e400) is
// written as 0 padded with spaces to its length, so every other byte keeps
// its offset; ok is false when body fails for any other reason or holds
// more than maxLossyNumbers of them. The clients read such numbers (with
// loss); the seam must still read the message's structure, which they do
// not change.
func withoutLossyNumbers(body []byte, lim mcpparse.Limits) (out []byte, ok bool) {
	out = body
	copied := false
	for range maxLossyNumbers + 1 {
		_, err := mcpparse.Parse(out, mcpparse.ParseOptions{Limits: lim, AllowBatch: true})
		var pe *mcpparse.ParseError
		switch {
		case err == nil:
			return out, true
		case !errors.As(err, &pe) || pe.Kind != mcpparse.ErrNonCanonicalNumber:
			return nil, false
		}
		if !copied {
			out, copied = append([]byte(nil), body...), true
		}
		i := int(pe.Offset)
		end := numberEnd(out, i)
		if end <= i {
			return nil, false
		}
		out[i] = '0'
		for j := i + 1; j < end; j++ {
			out[j] = ' '
		}
	}
	return nil, false
}

// numberEnd is the end of the JSON number (RFC 8259 section 6) at b[i:]; i
// when there is none.
func numberEnd(b []byte, i int) int {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	digits := func() bool {
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j > k
	}
	if !digits() {
		return i
	}
	if j < len(b) && b[j] == '.' {
		j++
		if !digits() {
			return i
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if !digits() {
			return i
		}
	}
	return j
}

// lossyOnly reports whether err is the filter's refusal of a body for a
// number that is not exactly a double, and nothing else found so far.
func lossyOnly(err error) bool {
	var fe *listfilter.Error
	var pe *mcpparse.ParseError
	return errors.As(err, &fe) && fe.Kind == "parse" && errors.As(err, &pe) && pe.Kind == mcpparse.ErrNonCanonicalNumber
}

// checkLossy decides a body the strict filter refused only for a lossy
// number (lossyOnly): its structure is read from withoutLossyNumbers's copy
// under the stream's transport rule, with nothing observed, sealed or
// bound. It passes (nil error) only when that copy holds no list and no
// task: a list or task whose bytes the seam cannot read exactly (a pin
// would not see a change of such a number) stays refused. The receipt
// reads the copy.
func (st *stream) checkLossy(ctx context.Context, body []byte) error {
	clean, ok := withoutLossyNumbers(body, st.limits())
	if !ok {
		return errors.New("a number that is not an IEEE 754 double, beyond what the seam reads")
	}
	opt := st.filterOptions(ctx)
	opt.Observe, opt.ObserveList, opt.Cursor, opt.Cache = nil, nil, nil, nil
	opt.Keep = func(listfilter.Kind, string, []byte) (bool, error) { return true, nil } // a list is refused below
	res, err := listfilter.Filter(clean, opt)
	switch {
	case err != nil:
		return err
	case res.Lists > 0 || len(res.Tasks) > 0:
		return errors.New("a list or task with a number that is not an IEEE 754 double")
	}
	st.answer(clean)
	return nil
}
