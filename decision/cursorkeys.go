package decision

import "github.com/mcp-extauthz/mcp-extauthz/internal/cursor"

// CursorSealer seals the response seam's list nextCursors and opens
// Check's params.cursor (cursor.Sealer, AES-256-GCM): one sealer, of one
// key file, serves both (Config.Cursors, extproc's Config.Cursors). It is
// immutable and safe for concurrent use.
type CursorSealer = cursor.Sealer

// ReadCursorKeys returns the keys of a cursor key file in its order, the
// sealing key first (cursor.ReadKeyFile: one base64 key of 32 bytes a
// line; blank lines and '#' lines skipped). It does not check their
// number (NewCursorSealer does). Errors name the line, never the key.
func ReadCursorKeys(b []byte) ([][]byte, error) { return cursor.ReadKeyFile(b) }

// NewCursorSealer returns a CursorSealer that seals with keys[0] and opens
// with any of keys (cursor.New). Errors: no keys, more than 4, a key
// that is not 32 bytes.
func NewCursorSealer(keys ...[]byte) (*CursorSealer, error) { return cursor.New(keys...) }
