package decision

import (
	"context"
	"strings"

	"github.com/mcp-extauthz/mcp-extauthz/internal/argschema"
	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

// InputSchemas gives the inputSchema of a tool definition the response
// seam observed, by its fingerprint (toolpin.Observations.InputSchema):
// found false when none is recorded. Errors mean the store cannot answer:
// the call is refused (state_store_unavailable).
type InputSchemas interface {
	InputSchema(ctx context.Context, fingerprint string) (schema []byte, found bool, err error)
}

// PromptSchemas gives the JSON Schema of a prompt's declared arguments as
// the response seam last observed them in the request's pin scope
// (toolpin.Observations.PromptArguments); found false when none.
type PromptSchemas interface {
	PromptArguments(ctx context.Context, p *policy.Policy, server, session, prompt string) (schema []byte, found bool, err error)
}

// revisionParamHeaders is the first MCP revision whose clients must mirror
// x-mcp-header parameters into Mcp-Param-* headers (SEP-2243).
const revisionParamHeaders = mcpmethod.Revision20260728

// arguments is the argument step of a tools/call or prompts/get the
// policy admitted or asked for (issue 30), after the deny rules and the
// pin step and before an approval or idempotency key is looked at: an
// approval is never consumed by a call the tool would refuse.
//
// For a tools/call whose schema is known (the policy's schema_file, else
// the inputSchema of the pinned definition, ToolFingerprint), the
// Mcp-Param-{Name} headers of the parameters it marks x-mcp-header must
// agree with the body (argschema.CheckHeaders; header_mismatch); unless
// the arguments mode is off, a parameter present in the body needs its
// header when the request's MCP-Protocol-Version is 2026-07-28 or later. Without a known schema no
// Mcp-Param-* header is compared: which parameters are marked is not
// known. Headers are not compared in batches (2026-07-28 has none).
//
// Then, unless the arguments mode (policy.Policy.Arguments) is off, the
// arguments are validated against the schema as the exact decimals the
// digest covers (argschema.Schema.Validate; arguments_invalid with
// ArgumentsPointer and ArgumentsKeyword). A schema that cannot be used
// (argschema.ErrUnusable) refuses the call; no known schema refuses it
// under require and lets it through under validate. It returns "" to go
// on.
func (d *Decider) arguments(ctx context.Context, lp *LoadedPolicy, el *Decision, m *mcpparse.Message, h Headers) Reason {
	if m.Kind != mcpparse.KindRequest {
		return ""
	}
	var prompt bool
	var name string
	switch m.Method {
	case mcpmethod.ToolsCall:
		name = m.Tool
	case mcpmethod.PromptsGet:
		prompt, name = true, m.Prompt
	default:
		return ""
	}
	set := lp.Policy.Arguments(el.Server, prompt, name)
	checkHeaders := !prompt && h != nil
	if set.Mode == policy.ArgumentsOff && !(checkHeaders && hasParamHeader(h)) {
		return ""
	}
	s, reason := d.schemaFor(ctx, lp, el, set, prompt)
	if reason != "" {
		if set.Mode == policy.ArgumentsOff {
			return "" // only headers to compare, and no schema to say which
		}
		return reason
	}
	if checkHeaders && s != nil && len(s.Headers) > 0 {
		// A missing header is looked for only when arguments are
		// validated here (with arguments off, only headers present are).
		expect := set.Mode != policy.ArgumentsOff && el.ProtocolVersion >= revisionParamHeaders
		if name := s.CheckHeaders(h, m.ExactArguments(), expect); name != "" {
			el.Detail = name + " disagrees with params.arguments (x-mcp-header)"
			return ReasonHeaderMismatch
		}
	}
	switch {
	case set.Mode == policy.ArgumentsOff:
		return ""
	case s == nil && set.Mode == policy.ArgumentsRequire:
		el.Detail = "arguments: require, and no schema is known for this " + map[bool]string{false: "tool", true: "prompt"}[prompt]
		return ReasonArgumentsInvalid
	case s == nil:
		return ""
	}
	if f := s.ValidateRaw(m.RawArguments); f != nil {
		el.ArgumentsPointer, el.ArgumentsKeyword = f.Pointer, f.Keyword
		el.Detail = f.Error()
		return ReasonArgumentsInvalid
	}
	return ""
}

// schemaFor returns the compiled schema of the call: the policy's
// schema_file, else for a tool the inputSchema of its pinned definition
// (compiled once per fingerprint); nil when none is known. The reason is
// state_store_unavailable when the store cannot answer, arguments_invalid
// when the schema is unusable.
func (d *Decider) schemaFor(ctx context.Context, lp *LoadedPolicy, el *Decision, set policy.ArgumentsSetting, prompt bool) (*argschema.Schema, Reason) {
	if set.SchemaFile != "" {
		s := lp.Schemas[set.SchemaFile]
		if s == nil { // CompilePolicy compiled every schema_file: not reached
			el.Detail = "schema_file " + set.SchemaFile + " not loaded"
			return nil, ReasonArgumentsInvalid
		}
		return s, ""
	}
	if prompt {
		return d.promptSchema(ctx, lp, el)
	}
	fp := el.ToolFingerprint
	if !toolpin.Valid(fp) { // not pinned, never listed, or ambiguous
		return nil, ""
	}
	if s, ok, err := d.schemas.Lookup(fp); ok {
		if err != nil {
			el.Detail = "the pinned definition's inputSchema: " + err.Error()
			return nil, ReasonArgumentsInvalid
		}
		return s, ""
	}
	if d.cfg.Schemas == nil {
		el.Detail = "arguments are validated but no definitions' schemas are kept here"
		return nil, ReasonStateStoreUnavailable
	}
	doc, found, err := d.cfg.Schemas.InputSchema(ctx, fp)
	switch {
	case err != nil:
		el.Detail = "tool definitions: " + err.Error()
		return nil, ReasonStateStoreUnavailable
	case !found:
		return nil, ""
	}
	s, err := d.schemas.Compile(fp, doc)
	if err != nil {
		el.Detail = "the pinned definition's inputSchema: " + err.Error()
		return nil, ReasonArgumentsInvalid
	}
	return s, ""
}

// promptSchema is schemaFor of a prompts/get without a schema_file: the
// declared arguments the seam observed (nil when none, or when no
// observations are read here), compiled once per schema (by its
// SHA-256).
func (d *Decider) promptSchema(ctx context.Context, lp *LoadedPolicy, el *Decision) (*argschema.Schema, Reason) {
	if d.cfg.Prompts == nil {
		return nil, ""
	}
	doc, found, err := d.cfg.Prompts.PromptArguments(ctx, lp.Policy, el.Server, el.session, el.Target)
	switch {
	case err != nil:
		el.Detail = "prompt definitions: " + err.Error()
		return nil, ReasonStateStoreUnavailable
	case !found:
		return nil, ""
	}
	s, err := d.schemas.Compile("prompt:"+mcpparse.Digest(doc), doc)
	if err != nil {
		el.Detail = "the prompt's declared arguments: " + err.Error()
		return nil, ReasonArgumentsInvalid
	}
	return s, ""
}

// hasParamHeader reports whether h holds an Mcp-Param-* header.
func hasParamHeader(h Headers) bool {
	for k := range h {
		if strings.HasPrefix(k, "mcp-param-") {
			return true
		}
	}
	return false
}
