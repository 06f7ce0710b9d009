// Package argschema validates the arguments of a tools/call (or a
// prompts/get) against the JSON Schema the tool declared as its
// inputSchema (MCP 2025-06-18 through 2026-07-28, schema "Tool"), at the
// boundary, before the policy's ask and allow rules (issue 30).
//
// The validator is github.com/santhosh-tekuri/jsonschema/v6: it passes the
// JSON-Schema-Test-Suite for draft-04 through 2020-12 (Bowtie), chooses the
// draft by $schema (2020-12, MCP's default, when absent), asserts formats
// on request, uses Go's RE2 regexps (linear time: no pattern can make a
// call cost more than its length), detects $ref cycles, and compares every
// number as a big.Rat from its json.Number literal: an argument is checked
// as the exact decimal the arguments digest covers, never after a float64
// round trip. google/jsonschema-go, which the Go MCP SDK uses, decodes
// numbers to float64 (2^53 + 1 compares as 2^53) and asserts no formats;
// it is the independent oracle of this package's fuzz test only.
//
// What Compile does beyond the library:
//   - strict input: the schema is read with mcpparse.Canonicalize (no
//     duplicate or case-variant member names, no lossy numbers), at most
//     MaxSchemaBytes bytes and MaxSchemaDepth levels deep;
//   - $ref stays inside the schema: a reference to any other document
//     (http, file, a relative URI against $id) fails to compile; only the
//     draft metaschemas, embedded in the library, load;
//   - unknown members are refused: every schema that describes the value
//     at an instance location (the root, each properties, patternProperties,
//     additionalProperties, items, prefixItems, contains… member), states
//     some assertion, and says neither additionalProperties nor
//     unevaluatedProperties gets unevaluatedProperties: false (2019-09 and
//     2020-12, which sees through allOf, anyOf, oneOf, $ref and if/then/else)
//     or, in draft-07 and earlier, additionalProperties: false; a draft-07
//     object schema that composes (allOf, anyOf, oneOf, $ref, if) without
//     saying additionalProperties cannot be closed that way and fails to
//     compile. A schema that says additionalProperties (true, or a schema)
//     or unevaluatedProperties permits what it says;
//   - formats are asserted (date-time, email, uuid, ipv4, uri, …: the
//     library's list); unknown formats are annotations;
//   - x-mcp-header annotations are read into Headers (headers.go);
//   - the work of a validation is bounded (cost.go): a schema that may
//     apply more than MaxEvaluations subschemas to one value (nested
//     oneOf/anyOf/allOf through $defs multiply) fails to compile, and so
//     does one with $dynamicRef or $recursiveRef.
//
// Not done: contentEncoding/contentMediaType assertions, and no
// vocabulary but the drafts' own.
package argschema

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// Bounds of a schema Compile accepts.
const (
	MaxSchemaBytes = 256 << 10
	MaxSchemaDepth = 32
)

// schemaURL is where a compiled schema lives for the library: a URN no
// loader resolves, so the only references that load are the schema's own
// fragments (and the embedded metaschemas).
const schemaURL = "urn:mcp-extauthz:input-schema"

// Schema is one compiled inputSchema. It is immutable and safe for
// concurrent use.
type Schema struct {
	s    *jsonschema.Schema
	fast *fastNode // the fast path (fast.go); nil when the schema is outside it
	// Headers are the x-mcp-header parameters the schema declares validly
	// (headers.go); nil when none.
	Headers []HeaderParam
}

// Failure is why arguments are invalid: the JSON Pointer (RFC 6901) of the
// failing value in the arguments object ("" for the object itself) and the
// JSON Schema keyword that refused it ("type", "required", "enum",
// "unevaluatedProperties", …). It never holds the value.
type Failure struct {
	Pointer string
	Keyword string
}

func (f *Failure) Error() string {
	return fmt.Sprintf("arguments invalid at %q: %s", f.Pointer, f.Keyword)
}

// ErrUnusable wraps every Compile error: the schema cannot be used to
// decide (too large, too deep, not strict JSON, not a schema, a $ref
// outside it, an object it cannot close).
var ErrUnusable = errors.New("argschema: schema unusable")

// Compile compiles doc, the bytes of an inputSchema (a JSON object or a
// boolean). Errors wrap ErrUnusable.
func Compile(doc []byte) (*Schema, error) {
	if len(doc) > MaxSchemaBytes {
		return nil, fmt.Errorf("%w: %d bytes, over %d", ErrUnusable, len(doc), MaxSchemaBytes)
	}
	canon, err := mcpparse.Canonicalize(doc, mcpparse.Limits{MaxBytes: MaxSchemaBytes, MaxDepth: MaxSchemaDepth})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnusable, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(canon))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnusable, err)
	}
	modern := true
	if m, ok := v.(map[string]any); ok {
		if s, ok := m["$schema"].(string); ok {
			modern = !legacyDraft(s)
		}
	}
	if err := closeObjects(v, modern, true); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnusable, err)
	}
	heads, _ := headerParams(v) // invalid annotations are enforced too (headerParams)
	fast, _ := compileFast(v, true, !modern)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnusable, err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnusable, err)
	}
	if err := checkCost(s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnusable, err)
	}
	return &Schema{s: s, fast: fast, Headers: heads}, nil
}

// legacyDraft reports whether $schema names draft-07 or earlier, which
// have no unevaluatedProperties.
func legacyDraft(s string) bool {
	for _, d := range []string{"draft-07", "draft-06", "draft-04", "draft-03"} {
		if strings.Contains(s, "/"+d+"/") || strings.HasSuffix(s, "/"+d+"/schema") || strings.HasSuffix(s, "/"+d+"/schema#") {
			return true
		}
	}
	return false
}

// refuseLoader loads nothing: a $ref outside the schema fails to compile.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, errors.New("$ref outside the schema is not followed")
}

// ValidateRaw checks raw, a params.arguments value mcpparse.Parse
// accepted (nil: absent, the empty object), against s: on the fast path
// when the schema allows (fast.go), else decoded with numbers as
// json.Number (mcpparse.DecodeExact) by the library. The result is
// Validate's.
func (s *Schema) ValidateRaw(raw []byte) *Failure {
	if s.fast != nil {
		if f, ok := validateFast(s.fast, raw); ok {
			return f
		}
	}
	if raw == nil {
		return s.Validate(map[string]any{})
	}
	return s.Validate(mcpparse.DecodeExact(raw))
}

// Fast reports whether s validates on the fast path.
func (s *Schema) Fast() bool { return s.fast != nil }

// Validate checks args, decoded with numbers as json.Number
// (mcpparse.Message.ExactArguments), against s. It returns nil when they
// are valid, else a *Failure naming the first failing value and keyword.
func (s *Schema) Validate(args any) *Failure {
	err := s.s.Validate(args)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &Failure{Keyword: "schema"}
	}
	// The first cause chain down to its leaf: the leaf locates the value;
	// its keyword, or for a false schema the keyword that applied it
	// (unevaluatedProperties, items, …: from its schema location).
	leaf := ve
	for len(leaf.Causes) > 0 {
		leaf = leaf.Causes[0]
	}
	f := &Failure{Pointer: pointer(leaf.InstanceLocation), Keyword: "schema"}
	switch k := leaf.ErrorKind.(type) {
	case *kind.FalseSchema:
		f.Keyword = applyingKeyword(leaf.SchemaURL)
	case *kind.AdditionalProperties:
		f.Keyword = "additionalProperties"
		if len(k.Properties) > 0 {
			f.Pointer += pointer(k.Properties[:1])
		}
	case *kind.Required:
		f.Keyword = "required"
		if len(k.Missing) > 0 {
			f.Pointer += pointer(k.Missing[:1])
		}
	default:
		if kw := leaf.ErrorKind.KeywordPath(); len(kw) > 0 {
			f.Keyword = kw[len(kw)-1]
		} else {
			f.Keyword = applyingKeyword(leaf.SchemaURL)
		}
	}
	return f
}

// applyingKeyword is the keyword whose subschema is at the schema location
// u (a URL whose fragment is a JSON Pointer): "unevaluatedProperties" for
// …#/unevaluatedProperties, "prefixItems" for …#/prefixItems/1,
// "properties" for …#/properties/a; "schema" for the root.
func applyingKeyword(u string) string {
	_, frag, _ := strings.Cut(u, "#")
	toks := strings.Split(strings.TrimPrefix(frag, "/"), "/")
	for i := len(toks) - 1; i >= 0; i-- {
		t := toks[i]
		if t == "" || t[0] >= '0' && t[0] <= '9' {
			continue
		}
		if i > 0 {
			switch toks[i-1] {
			case "properties", "patternProperties", "dependentSchemas", "$defs", "definitions":
				return toks[i-1]
			}
		}
		return t
	}
	return "schema"
}

// pointer writes tokens as an RFC 6901 JSON Pointer.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}

// Keywords that apply subschemas to the same instance location.
var inPlaceMap = []string{"dependentSchemas", "dependencies"}
var inPlaceList = []string{"allOf", "anyOf", "oneOf"}
var inPlaceOne = []string{"not", "if", "then", "else"}

// Keywords that apply subschemas to other instance locations.
var locationMap = []string{"properties", "patternProperties"}
var locationOne = []string{"additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems", "contains"}

// annotationOnly are keywords that assert nothing: a schema made of these
// alone (or of nothing: {}) permits any value and is left open.
var annotationOnly = map[string]bool{"title": true, "description": true, "default": true, "examples": true,
	"$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true, "format": true,
	"$schema": true, "$id": true, "$anchor": true, "$dynamicAnchor": true, "$defs": true, "definitions": true,
	"contentEncoding": true, "contentMediaType": true}

// composing are the keywords draft-07 cannot close with
// additionalProperties (it does not see into them).
var composing = []string{"allOf", "anyOf", "oneOf", "if", "dependencies"}

// closeObjects adds unevaluatedProperties: false (modern: 2019-09 and
// 2020-12) or additionalProperties: false (draft-07 and earlier) to every
// schema of v that describes an instance location (loc), asserts
// something, and leaves both unsaid. A $defs schema is closed where it is
// referenced (unevaluatedProperties sees through $ref); in draft-07, where
// $ref replaces the schema holding it, definitions are closed themselves
// and a $ref schema is left as it is.
func closeObjects(v any, modern, loc bool) error {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	_, ref := m["$ref"]
	if loc && !(ref && !modern) {
		_, ap := m["additionalProperties"]
		_, up := m["unevaluatedProperties"]
		asserts := false
		for k := range m {
			if !annotationOnly[k] && !strings.HasPrefix(k, "x-") {
				asserts = true
			}
		}
		_, cst := m["const"]
		_, enm := m["enum"]
		switch {
		case ap || up || !asserts || cst || enm: // const and enum say the whole value
		case modern:
			m["unevaluatedProperties"] = false
		default:
			for _, k := range composing {
				if _, ok := m[k]; ok {
					return fmt.Errorf("a draft-07 schema composes with %s and does not say additionalProperties: its unknown members cannot be refused", k)
				}
			}
			m["additionalProperties"] = false
		}
	}
	each := func(x any, loc bool) error { return closeObjects(x, modern, loc) }
	for _, k := range []string{"$defs", "definitions"} {
		if sub, ok := m[k].(map[string]any); ok {
			for _, s := range sub {
				if err := each(s, !modern); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range inPlaceMap {
		if sub, ok := m[k].(map[string]any); ok {
			for _, s := range sub {
				if err := each(s, false); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range inPlaceList {
		if l, ok := m[k].([]any); ok {
			for _, s := range l {
				if err := each(s, false); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range inPlaceOne {
		if err := each(m[k], false); err != nil {
			return err
		}
	}
	for _, k := range locationMap {
		if sub, ok := m[k].(map[string]any); ok {
			for _, s := range sub {
				if err := each(s, true); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range locationOne {
		if err := each(m[k], true); err != nil {
			return err
		}
	}
	switch it := m["items"].(type) {
	case []any: // draft-07's tuple form
		for _, s := range it {
			if err := each(s, true); err != nil {
				return err
			}
		}
	default:
		if err := each(it, true); err != nil {
			return err
		}
	}
	if l, ok := m["prefixItems"].([]any); ok {
		for _, s := range l {
			if err := each(s, true); err != nil {
				return err
			}
		}
	}
	return nil
}
