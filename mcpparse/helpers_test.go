package mcpparse

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/internal/testkit"
)

// sharedDir is the repository's copy of the project's shared test data
// (corpus, cases, schemas): <repo>/testdata/shared, seen from
// <repo>/mcpparse. TestSharedCopy keeps it equal to ../shared beside the
// repository, where that exists.
const sharedDir = "../testdata/shared"

// wantKind fails t unless err is a *ParseError of kind want.
func wantKind(t *testing.T, err error, want ErrorKind) *ParseError {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", want)
	}
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("got error %T %v, want *ParseError", err, err)
	}
	if pe.Kind != want {
		t.Fatalf("got %v, want kind %s", pe, want)
	}
	return pe
}

// corpusRecord is one line of shared/corpus/mcp-real/*.jsonl.
type corpusRecord struct {
	Session string `json:"session"`
	Seq     int    `json:"seq"`
	HTTP    struct {
		Method  string `json:"method"`
		BodyB64 string `json:"body_b64"`
	} `json:"http"`
	JSONRPC *struct {
		Method    string          `json:"method"`
		ID        json.RawMessage `json:"id"`
		ToolOrURI *string         `json:"tool_or_uri"`
	} `json:"jsonrpc"`
	body []byte
}

// loadCorpus returns every record with a non-empty body. A missing corpus
// is a failure, not a skip: CI must not go green without it.
func loadCorpus(tb testing.TB) []corpusRecord {
	tb.Helper()
	var out []corpusRecord
	for _, l := range testkit.JSONLines(tb, filepath.Join(sharedDir, "corpus", "mcp-real", "*.jsonl")) {
		var r corpusRecord
		l.Decode(tb, &r)
		var err error
		r.body, err = base64.StdEncoding.DecodeString(r.HTTP.BodyB64)
		if err != nil {
			tb.Fatalf("%s seq %d: %v", l.File, r.Seq, err)
		}
		if len(r.body) > 0 {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		tb.Fatal("corpus has no request bodies")
	}
	return out
}

// caseRecord is one line of shared/cases/cases.jsonl.
type caseRecord struct {
	ID      string `json:"id"`
	Request struct {
		BodyText *string `json:"body_text"`
		BodyHex  *string `json:"body_hex"`
	} `json:"request"`
}

func loadCases(tb testing.TB) map[string][]byte {
	tb.Helper()
	out := map[string][]byte{}
	for _, file := range []string{"cases.jsonl", "cases-2.jsonl", "cases-3.jsonl"} {
		for _, l := range testkit.JSONLines(tb, filepath.Join(sharedDir, "cases", file)) {
			var c caseRecord
			l.Decode(tb, &c)
			switch {
			case c.Request.BodyHex != nil:
				b, err := hex.DecodeString(*c.Request.BodyHex)
				if err != nil {
					tb.Fatalf("%s: %v", c.ID, err)
				}
				out[c.ID] = b
			case c.Request.BodyText != nil:
				out[c.ID] = []byte(*c.Request.BodyText)
			}
		}
	}
	return out
}

// Arguments returns the RFC 8785 form of RawArguments, `{}` when there are
// none. It canonicalizes again on every call, into a new slice: Parse
// itself only hashes the canonical form (ArgsDigest).
func (m *Message) Arguments() []byte {
	if m.RawArguments == nil {
		return []byte("{}")
	}
	p := getScanner(m.RawArguments, unlimited)
	defer putScanner(p)
	p.exactKeys = m.exactKeys
	out, err := p.canonicalize(false)
	if err != nil { // unreachable: Parse accepted these bytes under the same rules
		return nil
	}
	return out
}
