package policy

import (
	"fmt"
	"path"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
)

// Limits on `when` expressions.
const (
	// maxExprCodePoints bounds the size of one expression.
	maxExprCodePoints = 4096
	// maxEvalCost bounds the runtime cost of one evaluation (cel-go cost
	// units, about one per operation or list element visited); past it the
	// evaluation fails, which fails closed.
	maxEvalCost = 100_000
	// maxRangeSize bounds lists.range(n).
	maxRangeSize = 1000
)

// celEnv is the environment every `when` expression is checked in: the
// standard library, the variables and inside() below, and the cel-go
// extension libraries listed in the package doc. Every function is bounded
// by maxEvalCost (regular expressions are RE2: linear in their input). A
// cel.Env is safe for concurrent use.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Lists(ext.ListsMaxRangeSize(maxRangeSize)),
		ext.Sets(),
		ext.Math(),
		ext.Encoders(),
		ext.Regex(),
		ext.Bindings(),
		ext.TwoVarComprehensions(),
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("claims", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("method", cel.StringType),
		cel.Variable("server", cel.StringType),
		cel.Variable("tool", cel.StringType),
		cel.Variable("uri", cel.StringType),
		cel.Variable("prompt", cel.StringType),
		cel.Variable("annotations", cel.MapType(cel.StringType, cel.BoolType)),
		cel.Variable("client", cel.StringType),
		cel.Function("inside",
			cel.Overload("inside_string_string",
				[]*cel.Type{cel.StringType, cel.StringType}, cel.BoolType,
				cel.BinaryBinding(insideBinding))),
		cel.CrossTypeNumericComparisons(true),
		cel.ParserExpressionSizeLimit(maxExprCodePoints),
	)
})

func insideBinding(p, dir ref.Val) ref.Val {
	ps, ok1 := p.(types.String)
	ds, ok2 := dir.(types.String)
	if !ok1 || !ok2 {
		return types.NewErr("inside: want (string, string)")
	}
	in, err := inside(string(ps), string(ds))
	if err != nil {
		return types.WrapErr(err)
	}
	return types.Bool(in)
}

type insideError string

func (e insideError) Error() string { return string(e) }

// Paths inside() refuses: it cannot say where a server resolves them.
const (
	errInsideNUL       = insideError("inside: NUL in path")
	errInsideBackslash = insideError(`inside: '\' in path (a Windows separator)`)
	errInsideDrive     = insideError("inside: drive letter or UNC prefix in path")
)

// inside reports whether p is dir or below it under POSIX path rules: p
// and dir are absolute ('/'-rooted), and path.Clean(p) is path.Clean(dir)
// or starts with it followed by '/'. A relative p or dir gives false, as
// does a p that '..' takes out of dir. Percent signs are literal: "%2e%2e"
// is a name, not "..".
//
// A path a Windows or POSIX server could resolve elsewhere is an error
// (which fails closed: a deny or ask rule's when matches, an allow rule's
// does not), in p or dir: a NUL (errInsideNUL), a '\'
// (errInsideBackslash: "/data/x\..\..\Windows" leaves /data on Windows),
// a drive-letter prefix "C:" or "/C:" or a leading "//" (errInsideDrive).
func inside(p, dir string) (bool, error) {
	for _, s := range [2]string{p, dir} {
		switch {
		case strings.IndexByte(s, 0) >= 0:
			return false, errInsideNUL
		case strings.IndexByte(s, '\\') >= 0:
			return false, errInsideBackslash
		case hasDrivePrefix(s) || strings.HasPrefix(s, "//"):
			return false, errInsideDrive
		}
	}
	if !strings.HasPrefix(p, "/") || !strings.HasPrefix(dir, "/") {
		return false, nil
	}
	cp, cd := path.Clean(p), path.Clean(dir)
	if cd == "/" {
		return true, nil
	}
	return cp == cd || strings.HasPrefix(cp, cd+"/"), nil
}

// hasDrivePrefix reports whether s starts with a drive letter and a colon,
// with or without a leading '/' ("C:", "c:/x", "/C:/x").
func hasDrivePrefix(s string) bool {
	s = strings.TrimPrefix(s, "/")
	return len(s) >= 2 && s[1] == ':' && ('a' <= s[0]|0x20 && s[0]|0x20 <= 'z')
}

var emptyMap = map[string]any{}

// activation resolves the `when` variables from a request.
type activation struct{ r *request }

func (a activation) ResolveName(name string) (any, bool) {
	in := a.r.in
	switch name {
	case "args":
		if in.Args == nil && in.LazyArgs != nil {
			if a.r.args == nil { // one per request: every rule shares its decoded members
				a.r.argsVal = lazyArgs{src: in.LazyArgs}
				a.r.args = &a.r.argsVal
			}
			return a.r.args, true
		}
		if in.Args == nil {
			return emptyMap, true
		}
		return in.Args, true
	case "claims":
		if in.Claims == nil {
			return emptyMap, true
		}
		return in.Claims, true
	case "method":
		return in.Method, true
	case "server":
		return in.Server, true
	case "tool":
		return in.Tool, true
	case "uri":
		if a.r.kind == kindResource {
			return a.r.name, true // the normal form rules matched
		}
		return in.URI, true
	case "prompt":
		return in.Prompt, true
	case "annotations":
		return a.r.annotationMap(), true
	case "client":
		return ClientOf(in.Claims), true
	}
	return nil, false
}

// ClientOf is the agent a token was issued to, as policy (CEL `client`),
// the decision log and the request digest name it: the token's client_id
// claim (RFC 9068 section 2.2, RFC 8693 section 4.3) when it is a
// non-empty string, else azp (OpenID Connect Core 1.0 section 2); "" when
// neither. A client identified by a Client ID Metadata Document has the
// document's HTTPS URL as its client_id (MCP 2025-11-25 authorization),
// returned as it is: no document is fetched here.
func ClientOf(claims map[string]any) string {
	if s, ok := claims["client_id"].(string); ok && s != "" {
		return s
	}
	if s, ok := claims["azp"].(string); ok {
		return s
	}
	return ""
}

func (activation) Parent() interpreter.Activation { return nil }

// evalWhen runs prg and reports whether it matched, failing closed: an
// error or a non-bool result is a match unless failMatch is false. err says
// why the expression failed (nil when it yielded a bool).
func evalWhen(prg cel.Program, r *request, failMatch bool) (matched bool, err error) {
	out, _, err := prg.Eval(activation{r})
	if err != nil {
		return failMatch, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return failMatch, fmt.Errorf("yields %s, not a bool", out.Type().TypeName())
	}
	return bool(b), nil
}
