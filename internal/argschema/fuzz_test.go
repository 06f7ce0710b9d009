package argschema

import (
	"encoding/json"
	"strings"
	"testing"

	gschema "github.com/google/jsonschema-go/jsonschema"

	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// gen turns fuzz bytes into small schemas and instances.
type gen struct {
	b []byte
	i int
}

func (g *gen) next(n int) int {
	if g.i >= len(g.b) {
		return 0
	}
	c := g.b[g.i]
	g.i++
	return int(c) % n
}

func pick[T any](g *gen, xs ...T) T { return xs[g.next(len(xs))] }

// Numbers a float64 holds exactly, so the oracle (float64) and the
// validators (exact decimals) must agree; written in several spellings.
var fuzzNumbers = []string{"0", "1", "-1", "2.5", "3", "0.25", "10", "1e2", "7.0", "-0.5", "12", "2E1"}

// schema writes a schema of the fast path's keywords, every object schema
// saying additionalProperties (so Compile closes nothing and the oracle
// reads the same schema), sometimes wrapped in anyOf (the library's path).
func (g *gen) schema(depth int) string {
	var m []string
	add := func(k, v string) { m = append(m, `"`+k+`":`+v) }
	kind := g.next(9)
	if depth <= 0 && kind >= 5 && kind <= 6 {
		kind = 0
	}
	switch kind {
	case 0:
		add("type", `"string"`)
		if g.next(2) == 0 {
			add(pick(g, "minLength", "maxLength"), pick(g, "0", "1", "2", "3"))
		}
		if g.next(3) == 0 {
			add("pattern", pick(g, `"^a"`, `"b$"`, `"^[a-c]*$"`, `"é"`))
		}
		if g.next(4) == 0 {
			add("enum", pick(g, `["a","abc"]`, `["", "é"]`))
		}
	case 1, 2:
		add("type", pick(g, `"integer"`, `"number"`, `["integer","null"]`))
		for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
			if g.next(4) == 0 {
				add(k, pick(g, fuzzNumbers...))
			}
		}
		if g.next(4) == 0 {
			add("multipleOf", pick(g, "2", "3", "0.5", "0.25", "5"))
		}
		if g.next(5) == 0 {
			add("enum", pick(g, `[1, 2.5, "1"]`, `[10, null]`))
		}
	case 3:
		add("type", `"boolean"`)
		if g.next(3) == 0 {
			add("const", pick(g, "true", "false"))
		}
	case 4:
		add("type", pick(g, `"null"`, `["string","boolean"]`))
	case 5:
		add("type", `"object"`)
		var props []string
		for _, name := range []string{"a", "b", "c"} {
			if g.next(2) == 0 {
				props = append(props, `"`+name+`":`+g.schema(depth-1))
			}
		}
		add("properties", "{"+strings.Join(props, ",")+"}")
		if g.next(2) == 0 {
			add("required", pick(g, `["a"]`, `["a","b"]`, `["d"]`))
		}
		switch g.next(3) {
		case 0:
			add("additionalProperties", "false")
		case 1:
			add("additionalProperties", "true")
		default:
			add("additionalProperties", g.schema(depth-1))
		}
		if g.next(4) == 0 {
			add(pick(g, "minProperties", "maxProperties"), pick(g, "0", "1", "2"))
		}
	case 6:
		add("type", `"array"`)
		add("items", g.schema(depth-1))
		if g.next(2) == 0 {
			add(pick(g, "minItems", "maxItems"), pick(g, "0", "1", "2"))
		}
	case 7:
		add("enum", pick(g, `["a", 1, true, null]`, `[2.5, "2.5"]`, `[0]`, `[]`))
	case 8:
		// {}: anything
	}
	s := "{" + strings.Join(m, ",") + "}"
	if g.next(6) == 0 && depth > 0 {
		// The library's path: anyOf of two scalar schemas.
		return `{"additionalProperties":true,"anyOf":[` + s + `,{"type":"boolean"}]}`
	}
	return s
}

func (g *gen) instance(depth int) string {
	k := g.next(7)
	if depth <= 0 && k >= 5 {
		k = 0
	}
	switch k {
	case 0:
		return pick(g, `""`, `"a"`, `"abc"`, `"ba"`, `"é"`, `"a\/b"`, `"\u0061"`, `"1"`, `"2.5"`)
	case 1, 2:
		return pick(g, fuzzNumbers...)
	case 3:
		return pick(g, "true", "false")
	case 4:
		return "null"
	case 5:
		var ms []string
		for _, name := range []string{"a", "b", "c", "d"} {
			if g.next(2) == 0 {
				if name == "a" && g.next(2) == 0 {
					name = `\u0061` // the same name, escaped
				}
				ms = append(ms, `"`+name+`":`+g.instance(depth-1))
			}
		}
		return "{" + strings.Join(ms, ",") + "}"
	default:
		var es []string
		for n := g.next(4); n > 0; n-- {
			es = append(es, g.instance(depth-1))
		}
		return "[" + strings.Join(es, ",") + "]"
	}
}

// FuzzValidate validates random instances against random small schemas
// three ways: this package's fast path (when the schema allows it), the
// library on the exact decoding, and google/jsonschema-go (the Go MCP
// SDK's validator, float64 numbers; the generator keeps to numbers a
// float64 holds exactly and to keywords both assert) as the independent
// oracle. All must agree on validity.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{"", "\x05\x00\x00\x01", "\x06\x01\x05\x00\x00\x00\x03\x00\x01\x05", "\x01\x00\x00\x01\x02\x03\x04\x05\x06", "\x07\x00\x03\x02\x05\x00\x00\x00"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		g := &gen{b: b}
		schema, inst := g.schema(2), g.instance(3)
		draft := pick(g, "", "", "http://json-schema.org/draft-07/schema#")
		if draft != "" {
			// The same schema under draft-07, which both validators read.
			if schema == "{}" {
				schema = `{"$schema":"` + draft + `"}`
			} else {
				schema = `{"$schema":"` + draft + `",` + schema[1:]
			}
		}
		s, err := Compile([]byte(schema))
		if err != nil && draft != "" && strings.Contains(schema, `"enum":[]`) {
			return // draft-07's metaschema wants an enum of one value or more
		}
		if err != nil {
			t.Fatalf("Compile(%s): %v", schema, err)
		}
		raw := []byte(inst)
		if _, err := mcpparse.Canonicalize(raw, mcpparse.Limits{}); err != nil {
			t.Fatalf("generated %s: %v", inst, err)
		}
		lib := s.Validate(mcpparse.DecodeExact(raw))
		got := s.ValidateRaw(raw)
		if (got == nil) != (lib == nil) {
			t.Fatalf("schema %s, instance %s: fast path (%v) says %v, library says %v", schema, inst, s.Fast(), got, lib)
		}
		var gs gschema.Schema
		if err := json.Unmarshal([]byte(schema), &gs); err != nil {
			t.Fatalf("oracle cannot read %s: %v", schema, err)
		}
		rs, err := gs.Resolve(nil)
		if err != nil {
			t.Fatalf("oracle cannot resolve %s: %v", schema, err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		oerr := rs.Validate(v)
		if (oerr == nil) != (lib == nil) {
			t.Fatalf("schema %s, instance %s: library says %v, oracle says %v", schema, inst, lib, oerr)
		}
	})
}
