package policy

import (
	"reflect"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// lazyArgs is the CEL map value of `args` for an Input with LazyArgs: a
// lookup by string key (args.x, args["x"], has(args.x), "x" in args)
// decodes that member only; every other operation decodes the whole map
// once and behaves exactly as the map[string]any of Input.Args would.
type lazyArgs struct {
	src  LazyArgs
	full traits.Mapper // every argument, once needed
	// memo holds the members already looked up: rules often read the same
	// few arguments, each decoded once per request.
	memo  [4]memoArg
	nmemo int
}

// memoArg is one looked-up member: its value, or found false.
type memoArg struct {
	key   string
	val   ref.Val
	found bool
}

var _ traits.Mapper = (*lazyArgs)(nil)

func (l *lazyArgs) all() traits.Mapper {
	if l.full == nil {
		m := l.src.Args()
		if m == nil {
			m = emptyMap
		}
		l.full = types.DefaultTypeAdapter.NativeToValue(m).(traits.Mapper)
	}
	return l.full
}

// Find returns the member key, decoding only it when key is a string.
func (l *lazyArgs) Find(key ref.Val) (ref.Val, bool) {
	s, ok := key.(types.String)
	if !ok || l.full != nil {
		return l.all().Find(key)
	}
	for _, m := range l.memo[:l.nmemo] {
		if m.key == string(s) {
			return m.val, m.found
		}
	}
	var val ref.Val
	v, found := l.src.Arg(string(s))
	if found {
		val = types.DefaultTypeAdapter.NativeToValue(v)
	}
	if l.nmemo < len(l.memo) {
		l.memo[l.nmemo] = memoArg{string(s), val, found}
		l.nmemo++
	}
	return val, found
}

// Get returns the member key, or the error a map gives for a missing key.
func (l *lazyArgs) Get(key ref.Val) ref.Val {
	v, found := l.Find(key)
	if !found {
		return types.ValOrErr(v, "no such key: %v", key)
	}
	return v
}

// Contains reports whether key is a member.
func (l *lazyArgs) Contains(key ref.Val) ref.Val {
	if _, ok := key.(types.String); !ok || l.full != nil {
		return l.all().Contains(key)
	}
	v, found := l.Find(key)
	if !found && v != nil { // an error or unknown
		return v
	}
	return types.Bool(found)
}

func (l *lazyArgs) ConvertToNative(t reflect.Type) (any, error) { return l.all().ConvertToNative(t) }
func (l *lazyArgs) ConvertToType(t ref.Type) ref.Val            { return l.all().ConvertToType(t) }
func (l *lazyArgs) Equal(other ref.Val) ref.Val                 { return l.all().Equal(other) }
func (l *lazyArgs) Type() ref.Type                              { return types.MapType }
func (l *lazyArgs) Value() any                                  { return l.all().Value() }
func (l *lazyArgs) Iterator() traits.Iterator                   { return l.all().Iterator() }
func (l *lazyArgs) Size() ref.Val                               { return l.all().Size() }
