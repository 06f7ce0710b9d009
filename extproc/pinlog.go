package extproc

import (
	"slices"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
)

// MaxLoggedToolBytes bounds the "tools" member of one "list filtered"
// line: the fingerprints of the tools a stream's tools/list answers
// carried, as listed (kept or removed), each entry costing its name's
// length plus 111 bytes (122 for a raw one). 128 KiB holds about 1,000
// tools of 20-character names; a 500-tool list of 8 to 10-character names
// (listfilter's BenchmarkFilter500 shape) makes a "tools" member of 59.6 KB
// and a line of 60 KB. The
// tools past the budget, in upstream order, are left out and counted in
// "tools_omitted" (extauthz pin says so).
const MaxLoggedToolBytes = 128 << 10

// toolEntryBytes is what one entry of "tools" costs beyond its name:
// {"name":"","fingerprint":"tooldef-v1:sha256:<64 hex>"} and a comma;
// rawEntryBytes what ,"raw":true adds. A name with characters JSON escapes
// costs more than its length: the budget is then overrun by those escapes.
const (
	toolEntryBytes = 111
	rawEntryBytes  = 11
)

// loggedTool is one entry of the "tools" member: a tool's name and the
// fingerprint the processor recorded for it (raw: toolpin.RawFingerprint,
// its definition is not strict JSON). Never its description, schema or
// any argument.
type loggedTool struct {
	name, fingerprint string
	raw               bool
}

// loggedTools are the fingerprints of one stream's tools/list answers.
type loggedTools struct {
	tools   []loggedTool // in order of arrival
	order   []int32      // indexes of tools to write, by name (fields)
	bytes   int
	omitted int
	// lately counts the lists whose tools are not logged again: the same
	// bytes in the same scope as a list this process observed (and logged
	// with its tools) within the observation TTL's quarter (toolpin
	// ListSeen). The line says "tools_unchanged": true.
	lately int
}

// add records d, the definition Observe is about to record (raw when it
// was fingerprinted by its bytes). O(1): repeats (a batch of two lists)
// are dropped when the line is written.
func (l *loggedTools) add(d toolpin.Definition, raw bool) {
	cost := len(d.Name) + toolEntryBytes
	if raw {
		cost += rawEntryBytes
	}
	if l.bytes+cost > MaxLoggedToolBytes {
		l.omitted++
		return
	}
	l.bytes += cost
	if l.tools == nil {
		l.tools = make([]loggedTool, 0, 64)
	}
	l.tools = append(l.tools, loggedTool{d.Name, d.Fingerprint, raw})
}

// MarshalLogArray implements zapcore.ArrayMarshaler: the entries, each
// by pointer (no allocation per entry).
func (l *loggedTools) MarshalLogArray(enc zapcore.ArrayEncoder) error {
	for _, i := range l.order {
		if err := enc.AppendObject(&l.tools[i]); err != nil {
			return err
		}
	}
	return nil
}

// MarshalLogObject implements zapcore.ObjectMarshaler.
func (t *loggedTool) MarshalLogObject(o zapcore.ObjectEncoder) error {
	o.AddString("name", t.name)
	o.AddString("fingerprint", t.fingerprint)
	if t.raw {
		o.AddBool("raw", true)
	}
	return nil
}

// fields are the log fields of l: "tools", sorted by name (a name seen with
// two fingerprints keeps their order), "tools_omitted" when some were left
// out, and "tools_unchanged" when a list was the same as one logged lately
// (its tools are not repeated: a log holds each distinct list at least once
// per process and quarter TTL); none when no tool was fingerprinted
// (pin_mode off).
func (l *loggedTools) fields() []zap.Field {
	if len(l.tools) == 0 && l.omitted == 0 {
		if l.lately > 0 {
			return []zap.Field{zap.Bool("tools_unchanged", true)}
		}
		return nil
	}
	// Indexes, not entries, are sorted: no pointer moves (no write
	// barriers), and equal names keep their order of arrival.
	order := make([]int32, len(l.tools))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := strings.Compare(l.tools[a].name, l.tools[b].name); c != 0 {
			return c
		}
		return int(a - b)
	})
	// Drop repeats of a name and fingerprint (a batch of two lists): a
	// name's entries are adjacent now, and rarely more than one.
	group := 0
	l.order = order[:0]
	for _, i := range order {
		t := &l.tools[i]
		if n := len(l.order); n > 0 && l.tools[l.order[n-1]].name != t.name {
			group = n
		}
		if !slices.ContainsFunc(l.order[group:], func(j int32) bool { return l.tools[j].fingerprint == t.fingerprint }) {
			l.order = append(l.order, i)
		}
	}
	f := []zap.Field{zap.Array("tools", l)}
	if l.omitted > 0 {
		f = append(f, zap.Int("tools_omitted", l.omitted))
	}
	if l.lately > 0 {
		f = append(f, zap.Bool("tools_unchanged", true))
	}
	return f
}
