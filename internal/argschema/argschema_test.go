package argschema

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// check compiles schema and validates args (JSON text) as the decider
// does (ValidateRaw: the fast path when the schema allows), and requires
// the library on the decoded arguments (numbers exact) to agree on
// validity and, for one failure, on where and why.
func check(t *testing.T, schema, args string) *Failure {
	t.Helper()
	s, err := Compile([]byte(schema))
	if err != nil {
		t.Fatalf("Compile(%s): %v", schema, err)
	}
	got := s.ValidateRaw([]byte(args))
	lib := s.Validate(mcpparse.DecodeExact([]byte(args)))
	if (got == nil) != (lib == nil) || got != nil && *got != *lib {
		t.Errorf("fast path %v (fast %v), library %v", got, s.Fast(), lib)
	}
	return got
}

// TestKeywordFamilies: one table per family of JSON Schema keywords an
// inputSchema uses; want "" is valid, else "pointer keyword".
func TestKeywordFamilies(t *testing.T) {
	tests := []struct {
		family, schema, give, want string
	}{
		// types
		{"type", `{"type":"object","properties":{"n":{"type":"integer"}}}`, `{"n":3}`, ""},
		{"type", `{"type":"object","properties":{"n":{"type":"integer"}}}`, `{"n":"3"}`, "/n type"},
		{"type", `{"type":"object","properties":{"n":{"type":"integer"}}}`, `{"n":3.5}`, "/n type"},
		{"type", `{"type":"object","properties":{"n":{"type":"integer"}}}`, `{"n":3.0}`, ""},
		{"type", `{"type":"object","properties":{"n":{"type":"number"}}}`, `{"n":true}`, "/n type"},
		{"type", `{"type":"object","properties":{"s":{"type":"string"}}}`, `{"s":null}`, "/s type"},
		{"type", `{"type":"object","properties":{"s":{"type":["string","null"]}}}`, `{"s":null}`, ""},
		{"type", `{"type":"object","properties":{"b":{"type":"boolean"}}}`, `{"b":"true"}`, "/b type"},
		{"type", `{"type":"object"}`, `[]`, " type"},
		// required
		{"required", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, `{}`, "/a required"},
		{"required", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, `{"a":"x"}`, ""},
		// enum, const
		{"enum", `{"type":"object","properties":{"c":{"enum":["red","green"]}}}`, `{"c":"blue"}`, "/c enum"},
		{"enum", `{"type":"object","properties":{"c":{"enum":["red","green"]}}}`, `{"c":"red"}`, ""},
		{"enum", `{"type":"object","properties":{"c":{"enum":[1,2]}}}`, `{"c":1.0}`, ""},
		{"const", `{"type":"object","properties":{"v":{"const":"x"}}}`, `{"v":"y"}`, "/v const"},
		// an empty enum admits nothing (2020-12 allows it: deny all)
		{"enum empty", `{"type":"object","properties":{"c":{"type":"string","enum":[]}}}`, `{"c":"x"}`, "/c enum"},
		{"enum empty", `{"type":"object","properties":{"c":{"enum":[]}}}`, `{"c":true}`, "/c enum"},
		{"enum empty", `{"type":"object","properties":{"c":{"enum":[]}}}`, `{}`, ""},
		{"const", `{"type":"object","properties":{"v":{"const":{"a":1}}}}`, `{"v":{"a":1}}`, ""},
		// min/max, exact decimals
		{"minimum", `{"type":"object","properties":{"n":{"minimum":1}}}`, `{"n":0}`, "/n minimum"},
		{"maximum", `{"type":"object","properties":{"n":{"maximum":100}}}`, `{"n":100}`, ""},
		{"exclusiveMaximum", `{"type":"object","properties":{"n":{"exclusiveMaximum":100}}}`, `{"n":100}`, "/n exclusiveMaximum"},
		{"maximum exact", `{"type":"object","properties":{"n":{"maximum":9007199254740992}}}`, `{"n":9007199254740992}`, ""},
		{"maximum exact decimal", `{"type":"object","properties":{"n":{"maximum":0.3}}}`, `{"n":0.30000000000000004}`, "/n maximum"},
		{"multipleOf exact", `{"type":"object","properties":{"n":{"multipleOf":0.01}}}`, `{"n":0.07}`, ""},
		{"multipleOf exact", `{"type":"object","properties":{"n":{"multipleOf":0.01}}}`, `{"n":0.075}`, "/n multipleOf"},
		{"minLength", `{"type":"object","properties":{"s":{"minLength":2}}}`, `{"s":"é"}`, "/s minLength"},
		{"maxLength", `{"type":"object","properties":{"s":{"maxLength":1}}}`, `{"s":"é"}`, ""},
		{"maxItems", `{"type":"object","properties":{"a":{"maxItems":1}}}`, `{"a":[1,2]}`, "/a maxItems"},
		{"maxProperties", `{"type":"object","maxProperties":1,"additionalProperties":true}`, `{"a":1,"b":2}`, " maxProperties"},
		// pattern
		{"pattern", `{"type":"object","properties":{"s":{"pattern":"^[a-z]+$"}}}`, `{"s":"abc"}`, ""},
		{"pattern", `{"type":"object","properties":{"s":{"pattern":"^[a-z]+$"}}}`, `{"s":"ab1"}`, "/s pattern"},
		// formats the validator asserts
		{"format date-time", `{"type":"object","properties":{"t":{"type":"string","format":"date-time"}}}`, `{"t":"2026-07-28T10:00:00Z"}`, ""},
		{"format date-time", `{"type":"object","properties":{"t":{"type":"string","format":"date-time"}}}`, `{"t":"yesterday"}`, "/t format"},
		{"format email", `{"type":"object","properties":{"e":{"type":"string","format":"email"}}}`, `{"e":"not an email"}`, "/e format"},
		{"format uuid", `{"type":"object","properties":{"u":{"type":"string","format":"uuid"}}}`, `{"u":"123"}`, "/u format"},
		{"format ipv4", `{"type":"object","properties":{"i":{"type":"string","format":"ipv4"}}}`, `{"i":"10.0.0.256"}`, "/i format"},
		{"format uri", `{"type":"object","properties":{"u":{"type":"string","format":"uri"}}}`, `{"u":"https://example.com/a"}`, ""},
		{"format unknown", `{"type":"object","properties":{"u":{"type":"string","format":"x-custom"}}}`, `{"u":"anything"}`, ""},
		// nested objects and arrays
		{"nested", `{"type":"object","properties":{"o":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}}`, `{"o":{}}`, "/o/n required"},
		{"nested", `{"type":"object","properties":{"o":{"type":"object","properties":{"n":{"type":"integer"}}}}}`, `{"o":{"n":"x"}}`, "/o/n type"},
		{"nested unknown", `{"type":"object","properties":{"o":{"type":"object","properties":{"n":{"type":"integer"}}}}}`, `{"o":{"n":1,"m":2}}`, "/o/m unevaluatedProperties"},
		{"array items", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`, `{"a":["x",1]}`, "/a/1 type"},
		{"array of objects", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"}}}}}}`, `{"a":[{"k":"x","z":1}]}`, "/a/0/z unevaluatedProperties"},
		{"prefixItems", `{"type":"object","properties":{"a":{"type":"array","prefixItems":[{"type":"string"}],"items":false}}}`, `{"a":["x",1]}`, "/a/1 items"},
		{"escapes", `{"type":"object","properties":{"s":{"type":"string","maxLength":20,"pattern":"^a+\"b+$"}}}`, `{"s":"aaaaaaaaaa\"bbbbbbbbb"}`, ""},
		{"escapes", `{"type":"object","properties":{"s":{"type":"string","maxLength":19}}}`, `{"s":"aaaaaaaaaa\"bbbbbbbbb"}`, "/s maxLength"},
		{"escaped name", `{"type":"object","properties":{"ab":{"type":"integer"}},"required":["ab"]}`, `{"\u0061b":"x"}`, "/ab type"},
		{"escaped unknown name", `{"type":"object","properties":{"ab":{}}}`, `{"a\/b":1}`, "/a~1b unevaluatedProperties"},
		{"pointer escaping", `{"type":"object","properties":{"a/b~c":{"type":"string"}}}`, `{"a/b~c":1}`, "/a~1b~0c type"},
		// $ref inside the schema
		{"$ref", `{"type":"object","$defs":{"pos":{"type":"integer","minimum":1}},"properties":{"n":{"$ref":"#/$defs/pos"}}}`, `{"n":0}`, "/n minimum"},
		{"$ref", `{"type":"object","$defs":{"pos":{"type":"integer","minimum":1}},"properties":{"n":{"$ref":"#/$defs/pos"}}}`, `{"n":2}`, ""},
		{"$ref object closed", `{"type":"object","$defs":{"o":{"type":"object","properties":{"a":{}}}},"properties":{"o":{"$ref":"#/$defs/o"}}}`, `{"o":{"a":1,"b":2}}`, "/o/b unevaluatedProperties"},
		{"$ref object", `{"type":"object","$defs":{"o":{"type":"object","properties":{"a":{}}}},"properties":{"o":{"$ref":"#/$defs/o"}}}`, `{"o":{"a":1}}`, ""},
		// additionalProperties forms
		{"unknown refused", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{"a":"x","b":1}`, "/b unevaluatedProperties"},
		{"empty object schema", `{"type":"object"}`, `{"b":1}`, "/b unevaluatedProperties"},
		{"empty object schema", `{"type":"object"}`, `{}`, ""},
		{"additionalProperties true", `{"type":"object","properties":{"a":{}},"additionalProperties":true}`, `{"b":1}`, ""},
		{"additionalProperties false", `{"type":"object","properties":{"a":{}},"additionalProperties":false}`, `{"b":1}`, "/b additionalProperties"},
		{"additionalProperties schema", `{"type":"object","additionalProperties":{"type":"integer"}}`, `{"b":1}`, ""},
		{"additionalProperties schema", `{"type":"object","additionalProperties":{"type":"integer"}}`, `{"b":"x"}`, "/b type"},
		{"unevaluatedProperties true", `{"type":"object","unevaluatedProperties":true}`, `{"b":1}`, ""},
		{"patternProperties", `{"type":"object","patternProperties":{"^x-":{"type":"string"}}}`, `{"x-a":"s"}`, ""},
		{"patternProperties", `{"type":"object","patternProperties":{"^x-":{"type":"string"}}}`, `{"y":"s"}`, "/y unevaluatedProperties"},
		{"allOf sees both", `{"type":"object","allOf":[{"properties":{"a":{}}},{"properties":{"b":{}}}]}`, `{"a":1,"b":2}`, ""},
		{"allOf unknown", `{"type":"object","allOf":[{"properties":{"a":{}}},{"properties":{"b":{}}}]}`, `{"a":1,"c":2}`, "/c unevaluatedProperties"},
		{"anyOf", `{"type":"object","anyOf":[{"properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"string"}},"required":["b"]}]}`, `{"b":"x"}`, ""},
		{"open member", `{"type":"object","properties":{"any":{}}}`, `{"any":{"x":1}}`, ""},
		// draft-07 by $schema
		{"draft-07 unevaluatedProperties ignored", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{}},"additionalProperties":true,"unevaluatedProperties":false}`, `{"b":1}`, ""},
		{"draft-07 zod", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"city":{"type":"string","minLength":1}},"required":["city"],"additionalProperties":false}`, `{"city":""}`, "/city minLength"},
		{"draft-07 closed", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"string"}}}`, `{"a":"x","b":1}`, "/b additionalProperties"},
		{"draft-07 $ref", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"o":{"type":"object","properties":{"k":{}}}},"properties":{"o":{"$ref":"#/definitions/o"}}}`, `{"o":{"k":1,"z":2}}`, "/o/z additionalProperties"},
		{"draft-07 $ref", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"o":{"type":"object","properties":{"k":{}}}},"properties":{"o":{"$ref":"#/definitions/o"}}}`, `{"o":{"k":1}}`, ""},
		{"boolean schema", `true`, `{"a":1}`, ""},
		{"false items", `{"type":"object","properties":{"a":{"type":"array","items":false}}}`, `{"a":[1]}`, "/a/0 items"},
		{"false property", `{"type":"object","properties":{"a":false}}`, `{"a":1}`, "/a properties"},
		{"false additionalProperties schema", `{"type":"object","properties":{"a":{}},"additionalProperties":{"not":{}}}`, `{"b":1}`, "/b additionalProperties"},
	}
	for _, tt := range tests {
		t.Run(tt.family+" "+tt.give, func(t *testing.T) {
			f := check(t, tt.schema, tt.give)
			got := ""
			if f != nil {
				got = f.Pointer + " " + f.Keyword
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCompileRefuses: schemas that cannot decide are unusable.
func TestCompileRefuses(t *testing.T) {
	deep := strings.Repeat(`{"properties":{"a":`, MaxSchemaDepth) + `{}` + strings.Repeat(`}}`, MaxSchemaDepth)
	tests := []struct{ name, give string }{
		{"external $ref", `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`},
		{"file $ref", `{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`},
		{"relative $ref against $id", `{"$id":"https://example.com/root.json","type":"object","properties":{"a":{"$ref":"other.json"}}}`},
		{"dangling $ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/none"}}}`},
		{"unknown $schema", `{"$schema":"https://example.com/my-meta","type":"object"}`},
		{"not a schema", `{"type":"objekt"}`},
		{"duplicate member", `{"type":"object","type":"string"}`},
		{"lossy number", `{"type":"object","properties":{"n":{"maximum":9007199254740993}}}`},
		{"too deep", deep},
		{"too large", `{"description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}`},
		{"draft-07 composition", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","allOf":[{"properties":{"a":{}}}]}`},
		{"not JSON", `{type: object}`},
		// Work bounds (cost.go): 2^12 subschemas on one value in place,
		// and 2 per level through a recursive member.
		{"oneOf chain", oneOfChain(12)},
		{"recursive doubling", `{"type":"object","$defs":{"n":{"oneOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"}]},"a":{"type":"object","properties":{"x":{"$ref":"#/$defs/n"}}}},"properties":{"x":{"$ref":"#/$defs/n"}}}`},
		{"$dynamicRef", `{"type":"object","$defs":{"d":{"$dynamicAnchor":"d","type":"string"}},"properties":{"a":{"$dynamicRef":"#d"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Compile([]byte(tt.give)); !errors.Is(err, ErrUnusable) {
				t.Errorf("Compile: %v, want ErrUnusable", err)
			}
		})
	}
}

// TestFailureNeverHoldsValue: the failure names where and which keyword,
// never the value.
func TestFailureNeverHoldsValue(t *testing.T) {
	f := check(t, `{"type":"object","properties":{"pw":{"type":"string","maxLength":3}}}`, `{"pw":"hunter2-secret"}`)
	if f == nil || strings.Contains(f.Error(), "hunter2") || f.Pointer != "/pw" || f.Keyword != "maxLength" {
		t.Fatalf("failure %+v", f)
	}
}

func TestCache(t *testing.T) {
	c := NewCache(2)
	s1, err := c.Compile("fp1", []byte(`{"type":"object"}`))
	if err != nil || s1 == nil {
		t.Fatal(err)
	}
	if s, _ := c.Compile("fp1", []byte(`{"type":"string"}`)); s != s1 {
		t.Error("a cached fingerprint compiled again")
	}
	if _, err := c.Compile("fp2", []byte(`{"$ref":"https://x"}`)); err == nil {
		t.Error("unusable schema compiled")
	}
	if _, ok, err := c.Lookup("fp2"); !ok || err == nil {
		t.Error("a compile error is not kept")
	}
}

// TestFastPathSubset: schemas of the fast path's keywords take it; any
// other keyword sends the schema to the library.
func TestFastPathSubset(t *testing.T) {
	tests := []struct {
		give string
		want bool
	}{
		{`{"type":"object","properties":{"a":{"type":"string","maxLength":3,"pattern":"^a"},"n":{"type":["integer","null"],"minimum":0,"multipleOf":2},"e":{"enum":["x",1,null,true]},"o":{"type":"object","additionalProperties":{"type":"integer"}},"l":{"type":"array","items":{"const":"k"},"maxItems":2}},"required":["a"],"title":"t","x-vendor":1}`, true},
		{`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"t":{"type":"string","format":"date-time"}}}`, true},
		{`true`, true},
		{`{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{}}}`, false},
		{`{"type":"object","allOf":[{"properties":{"a":{}}}]}`, false},
		{`{"type":"object","patternProperties":{"^x":{}}}`, false},
		{`{"type":"object","properties":{"a":{"type":"array","prefixItems":[{}]}}}`, false},
		{`{"type":"object","properties":{"e":{"enum":[{"a":1}]}}}`, false},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, true},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","unevaluatedProperties":false}`, false},
		{`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`, false},
		{`{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object"}`, true},
	}
	for _, tt := range tests {
		s, err := Compile([]byte(tt.give))
		if err != nil {
			t.Fatal(err)
		}
		if s.Fast() != tt.want {
			t.Errorf("%s: fast %v, want %v", tt.give, s.Fast(), tt.want)
		}
	}
}

// TestConcurrentValidate: one compiled schema (and the Cache) serves many
// Checks at once, on both paths (run with -race).
func TestConcurrentValidate(t *testing.T) {
	c := NewCache(4)
	schemas := []string{benchSchema, `{"type":"object","anyOf":[{"properties":{"a":{"type":"integer"}}},{"properties":{"b":{}}}]}`}
	args := [][]byte{benchArgs(1), []byte(`{"a":1}`)}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				k := (g + i) % 2
				s, err := c.Compile(strconv.Itoa(k), []byte(schemas[k]))
				if err != nil {
					t.Error(err)
					return
				}
				if f := s.ValidateRaw(args[k]); f != nil {
					t.Error(f)
					return
				}
				if f := s.ValidateRaw([]byte(`{"nope":1}`)); f == nil {
					t.Error("an unknown member passed")
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestFastPathBytes: the fast path's byte-level shortcuts (member names
// matched by word, short strings found inline, lengths settled by byte
// count, numbers in the 19-digit form) agree with the library, failure
// locations included, at the edges those shortcuts have: white space,
// names longer than a word or a prefix of another, strings ending at the
// input's end, escapes, code points of several bytes, long numbers.
func TestFastPathBytes(t *testing.T) {
	const schema = `{"type":"object","properties":{` +
		`"a":{"type":"string","maxLength":3},"ab":{"type":"integer","minimum":-5,"maximum":1e3},"any":{},` +
		`"a_rather_long_member_name":{"type":"string","minLength":2},` +
		`"e":{"enum":["short","a value longer than a word","caf\u00e9",12.5,-0.001]},` +
		`"m":{"type":"number","multipleOf":0.25,"exclusiveMaximum":1e20},` +
		`"l":{"type":"array","items":{"type":"object","properties":{"k":{"const":"v"}},"required":["k"]}}},` +
		`"required":["ab"]}`
	tests := []struct{ give, want string }{
		{`{"ab":1}`, ""},
		{" {\n\t\"ab\" :\r 1 , \"a\" : \"xyz\" ,\"l\":[ { \"k\" : \"v\" } ,{\"k\":\"v\"} ] } ", ""},
		{" { \"ab\" : 1 , \"l\" : [ { \"k\" : \"v\" } , { \"k\" : \"w\" } ] } ", "/l/1/k const"},
		{`{"ab":1,"a":"wxyz"}`, "/a maxLength"},
		{`{"ab":1,"a":"ééé"}`, ""},
		{`{"ab":1,"a":"éééé"}`, "/a maxLength"},
		{`{"ab":1,"a":"\u00e9\u00e9\u00e9"}`, ""},
		{`{"ab":1,"a_rather_long_member_name":"é"}`, "/a_rather_long_member_name minLength"},
		{`{"ab":1,"a_rather_long_member_name":"éé"}`, ""},
		{`{"ab":1,"a_rather_long_member_namf":"x"}`, "/a_rather_long_member_namf unevaluatedProperties"},
		{`{"ab":1,"a_rather":"x"}`, "/a_rather unevaluatedProperties"},
		{`{"ab":1,"abc":1}`, "/abc unevaluatedProperties"},
		{`{"a\u0062":1}`, ""},
		{`{"a":"x"}`, "/ab required"},
		{`{"ab":1,"e":"a value longer than a word"}`, ""},
		{`{"ab":1,"e":"a value longer than a wore"}`, "/e enum"},
		{`{"ab":1,"e":"caf\u00e9"}`, ""},
		{`{"ab":1,"e":"café"}`, ""},
		{`{"ab":1,"e":"shor"}`, "/e enum"},
		{`{"ab":1,"e":125e-1}`, ""},
		{`{"ab":1,"e":-1E-3}`, ""},
		{`{"ab":1,"e":0.0010}`, "/e enum"},
		{`{"ab":1000}`, ""},
		{`{"ab":10.00e2}`, ""},
		{`{"ab":1001}`, "/ab maximum"},
		{`{"ab":-5.0}`, ""},
		{`{"ab":-5.5}`, "/ab type"},
		{`{"ab":-6}`, "/ab minimum"},
		{`{"ab":1,"m":12345678901234567.75}`, ""},
		{`{"ab":1,"m":123456789012345678901.25}`, "/m exclusiveMaximum"},
		{`{"ab":1,"m":99999999999999999999.5}`, ""},
		{`{"ab":1,"m":0.125}`, "/m multipleOf"},
		{`{"ab":1,"m":1e-400}`, "/m multipleOf"},
		{`{"ab":1,"a":"xy"}`, ""}, // the string ends within the input's last word
		{`{"a":"xy","ab":1}`, ""},
		{`{"ab":1,"any":{"x":["]}",{"y":"{\"["}],"z":null},"a":"x"}`, ""},
		{`{"ab":1,"any":[1,"]",[], {"k" : -2.5e3}] ,"a":"wxyz"}`, "/a maxLength"},
		{`{"ab":1,"any":"}","a":"wxyz"}`, "/a maxLength"},
		{`{"ab":1,"any":-12.5e-3,"a":"wxyz"}`, "/a maxLength"},
	}
	if s, err := Compile([]byte(schema)); err != nil || !s.Fast() {
		t.Fatalf("the schema is not on the fast path (%v)", err)
	}
	for _, tt := range tests {
		f := check(t, schema, tt.give)
		got := ""
		if f != nil {
			got = f.Pointer + " " + f.Keyword
		}
		if got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.give, got, tt.want)
		}
	}
}

// oneOfChain is a schema of n links, each a oneOf of two references to the
// next: the library applies 2^n subschemas to property x.
func oneOfChain(n int) string {
	var defs []string
	for i := 0; i < n; i++ {
		defs = append(defs, `"a`+strconv.Itoa(i)+`":{"oneOf":[{"$ref":"#/$defs/a`+strconv.Itoa(i+1)+`"},{"$ref":"#/$defs/a`+strconv.Itoa(i+1)+`"}]}`)
	}
	defs = append(defs, `"a`+strconv.Itoa(n)+`":{"type":"integer"}`)
	return `{"type":"object","$defs":{` + strings.Join(defs, ",") + `},"properties":{"x":{"$ref":"#/$defs/a0"}}}`
}

// TestCostBoundKeepsRealSchemas: schemas as tools write them stay usable
// under the work bound, recursive ones included, and validate.
func TestCostBoundKeepsRealSchemas(t *testing.T) {
	tests := []struct{ name, schema, give, want string }{
		{"json value", `{"type":"object","$defs":{"v":{"anyOf":[{"type":["string","number","boolean","null"]},{"type":"array","items":{"$ref":"#/$defs/v"}},{"type":"object","additionalProperties":{"$ref":"#/$defs/v"}}]}},"properties":{"doc":{"$ref":"#/$defs/v"}}}`,
			`{"doc":{"a":[1,{"b":[true,null,"x"]}]}}`, ""},
		{"binary tree", `{"type":"object","$defs":{"t":{"type":"object","properties":{"v":{"type":"integer"},"l":{"$ref":"#/$defs/t"},"r":{"$ref":"#/$defs/t"}}}},"properties":{"tree":{"$ref":"#/$defs/t"}}}`,
			`{"tree":{"v":1,"l":{"v":2,"r":{"v":"x"}}}}`, "/tree/l/r/v type"},
		{"union of 40", unionOf(40), `{"u":{"kind":"k39","n":1}}`, ""},
		{"oneOf chain of 7", oneOfChain(7), `{"x":1}`, "/x oneOf"},
		{"2019-09 tuple of 12", `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","properties":{"t":{"type":"array","items":[` + strings.TrimSuffix(strings.Repeat(`{"type":"integer"},`, 12), ",") + `],"additionalItems":{"type":"string"}}}}`,
			`{"t":[1,2,3,4,5,6,7,8,9,10,11,12,13]}`, "/t/12 type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := check(t, tt.schema, tt.give)
			got := ""
			if f != nil {
				got = f.Pointer + " " + f.Keyword
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// unionOf is a discriminated union of n object variants (as zod writes).
func unionOf(n int) string {
	var vs []string
	for i := 0; i < n; i++ {
		vs = append(vs, `{"type":"object","properties":{"kind":{"const":"k`+strconv.Itoa(i)+`"},"n":{"type":"integer"}},"required":["kind"]}`)
	}
	return `{"type":"object","properties":{"u":{"anyOf":[` + strings.Join(vs, ",") + `]}}}`
}
