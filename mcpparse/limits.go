package mcpparse

// Limits bounds the work one body may cause. Zero (or negative) fields take
// the defaults. Every limit is checked while scanning, so a body over a
// limit is rejected without reading or allocating the rest of it.
type Limits struct {
	// MaxBytes bounds the body length in bytes (default 1 MiB); longer is
	// ErrTooLarge, checked before anything else.
	MaxBytes int
	// MaxDepth bounds the nesting of arrays and objects (default 64 levels);
	// deeper is ErrTooDeep.
	MaxDepth int
	// MaxKeys bounds the object members in the whole body (default 10000);
	// more is ErrTooManyKeys.
	MaxKeys int
	// MaxElements bounds the JSON values (scalars, arrays, objects, array
	// elements included) in the whole body (default 100000); more is
	// ErrTooManyElements.
	MaxElements int
	// MaxStringLen bounds each decoded string, member names included, in
	// bytes (default 256 KiB); longer is ErrStringTooLong.
	MaxStringLen int
	// MaxBatch bounds the messages in one batch (default 100); more is
	// ErrTooManyElements.
	MaxBatch int
}

// Default limits; see Limits.
const (
	DefaultMaxBytes     = 1 << 20
	DefaultMaxDepth     = 64
	DefaultMaxKeys      = 10000
	DefaultMaxElements  = 100000
	DefaultMaxStringLen = 256 << 10
	DefaultMaxBatch     = 100
)

// DefaultLimits returns the limits used for zero fields: 1 MiB, depth 64,
// 10000 keys, 100000 values, 256 KiB strings, batches of 100.
func DefaultLimits() Limits {
	return Limits{
		MaxBytes:     DefaultMaxBytes,
		MaxDepth:     DefaultMaxDepth,
		MaxKeys:      DefaultMaxKeys,
		MaxElements:  DefaultMaxElements,
		MaxStringLen: DefaultMaxStringLen,
		MaxBatch:     DefaultMaxBatch,
	}
}

// withDefaults returns l with every non-positive field set to its default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxKeys <= 0 {
		l.MaxKeys = d.MaxKeys
	}
	if l.MaxElements <= 0 {
		l.MaxElements = d.MaxElements
	}
	if l.MaxStringLen <= 0 {
		l.MaxStringLen = d.MaxStringLen
	}
	if l.MaxBatch <= 0 {
		l.MaxBatch = d.MaxBatch
	}
	return l
}
