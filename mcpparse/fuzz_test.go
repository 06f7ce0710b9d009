package mcpparse

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcp-extauthz/mcp-extauthz/internal/jcsoracle"
)

// fuzzSeeds returns the corpus bodies, the case bodies and a few hand-made
// edge cases.
func fuzzSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	for _, r := range loadCorpus(tb) {
		seeds = append(seeds, r.body)
	}
	for _, b := range loadCases(tb) {
		seeds = append(seeds, b)
	}
	for _, s := range []string{
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		call(`{"k":1,"\u212a":2}`),
		call(`{"\ud83d\ude00":"\u0000","\ue000":[1E2,-0,0.1,12.50]}`),
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"u"}}}`,
	} {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

// FuzzParse: Parse never panics, errors are *ParseError with a kind and an
// offset inside the body, and a successful parse is deterministic and
// self-consistent; the vectorized and the scalar path agree (samePaths).
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, false)
		f.Add(s, true)
	}
	paths := newPathScanners()
	f.Fuzz(func(t *testing.T, body []byte, batch bool) {
		opt := ParseOptions{AllowBatch: batch}
		samePaths(t, paths, body, opt)
		b, err := Parse(body, opt)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not *ParseError", err)
			}
			if pe.Kind.String() == "" || pe.Kind < ErrSyntax || pe.Kind > ErrReservedKey {
				t.Fatalf("bad kind %d", pe.Kind)
			}
			if pe.Offset < 0 || pe.Offset > int64(len(body)) {
				t.Fatalf("offset %d outside body of %d bytes", pe.Offset, len(body))
			}
			if b != nil {
				t.Fatal("non-nil body with an error")
			}
			return
		}
		if len(b.Messages) == 0 || (!batch && b.Batch) {
			t.Fatalf("Batch=%v with %d messages", b.Batch, len(b.Messages))
		}
		again, err := Parse(body, opt)
		if err != nil || !reflect.DeepEqual(b, again) {
			t.Fatalf("re-parse differs: %v", err)
		}
		for _, m := range b.Messages {
			c, err := Canonicalize(m.Arguments(), Limits{})
			if err != nil || !bytes.Equal(c, m.Arguments()) {
				t.Fatalf("Arguments %q not canonical: %v", m.Arguments(), err)
			}
			if m.ArgsDigest != Digest(m.Arguments()) || m.Args() == nil {
				t.Fatal("ArgsDigest or Args inconsistent")
			}
			if m.Kind == KindRequest && (len(m.ID) == 0 || string(m.ID) == "null") {
				t.Fatalf("request with id %q", m.ID)
			}
			if m.Method == "tools/call" && m.Tool == "" {
				t.Fatal("tools/call without a tool")
			}
		}
	})
}

// FuzzCanonicalize: canonical of canonical is itself, and whatever we
// accept an independent RFC 8785 implementation canonicalizes identically;
// a fresh scanner and one reused across the run agree with the pooled one,
// and the vectorized and scalar paths agree at a small string limit.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	reused := new(scanner)
	paths := newPathScanners()
	f.Fuzz(func(t *testing.T, in []byte) {
		samePaths(t, paths, in, ParseOptions{Limits: smallStringLimit(in)})
		c, err := Canonicalize(in, Limits{})
		for name, p := range map[string]*scanner{"fresh": new(scanner), "reused": reused} {
			p.reset(in, DefaultLimits())
			got, perr := p.canonicalize(false)
			p.truncate()
			if (perr == nil) != (err == nil) || !bytes.Equal(got, c) {
				t.Fatalf("%s scanner: %q %v; pooled %q %v", name, got, perr, c, err)
			}
		}
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not *ParseError", err)
			}
			return
		}
		c2, err := Canonicalize(c, Limits{})
		if err != nil {
			t.Fatalf("canonical form rejected: %v", err)
		}
		if !bytes.Equal(c, c2) {
			t.Fatalf("not idempotent:\n%q\n%q", c, c2)
		}
		ref, err := jcsoracle.Transform(in)
		if err != nil {
			t.Fatalf("the RFC 8785 oracle rejects what we accept: %v", err)
		}
		if !bytes.Equal(c, ref) {
			t.Fatalf("differs from the RFC 8785 oracle:\nours   %q\noracle %q", c, ref)
		}
	})
}

// FuzzDigestStable: re-serializing a parsed body with members reordered,
// other whitespace and other string escapes never changes what Parse
// derives from it, the argument digest above all; the vectorized and the
// scalar path agree on both bodies (samePaths).
func FuzzDigestStable(f *testing.F) {
	for i, s := range fuzzSeeds(f) {
		f.Add(s, uint64(i))
	}
	paths := newPathScanners()
	f.Fuzz(func(t *testing.T, body []byte, seed uint64) {
		samePaths(t, paths, body, ParseOptions{})
		b, err := Parse(body, ParseOptions{})
		if err != nil {
			return
		}
		root, perr := parseDocument(body, DefaultLimits(), true, false)
		if perr != nil {
			t.Fatalf("parseDocument rejects what Parse accepts: %v", perr)
		}
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		other := writeShuffled(nil, body, &root, rng)
		samePaths(t, paths, other, ParseOptions{Limits: Limits{MaxBytes: 64 << 20}})
		b2, err := Parse(other, ParseOptions{Limits: Limits{MaxBytes: 64 << 20}})
		if err != nil {
			t.Fatalf("reordered body rejected: %v\n%q", err, other)
		}
		m, m2 := b.Messages[0], b2.Messages[0]
		if m.ArgsDigest != m2.ArgsDigest || !bytes.Equal(m.Arguments(), m2.Arguments()) {
			t.Fatalf("digest changed: %s -> %s\n%q\n%q", m.ArgsDigest, m2.ArgsDigest, body, other)
		}
		if m.Kind != m2.Kind || m.Method != m2.Method || m.Tool != m2.Tool || m.URI != m2.URI ||
			m.Prompt != m2.Prompt || m.RefType != m2.RefType || !reflect.DeepEqual(m.Args(), m2.Args()) {
			t.Fatalf("message changed:\n%+v\n%+v", m, m2)
		}
		c1, err1 := Canonicalize(body, Limits{})
		c2, err2 := Canonicalize(other, Limits{MaxBytes: 64 << 20})
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(c1, c2) {
			t.Fatalf("canonical form changed: %v / %v", err1, err2)
		}
	})
}

// writeShuffled writes v with members in a random order, random JSON
// whitespace and random (valid) string escapes; numbers keep their literal.
func writeShuffled(dst, in []byte, v *value, rng *rand.Rand) []byte {
	ws := func() {
		for range rng.IntN(3) {
			dst = append(dst, " \t\n\r"[rng.IntN(4)])
		}
	}
	ws()
	switch v.kind {
	case vObject:
		dst = append(dst, '{')
		order := rng.Perm(len(v.mems))
		for i, j := range order {
			if i > 0 {
				dst = append(dst, ',')
			}
			ws()
			dst = writeEscaped(dst, v.mems[j].key, rng)
			ws()
			dst = append(dst, ':')
			dst = writeShuffled(dst, in, &v.mems[j].val, rng)
		}
		ws()
		dst = append(dst, '}')
	case vArray:
		dst = append(dst, '[')
		for i := range v.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = writeShuffled(dst, in, &v.elems[i], rng)
		}
		ws()
		dst = append(dst, ']')
	case vString:
		dst = writeEscaped(dst, v.s, rng)
	default:
		dst = append(dst, in[v.off:v.end]...)
	}
	ws()
	return dst
}

func writeEscaped(dst []byte, s string, rng *rand.Rand) []byte {
	const hex = "0123456789abcdef"
	u := func(r rune) {
		dst = append(dst, '\\', 'u', hex[r>>12&0xF], hex[r>>8&0xF], hex[r>>4&0xF], hex[r&0xF])
	}
	dst = append(dst, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\' || r < 0x20 || rng.IntN(4) == 0:
			if r == '/' && rng.IntN(2) == 0 {
				dst = append(dst, '\\', '/')
			} else if r > 0xFFFF {
				r1, r2 := utf16.EncodeRune(r)
				u(r1)
				u(r2)
			} else {
				u(r)
			}
		default:
			dst = utf8.AppendRune(dst, r)
		}
	}
	return append(dst, '"')
}

// FuzzParseDifferential: Parse (one pass, no tree) and the tree parser it
// replaced (ref_test.go) agree on every input, with and without
// CaseSensitiveKeys: the same accept or reject,
// the same error kind, offset and batch index, and for an accepted body
// the same messages, canonical arguments, digests and decoded arguments.
// Each input is parsed three times: on a fresh scanner (whose per-depth
// caches grow during the pass), on one reused across every input of the
// run, and through the pool; all three must agree with the tree parser
// (cases-3 E01 was reachable only on a fresh scanner). Canonicalize is
// compared the same way on the raw input. The vectorized and the scalar
// path (simd.go) are compared with each other first (samePaths), fresh and
// reused, at the default limits and at a small string limit.
func FuzzParseDifferential(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, false)
		f.Add(s, true)
	}
	for _, n := range []string{`12.5`, `-0.000001`, `1e-7`, `123456789012345`, `1234567890123456`, `1e21`, `1E+20`,
		`0.1e-5`, `-0.0e9`, `100000000000000000000`, `1.50000000000000000000000`, `5e-324`, `1.7976931348623157e308`,
		`333333333.33333329`, `9007199254740993`, `0.000001000`, `[1e290,1e-290,12e288]`} {
		f.Add([]byte(call(`{"n":`+n+`}`)), false)
		f.Add([]byte(n), false)
	}
	// Arrays of objects that repeat, extend, cut or vary a shape.
	for _, s := range []string{
		`[{"b":1,"a":2},{"b":1,"c":3,"a":2},{"b":1,"a":2},{"b":1},{"b":1,"a":2,"B":0}]`,
		`[{"sku":"A","qty":1,"unitPrice":1.5},{"sku":"B","qty":2,"unitPrice":2.5},{"sku":"C","qty":3,"UnitPrice":0}]`,
		`[{"y":{"b":1,"a":2}},{"y":{"b":1,"a":2,"a":3}}]`,
		`[{"\u00e9":1,"e":2},{"é":1,"e":2},{"É":1}]`,
		// Names shaped matches in one load (up to 6 bytes, with the
		// colon; 7, with the quote) or in two parts, spelled otherwise.
		`[{"unitPrice":1,"abcdefg":2,"q":3},{"unitPrice":1,"abcdefg":2,"q":3},{"unitPrice" :1,"abcdefg" : 2,"q"` + "\t" + `:3},{"unitPricE":1},{"unitPrice":1,"unitPrice":2}]`,
		`[{"abcdefgh":1,"zz":2},{"abcdefgh":1,"zz":2},{"abcdefgX":1,"zz":2},{"abcdefgh\u0000":1},{"__proto__":1},{"__proto__":1}]`,
	} {
		f.Add([]byte(call(`{"items":`+s+`}`)), false)
		f.Add([]byte(s), false)
	}
	for _, s := range []string{ // params.task (Message.Task)
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","task":{"ttl":60000},"arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"task": null}}`,
	} {
		f.Add([]byte(s), false)
	}
	reused := new(scanner) // lives across inputs, as a pooled scanner does
	paths := newPathScanners()
	f.Fuzz(func(t *testing.T, body []byte, batch bool) {
		// The vectorized and the scalar path (simd.go), at the default
		// limits and at a small string limit.
		samePaths(t, paths, body, ParseOptions{AllowBatch: batch})
		samePaths(t, paths, body, ParseOptions{AllowBatch: batch, Limits: smallStringLimit(body)})
		for _, exact := range []bool{false, true} {
			opt := ParseOptions{AllowBatch: batch, CaseSensitiveKeys: exact}
			want, werr := refParse(body, opt)
			fresh, ferr := parseOn(new(scanner), body, opt)
			again, rerr := parseOn(reused, body, opt)
			reused.truncate()
			pooled, perr := Parse(body, opt)
			for _, r := range []struct {
				name string
				got  *Body
				err  error
			}{{"fresh", fresh, ferr}, {"reused", again, rerr}, {"pooled", pooled, perr}} {
				sameError(t, "Parse/"+r.name, r.err, werr)
				if r.err == nil {
					sameBody(t, r.name, r.got, want, exact)
				}
			}
		}
		c, err := Canonicalize(body, Limits{})
		wc, werr := refCanonicalize(body, Limits{})
		sameError(t, "Canonicalize", err, werr)
		if !bytes.Equal(c, wc) {
			t.Fatalf("Canonicalize:\nnew %q\nold %q", c, wc)
		}
		p := new(scanner)
		p.reset(body, DefaultLimits())
		fc, fcerr := p.canonicalize(false)
		if (fcerr == nil) != (err == nil) || !bytes.Equal(fc, c) {
			t.Fatalf("Canonicalize on a fresh scanner: %q %v, pooled %q %v", fc, fcerr, c, err)
		}
	})
}

// sameBody fails t unless got (from Parse) and want (from the tree parser)
// hold the same messages, and every message's canonical arguments are a
// fixed point of Canonicalize whose digest internal/jcsoracle, sharing no
// code with either parser, computes alike.
func sameBody(t *testing.T, what string, got *Body, want *refBody, exactKeys bool) {
	t.Helper()
	if got.Batch != want.Batch || len(got.Messages) != len(want.Messages) {
		t.Fatalf("%s: Batch %v/%v, %d/%d messages", what, got.Batch, want.Batch, len(got.Messages), len(want.Messages))
	}
	for i := range got.Messages {
		g, w := &got.Messages[i], &want.Messages[i]
		if g.Kind != w.Kind || !bytes.Equal(g.ID, w.ID) || g.Method != w.Method || g.Tool != w.Tool ||
			g.URI != w.URI || g.Prompt != w.Prompt || g.RefType != w.RefType ||
			!reflect.DeepEqual(g.URIs, w.URIs) || !bytes.Equal(g.Params, w.Params) {
			t.Fatalf("%s: message %d differs:\n%+v\n%+v", what, i, g, w)
		}
		var pm map[string]json.RawMessage // params.task, by encoding/json (params has no duplicate)
		if w.Params != nil {
			if err := json.Unmarshal(w.Params, &pm); err != nil {
				t.Fatalf("%s: message %d params: %v", what, i, err)
			}
		}
		if wt := pm["task"]; !bytes.Equal(g.Task, wt) || (g.Task == nil) != (wt == nil) {
			t.Fatalf("%s: message %d Task %q, want %q", what, i, g.Task, wt)
		}
		if g.ArgsDigest != w.ArgsDigest || !bytes.Equal(g.Arguments(), w.Arguments) {
			t.Fatalf("%s: message %d arguments differ: %s %q / %s %q", what, i, g.ArgsDigest, g.Arguments(), w.ArgsDigest, w.Arguments)
		}
		if args := g.Arguments(); args != nil {
			p := new(scanner)
			p.reset(args, DefaultLimits())
			p.exactKeys = exactKeys
			again, err := p.canonicalize(false)
			if err != nil || !bytes.Equal(again, args) {
				t.Fatalf("%s: message %d: canonical arguments %q re-parse as %q, %v", what, i, args, again, err)
			}
			if od, err := jcsoracle.Digest(args); err != nil || od != g.ArgsDigest {
				t.Fatalf("%s: message %d: ArgsDigest %s, jcsoracle %s (%v)", what, i, g.ArgsDigest, od, err)
			}
		}
		for k, v := range w.Args { // before Args(), which Arg would then use
			if gv, ok := g.Arg(k); !ok || !reflect.DeepEqual(gv, v) {
				t.Fatalf("%s: message %d Arg(%q) = %#v, %v; want %#v", what, i, k, gv, ok, v)
			}
		}
		_, exists := w.Args["\x00absent"]
		if _, ok := g.Arg("\x00absent"); ok != exists {
			t.Fatalf("%s: message %d Arg of an absent name found", what, i)
		}
		if !reflect.DeepEqual(g.Args(), w.Args) {
			t.Fatalf("%s: message %d Args differ:\n%#v\n%#v", what, i, g.Args(), w.Args)
		}
	}
}

// sameError fails t unless err and want are both nil or both *ParseError
// with the same kind, offset and index.
func sameError(t *testing.T, what string, err, want error) {
	t.Helper()
	if (err == nil) != (want == nil) {
		t.Fatalf("%s: new %v, old %v", what, err, want)
	}
	if err == nil {
		return
	}
	var pe, we *ParseError
	if !errors.As(err, &pe) || !errors.As(want, &we) {
		t.Fatalf("%s: errors %T %T", what, err, want)
	}
	if pe.Kind != we.Kind || pe.Offset != we.Offset || pe.Index != we.Index {
		t.Fatalf("%s: new %v, old %v", what, pe, we)
	}
}
