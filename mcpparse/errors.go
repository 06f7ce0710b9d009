package mcpparse

import "fmt"

// ErrorKind classifies a ParseError. Its String form is a stable snake_case
// label, usable as a metric label or a denial reason.
type ErrorKind int

// The kinds of ParseError.
const (
	// ErrSyntax: the bytes are not JSON (RFC 8259 grammar), or are empty, or
	// start with a byte-order mark.
	ErrSyntax ErrorKind = iota + 1
	// ErrInvalidUTF8: invalid UTF-8 anywhere in the body, or a \u escape
	// that leaves a lone (unpaired) surrogate.
	ErrInvalidUTF8
	// ErrDuplicateKey: two members of one object with the same name after
	// escape decoding, at any depth.
	ErrDuplicateKey
	// ErrCaseVariantKey: two members of one object whose names are equal
	// under Unicode case folding or other languages' case mappings ("ß" and
	// "SS", "ı", "İ" and "i"), at any depth; or a member of a protocol
	// object (envelope, params, params.ref) that folds onto a protocol
	// member name without being it exactly (e.g. "Name", "PARAMS").
	ErrCaseVariantKey
	// ErrTrailingData: non-whitespace bytes after the top-level value.
	ErrTrailingData
	// ErrTooDeep: arrays and objects nested deeper than Limits.MaxDepth.
	ErrTooDeep
	// ErrTooLarge: the body is longer than Limits.MaxBytes.
	ErrTooLarge
	// ErrTooManyKeys: more object members in the body than Limits.MaxKeys.
	ErrTooManyKeys
	// ErrTooManyElements: more values in the body than Limits.MaxElements,
	// or more batch messages than Limits.MaxBatch.
	ErrTooManyElements
	// ErrStringTooLong: a decoded string longer than Limits.MaxStringLen bytes.
	ErrStringTooLong
	// ErrInvalidRequest: valid JSON that is not a valid JSON-RPC 2.0 / MCP
	// message (wrong jsonrpc, bad id, unknown envelope member, a non-
	// notification method without id, params not an object, …).
	ErrInvalidRequest
	// ErrInvalidParams: a known method whose params lack their target
	// (name, uri, ref) or carry arguments that are not an object.
	ErrInvalidParams
	// ErrNonCanonicalNumber: a number whose exact decimal value differs from
	// the value of its RFC 8785 serialization (it does not survive the trip
	// through an IEEE 754 double, e.g. 9007199254740993 or 1e400).
	ErrNonCanonicalNumber
	// ErrBatchEmpty: the body is the empty array `[]`.
	ErrBatchEmpty
	// ErrBatchNotSupported: the body is an array and batches are not allowed
	// (MCP 2025-06-18 and later).
	ErrBatchNotSupported
	// ErrReservedKey: a member named "__proto__" (after escape decoding)
	// anywhere in a message's params. JavaScript servers' decoders drop it
	// or treat it as the object's prototype (the TypeScript SDK's schema
	// parse does), so the digest would cover a member the server never
	// receives (cases-3 E02).
	ErrReservedKey
)

var kindNames = [...]string{
	ErrSyntax:             "syntax",
	ErrInvalidUTF8:        "invalid_utf8",
	ErrDuplicateKey:       "duplicate_key",
	ErrCaseVariantKey:     "case_variant_key",
	ErrTrailingData:       "trailing_data",
	ErrTooDeep:            "too_deep",
	ErrTooLarge:           "too_large",
	ErrTooManyKeys:        "too_many_keys",
	ErrTooManyElements:    "too_many_elements",
	ErrStringTooLong:      "string_too_long",
	ErrInvalidRequest:     "invalid_request",
	ErrInvalidParams:      "invalid_params",
	ErrNonCanonicalNumber: "non_canonical_number",
	ErrBatchEmpty:         "batch_empty",
	ErrBatchNotSupported:  "batch_not_supported",
	ErrReservedKey:        "reserved_key",
}

// String returns the snake_case name of k, e.g. "duplicate_key", or
// "ErrorKind(n)" for a value outside the defined kinds.
func (k ErrorKind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("ErrorKind(%d)", int(k))
}

// ParseError is the only error type Parse and Canonicalize return.
type ParseError struct {
	Kind ErrorKind
	// Offset is the byte offset in the input where the fault was found.
	Offset int64
	// Index is the batch element index the fault lies in, -1 when the body
	// is not an array.
	Index int
	// Msg is short human text. It may name a member (truncated) but never
	// quotes a value from the input.
	Msg string
}

// Error formats e as "mcpparse: <kind> at offset N[ in batch element I]: <msg>".
func (e *ParseError) Error() string {
	if e.Index >= 0 {
		return fmt.Sprintf("mcpparse: %s at offset %d in batch element %d: %s", e.Kind, e.Offset, e.Index, e.Msg)
	}
	return fmt.Sprintf("mcpparse: %s at offset %d: %s", e.Kind, e.Offset, e.Msg)
}

// quoteKey renders a member name for an error message: quoted, and cut to
// 32 bytes so that a long attacker-chosen name cannot fill a log line.
func quoteKey(k string) string {
	const max = 32
	if len(k) > max {
		cut := max
		for cut > 0 && k[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		return fmt.Sprintf("%q…", k[:cut])
	}
	return fmt.Sprintf("%q", k)
}
