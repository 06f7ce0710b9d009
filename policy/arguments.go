package policy

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Argument validation (issue 30): whether and against what the decider
// validates tools/call and prompts/get arguments, between the deny rules
// and the ask and allow rules. The policy says where; the decider
// (decision) validates. Format:
//
//	arguments:
//	  mode: validate              # off (default), validate or require; every server
//	  servers:
//	    payments:
//	      mode: require           # this server's tools and prompts
//	      tools:
//	        transfer: validate    # a mode, or a mapping:
//	        refund: {mode: require, schema_file: schemas/refund.json}
//	      prompts:
//	        summarize: {mode: validate, schema_file: schemas/summarize.json}
//
// A tool's or prompt's own entry wins over its server's mode, which wins
// over the top-level mode. validate checks the arguments when a schema is
// known (the schema_file, else the definition the response seam pinned)
// and lets a call with none through; require refuses a call with none;
// off checks nothing. A schema_file is a JSON Schema file, relative to
// the policy file's directory unless absolute; decision.CompilePolicy
// reads it. Without a schema_file the schema comes from what the seam
// observed (a tool's pinned inputSchema, a prompt's declared arguments),
// which it observes only with pinning on, so validate and require need
// pin_mode tofu or strict.

// ArgumentsMode is an `arguments` mode.
type ArgumentsMode int

const (
	// ArgumentsOff: no validation (the default).
	ArgumentsOff ArgumentsMode = iota
	// ArgumentsValidate: validate when a schema is known.
	ArgumentsValidate
	// ArgumentsRequire: validate; no known schema is a refusal.
	ArgumentsRequire
)

// String returns "off", "validate" or "require".
func (m ArgumentsMode) String() string {
	switch m {
	case ArgumentsValidate:
		return "validate"
	case ArgumentsRequire:
		return "require"
	}
	return "off"
}

// ArgumentsSetting is how one tool's or prompt's arguments are validated.
type ArgumentsSetting struct {
	Mode ArgumentsMode
	// SchemaFile is the policy's schema file for it, as written ("" for
	// none: the pinned definition's inputSchema is used).
	SchemaFile string
}

// argumentsPolicy is the compiled `arguments`.
type argumentsPolicy struct {
	mode    ArgumentsMode
	servers map[string]*serverArguments
	files   []string // every schema_file, once, in file order
}

type serverArguments struct {
	mode           ArgumentsMode
	hasMode        bool
	tools, prompts map[string]ArgumentsSetting
}

// Arguments returns the setting for server's tool (prompt false) or
// prompt (prompt true) called name.
func (p *Policy) Arguments(server string, prompt bool, name string) ArgumentsSetting {
	a := p.args
	if a == nil {
		return ArgumentsSetting{}
	}
	set := ArgumentsSetting{Mode: a.mode}
	if s := a.servers[server]; s != nil {
		if s.hasMode {
			set.Mode = s.mode
		}
		m := s.tools
		if prompt {
			m = s.prompts
		}
		if e, ok := m[name]; ok {
			set = e
		}
	}
	return set
}

// SchemaFiles returns every schema_file the policy names, once each, in
// file order. The caller must not modify the slice.
func (p *Policy) SchemaFiles() []string {
	if p.args == nil {
		return nil
	}
	return p.args.files
}

// ValidatesArguments reports whether some server, tool or prompt has an
// arguments mode other than off.
func (p *Policy) ValidatesArguments() bool {
	a := p.args
	if a == nil {
		return false
	}
	if a.mode != ArgumentsOff {
		return true
	}
	for _, s := range a.servers {
		if s.hasMode && s.mode != ArgumentsOff {
			return true
		}
		for _, m := range []map[string]ArgumentsSetting{s.tools, s.prompts} {
			for _, e := range m {
				if e.Mode != ArgumentsOff {
					return true
				}
			}
		}
	}
	return false
}

const errArgumentsOff = "arguments validate and require read the definitions the response seam observes with pinning on: set pin_mode: tofu or strict, or name a schema_file for each tool and prompt"

var (
	argumentsKeys       = []string{"mode", "servers"}
	argumentsServerKeys = []string{"mode", "tools", "prompts"}
	argumentsEntryKeys  = []string{"mode", "schema_file"}
)

// compileArguments reads `arguments`.
func (c *compiler) compileArguments(n *yaml.Node) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		c.addf(n, "", "arguments must be a mapping with keys %s", strings.Join(argumentsKeys, ", "))
		return
	}
	a := &argumentsPolicy{servers: map[string]*serverArguments{}}
	c.p.args = a
	for _, f := range c.fields(n, "", argumentsKeys) {
		switch f.key {
		case "mode":
			a.mode, _ = c.argumentsMode(f.val, "arguments.mode")
			if a.mode != ArgumentsOff {
				c.usePinning(f.val, "", errArgumentsOff)
			}
		case "servers":
			if f.val.Kind != yaml.MappingNode {
				c.addf(f.val, "", "arguments.servers must be a mapping of MCP server ids")
				continue
			}
			for _, sv := range c.fields(f.val, "", nil) {
				a.servers[sv.key] = c.compileServerArguments(sv.val, "arguments.servers."+sv.key, a)
			}
		}
	}
}

func (c *compiler) compileServerArguments(n *yaml.Node, where string, a *argumentsPolicy) *serverArguments {
	s := &serverArguments{tools: map[string]ArgumentsSetting{}, prompts: map[string]ArgumentsSetting{}}
	if n.Kind != yaml.MappingNode {
		c.addf(n, "", "%s must be a mapping with keys %s", where, strings.Join(argumentsServerKeys, ", "))
		return s
	}
	for _, f := range c.fields(n, "", argumentsServerKeys) {
		switch f.key {
		case "mode":
			s.mode, s.hasMode = c.argumentsMode(f.val, where+".mode")
			if s.mode != ArgumentsOff {
				c.usePinning(f.val, "", errArgumentsOff)
			}
		case "tools", "prompts":
			if f.val.Kind != yaml.MappingNode {
				c.addf(f.val, "", "%s.%s must be a mapping of names to a mode or {mode, schema_file}", where, f.key)
				continue
			}
			m := s.tools
			if f.key == "prompts" {
				m = s.prompts
			}
			for _, e := range c.fields(f.val, "", nil) {
				set, ok := c.argumentsEntry(e.val, where+"."+f.key+"."+e.key)
				if !ok {
					continue
				}
				if set.SchemaFile != "" && !slices.Contains(a.files, set.SchemaFile) {
					a.files = append(a.files, set.SchemaFile)
				}
				if set.Mode != ArgumentsOff && set.SchemaFile == "" {
					c.usePinning(e.val, "", errArgumentsOff)
				}
				m[e.key] = set
			}
		}
	}
	return s
}

// argumentsEntry reads a tool's or prompt's entry: a mode, or a mapping
// of mode (default validate) and schema_file.
func (c *compiler) argumentsEntry(n *yaml.Node, where string) (ArgumentsSetting, bool) {
	if n.Kind == yaml.ScalarNode {
		m, ok := c.argumentsMode(n, where)
		return ArgumentsSetting{Mode: m}, ok
	}
	if n.Kind != yaml.MappingNode {
		c.addf(n, "", "%s must be off, validate, require or a mapping with keys %s", where, strings.Join(argumentsEntryKeys, ", "))
		return ArgumentsSetting{}, false
	}
	set := ArgumentsSetting{Mode: ArgumentsValidate}
	ok := true
	for _, f := range c.fields(n, "", argumentsEntryKeys) {
		switch f.key {
		case "mode":
			var mok bool
			set.Mode, mok = c.argumentsMode(f.val, where+".mode")
			ok = ok && mok
		case "schema_file":
			s, sok := c.str(f.val, "", where+".schema_file")
			if sok && (s == "" || strings.ContainsAny(s, "\x00\n\r")) {
				c.addf(f.val, "", "%s.schema_file must name a file", where)
				sok = false
			}
			set.SchemaFile, ok = s, ok && sok
		}
	}
	return set, ok
}

// argumentsMode reads off, validate or require.
func (c *compiler) argumentsMode(n *yaml.Node, where string) (ArgumentsMode, bool) {
	s, ok := c.str(n, "", where)
	if !ok {
		return ArgumentsOff, false
	}
	switch s {
	case "off":
		return ArgumentsOff, true
	case "validate":
		return ArgumentsValidate, true
	case "require":
		return ArgumentsRequire, true
	}
	c.addf(n, "", "%s must be off, validate or require, not %q", where, s)
	return ArgumentsOff, false
}
