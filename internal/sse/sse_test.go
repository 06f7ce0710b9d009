package sse

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// frame runs a fresh Framer over chunks and returns copies of its events.
func frame(t testing.TB, max int, chunks ...[]byte) ([]Event, error) {
	f := New(max)
	return frameOn(f, chunks...)
}

func frameOn(f *Framer, chunks ...[]byte) ([]Event, error) {
	var out []Event
	keep := func(e *Event) error {
		c := *e
		c.Raw = bytes.Clone(e.Raw)
		out = append(out, c)
		return nil
	}
	for _, c := range chunks {
		if err := f.Write(c, keep); err != nil {
			return out, err
		}
	}
	return out, f.Close(keep)
}

// view is what TestFramer checks of a View.
type view struct {
	name, id, data string
	disp           bool
}

func viewOf(v *View) view { return view{v.Name, v.ID, string(v.Data), v.Dispatched} }

func TestFramer(t *testing.T) {
	const moji = "\xc3\xaf\xc2\xbb\xc2\xbf" // U+00EF U+00BB U+00BF
	none := view{}
	tests := []struct {
		name      string
		give      string
		wantRaw   []string
		wantTS    []view
		wantGo    []view
		wantPy    []view
		ambiguous bool // of every event
	}{
		{name: "one event", give: "data: {}\n\n", wantRaw: []string{"data: {}\n\n"},
			wantTS: []view{{"", "", "{}", true}}, wantGo: []view{{"", "", "{}", true}}, wantPy: []view{{"", "", "{}", true}}},
		{name: "BOM stripped by TS, kept by Go and Py", give: "\xef\xbb\xbfdata: {}\n\n", wantRaw: []string{"\xef\xbb\xbfdata: {}\n\n"},
			wantTS: []view{{"", "", "{}", true}}, wantGo: []view{none}, wantPy: []view{none}},
		{name: "CRLF", give: "event: message\r\ndata: {}\r\n\r\ndata: 2\r\n\r\n",
			wantRaw: []string{"event: message\r\ndata: {}\r\n\r\n", "data: 2\r\n\r\n"},
			wantTS:  []view{{"message", "", "{}", true}, {"", "", "2", true}},
			wantGo:  []view{{"message", "", "{}", true}, {"", "", "2", true}},
			wantPy:  []view{{"message", "", "{}", true}, {"", "", "2", true}}},
		{name: "bare CR", give: "data: a\rdata: b\n\n", wantRaw: []string{"data: a\rdata: b\n\n"},
			wantTS: []view{{"", "", "a\nb", true}}, wantGo: []view{{"", "", "a\rdata: b", true}},
			wantPy: []view{{"", "", "a\nb", true}}, ambiguous: true},
		{name: "multi-line data", give: "data: {\"a\":\ndata:1}\n\n", wantRaw: []string{"data: {\"a\":\ndata:1}\n\n"},
			wantTS: []view{{"", "", "{\"a\":\n1}", true}}, wantGo: []view{{"", "", "{\"a\":\n1}", true}},
			wantPy: []view{{"", "", "{\"a\":\n1}", true}}},
		{name: "named event", give: "event: ping\ndata: x\n\n", wantRaw: []string{"event: ping\ndata: x\n\n"},
			wantTS: []view{{"ping", "", "x", true}}, wantGo: []view{{"ping", "", "x", true}}, wantPy: []view{{"ping", "", "x", true}}},
		{name: "comment and priming", give: ": keepalive\n\nid: 7\ndata:\n\n",
			wantRaw: []string{": keepalive\n\n", "id: 7\ndata:\n\n"},
			wantTS:  []view{none, {"", "7", "", true}}, wantGo: []view{none, {"", "7", "", true}},
			wantPy: []view{none, {"", "7", "", true}}},
		{name: "final event without blank line", give: "data: 1\n\ndata: 2\n",
			wantRaw: []string{"data: 1\n\n", "data: 2\n"},
			wantTS:  []view{{"", "", "1", true}, {"", "", "2", false}},
			wantGo:  []view{{"", "", "1", true}, {"", "", "2", true}},
			wantPy:  []view{{"", "", "1", true}, {"", "", "2", false}}},
		{name: "go trims, ts and py strip one space", give: "data:   {} \n\n", wantRaw: []string{"data:   {} \n\n"},
			wantTS: []view{{"", "", "  {} ", true}}, wantGo: []view{{"", "", "{}", true}}, wantPy: []view{{"", "", "  {} ", true}}},
		{name: "line without colon breaks go", give: "junk\ndata: 1\n\n", wantRaw: []string{"junk\ndata: 1\n\n"},
			wantTS: []view{{"", "", "1", true}}, wantGo: []view{none}, wantPy: []view{{"", "", "1", true}}},

		// The mojibake BOM: TS strips it when the first chunk it is fed
		// holds it whole, which the bytes do not decide.
		{name: "mojibake BOM at stream start", give: moji + "data: {}\n\n", wantRaw: []string{moji + "data: {}\n\n"},
			wantTS: []view{{"", "", "{}", true}}, wantGo: []view{none}, wantPy: []view{none}, ambiguous: true},
		{name: "mojibake BOM after a byte BOM", give: "\xef\xbb\xbf" + moji + "data: {}\n\n",
			wantRaw: []string{"\xef\xbb\xbf" + moji + "data: {}\n\n"},
			wantTS:  []view{{"", "", "{}", true}}, wantGo: []view{none}, wantPy: []view{none}, ambiguous: true},
		{name: "mojibake BOM not at start", give: "data: 1\n\n" + moji + "data: 2\n\n",
			wantRaw: []string{"data: 1\n\n", moji + "data: 2\n\n"},
			wantTS:  []view{{"", "", "1", true}, none}, wantGo: []view{{"", "", "1", true}, none},
			wantPy: []view{{"", "", "1", true}, none}},
		{name: "mojibake BOM before a byte BOM", give: moji + "\xef\xbb\xbfdata: {}\n\n",
			wantRaw: []string{moji + "\xef\xbb\xbfdata: {}\n\n"},
			wantTS:  []view{none}, wantGo: []view{none}, wantPy: []view{none}},
		{name: "mojibake BOM alone on the first line", give: moji + "\ndata: 1\n\n",
			wantRaw: []string{moji + "\n", "data: 1\n\n"},
			wantTS:  []view{none, {"", "", "1", true}}, wantGo: []view{none, {"", "", "1", true}},
			wantPy: []view{none, {"", "", "1", true}}},
		{name: "mojibake BOM opening a comment reads alike", give: moji + ": hi\ndata: 1\n\n",
			wantRaw: []string{moji + ": hi\ndata: 1\n\n"},
			wantTS:  []view{{"", "", "1", true}}, wantGo: []view{{"", "", "1", true}}, wantPy: []view{{"", "", "1", true}}},

		// Python before httpx-sse 0.4.2 also ends lines at VT, FF, FS, GS,
		// RS, NEL, U+2028 and U+2029.
		{name: "U+2028 inside data", give: "data: a\u2028data: b\n\n", wantRaw: []string{"data: a\u2028data: b\n\n"},
			wantTS: []view{{"", "", "a\u2028data: b", true}}, wantGo: []view{{"", "", "a\u2028data: b", true}},
			wantPy: []view{{"", "", "a\nb", true}}},
		{name: "VT inside data", give: "data: a\vb\n\n", wantRaw: []string{"data: a\vb\n\n"},
			wantTS: []view{{"", "", "a\vb", true}}, wantGo: []view{{"", "", "a\vb", true}}, wantPy: []view{{"", "", "a", true}}},
		{name: "NEL before an id", give: "data: x\u0085id: 5\n\n", wantRaw: []string{"data: x\u0085id: 5\n\n"},
			wantTS: []view{{"", "", "x\u0085id: 5", true}}, wantGo: []view{{"", "", "x\u0085id: 5", true}},
			wantPy: []view{{"", "5", "x", true}}},
		{name: "a Python blank line splits the event", give: "data: a\u2029\ndata: b\n\n",
			wantRaw: []string{"data: a\u2029\ndata: b\n\n"},
			wantTS:  []view{{"", "", "a\u2029\nb", true}}, wantGo: []view{{"", "", "a\nb", true}},
			wantPy: []view{{"", "", "a", true}}, ambiguous: true},
		{name: "FS, GS, RS form blank lines", give: "data: a\x1c\x1d\x1edata: b\n\n",
			wantRaw: []string{"data: a\x1c\x1d\x1edata: b\n\n"},
			wantTS:  []view{{"", "", "a\x1c\x1d\x1edata: b", true}}, wantGo: []view{{"", "", "a\x1c\x1d\x1edata: b", true}},
			wantPy: []view{{"", "", "a", true}}, ambiguous: true},
		{name: "a Python blank line with nothing pending", give: "\v\ndata: x\n\n", wantRaw: []string{"\v\ndata: x\n\n"},
			wantTS: []view{{"", "", "x", true}}, wantGo: []view{none}, wantPy: []view{{"", "", "x", true}}},
		{name: "a Python blank line ends the stream", give: "data: x\f\n", wantRaw: []string{"data: x\f\n"},
			wantTS: []view{{"", "", "x\f", false}}, wantGo: []view{{"", "", "x", true}}, wantPy: []view{{"", "", "x", true}}},
		{name: "Python keeps the last id", give: "id: 7\ndata: 1\n\ndata: 2\n\n\n",
			wantRaw: []string{"id: 7\ndata: 1\n\n", "data: 2\n\n", "\n"},
			wantTS:  []view{{"", "7", "1", true}, {"", "", "2", true}, none},
			wantGo:  []view{{"", "7", "1", true}, {"", "", "2", true}, none},
			wantPy:  []view{{"", "7", "1", true}, {"", "7", "2", true}, {"", "7", "", true}}},
		{name: "retry alone dispatches for Python", give: "retry: 10\n\nretry: 1x\n\n",
			wantRaw: []string{"retry: 10\n\n", "retry: 1x\n\n"},
			wantTS:  []view{none, none}, wantGo: []view{none, none}, wantPy: []view{{"", "", "", true}, none}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := frame(t, 0, []byte(tt.give))
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != len(tt.wantRaw) {
				t.Fatalf("%d events %v, want %d", len(evs), evs, len(tt.wantRaw))
			}
			for i, e := range evs {
				if string(e.Raw) != tt.wantRaw[i] {
					t.Errorf("event %d raw %q, want %q", i, e.Raw, tt.wantRaw[i])
				}
				if got := viewOf(&e.TS); got != tt.wantTS[i] {
					t.Errorf("event %d TS %+v, want %+v", i, got, tt.wantTS[i])
				}
				if got := viewOf(&e.Go); got != tt.wantGo[i] {
					t.Errorf("event %d Go %+v, want %+v", i, got, tt.wantGo[i])
				}
				if got := viewOf(&e.Py); got != tt.wantPy[i] {
					t.Errorf("event %d Py %+v, want %+v", i, got, tt.wantPy[i])
				}
				if e.Ambiguous != tt.ambiguous {
					t.Errorf("event %d ambiguous %v", i, e.Ambiguous)
				}
			}
		})
	}
}

// Py.Message follows the Python client: an event named "message" (the
// default) with data; an empty one is a priming event it skips.
func TestPyMessage(t *testing.T) {
	tests := []struct {
		give string
		want bool
	}{
		{"data: {}\n\n", true},
		{"event: message\ndata: {}\n\n", true},
		{"event: ping\ndata: {}\n\n", false},
		{"id: 1\ndata:\n\n", false},
		{"retry: 5\n\n", false},
		{"data: {}\n", false},
	}
	for _, tt := range tests {
		evs, err := frame(t, 0, []byte(tt.give))
		if err != nil || len(evs) != 1 {
			t.Fatalf("%q: %v %v", tt.give, evs, err)
		}
		if got := evs[0].Py.Message(); got != tt.want {
			t.Errorf("%q: Py.Message() = %v, want %v", tt.give, got, tt.want)
		}
	}
}

// A Python line end split across chunks frames and reads as it does whole.
func TestSeparatorSplitAcrossChunks(t *testing.T) {
	stream := []byte("data: a\u2028b\n\ndata: c\u2029\ndata: d\n\n\xc3\xaf\xc2\xbb\xc2\xbfdata: e\u0085\r\n\r\n")
	whole, err := frame(t, 0, stream)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(stream); i++ {
		for j := i; j < len(stream); j++ {
			evs, err := frame(t, 0, stream[:i], stream[i:j], stream[j:])
			if err != nil {
				t.Fatal(err)
			}
			if got, want := describeAll(evs), describeAll(whole); got != want {
				t.Fatalf("cut at %d, %d:\n%s\nwhole:\n%s", i, j, got, want)
			}
		}
	}
}

// A CR at a chunk's end waits for the next chunk: CRLF split across two
// chunks is one terminator, not a bare CR.
func TestCRLFSplitAcrossChunks(t *testing.T) {
	evs, err := frame(t, 0, []byte("data: 1\r"), []byte("\n\r"), []byte("\ndata: 2\r\n\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Ambiguous || evs[1].Ambiguous || string(evs[1].TS.Data) != "2" {
		t.Fatalf("events %v", evs)
	}
}

func TestBOMSplitAcrossChunks(t *testing.T) {
	evs, err := frame(t, 0, []byte("\xef"), []byte("\xbb"), []byte("\xbfdata: 1\n\n"))
	if err != nil || len(evs) != 1 || string(evs[0].TS.Data) != "1" {
		t.Fatalf("events %v, %v", evs, err)
	}
}

func TestEventTooLarge(t *testing.T) {
	big := "data: " + strings.Repeat("x", 100)
	if _, err := frame(t, 64, []byte(big)); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err %v, want ErrEventTooLarge", err)
	}
	// The default cap: 4 MiB + 1 byte of one event is refused, 4 MiB passes.
	ok := "data: " + strings.Repeat("x", DefaultMaxEvent-8) + "\n\n"
	if _, err := frame(t, 0, []byte(ok)); err != nil {
		t.Fatalf("4 MiB event: %v", err)
	}
	over := []byte("data: " + strings.Repeat("x", DefaultMaxEvent-5))
	if _, err := frame(t, 0, over); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("4 MiB + 1: %v", err)
	}
	// A whole event over the cap in one chunk is refused too.
	whole := []byte("data: " + strings.Repeat("x", DefaultMaxEvent-7) + "\n\n")
	if _, err := frame(t, 0, whole); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("whole 4 MiB + 1 event: %v", err)
	}
}

func TestAppendData(t *testing.T) {
	got := string(AppendData(nil, []byte("id: 1"), []byte("{\r\n\"a\":1}")))
	if got != "id: 1\ndata: {  \"a\":1}\n\n" {
		t.Errorf("AppendData = %q", got)
	}
}

// describe writes an event and its three views as the golden files have them.
func describe(b *strings.Builder, i int, e *Event) {
	fmt.Fprintf(b, "event %d raw=%s ambiguous=%v unterminated=%v\n", i, strconv.Quote(string(e.Raw)), e.Ambiguous, e.Unterminated)
	fmt.Fprintf(b, "  ts dispatched=%v message=%v name=%q id=%q data=%q\n", e.TS.Dispatched, e.TS.Message(), e.TS.Name, e.TS.ID, e.TS.Data)
	fmt.Fprintf(b, "  go dispatched=%v message=%v name=%q id=%q data=%q broken=%v\n", e.Go.Dispatched, e.Go.Message(), e.Go.Name, e.Go.ID, e.Go.Data, e.Go.Broken)
	fmt.Fprintf(b, "  py dispatched=%v message=%v name=%q id=%q data=%q\n", e.Py.Dispatched, e.Py.Message(), e.Py.Name, e.Py.ID, e.Py.Data)
}

func describeAll(evs []Event) string {
	var b strings.Builder
	for i := range evs {
		describe(&b, i, &evs[i])
	}
	return b.String()
}

// TestGolden frames every testdata/streams/*.sse file and compares the
// events and the three views with its .golden file.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/streams/*.sse")
	if len(files) == 0 {
		t.Fatal("no streams")
	}
	for _, file := range files {
		in, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := frame(t, 0, in)
		got := describeAll(evs) + fmt.Sprintf("err=%v\n", err)
		golden := strings.TrimSuffix(file, ".sse") + ".golden"
		if *update {
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s:\n%s\nwant\n%s", file, got, want)
		}
	}
}

// checkOracles frames stream in chunks cut at cuts (fresh Framer, a reused
// one, and a byte at a time) and checks the framer against the three SDK
// oracles and Ambiguous against its causes.
func checkOracles(t *testing.T, stream []byte, cuts []int, reused *Framer) {
	var chunks [][]byte
	prev := 0
	for _, c := range cuts {
		if c > prev && c < len(stream) {
			chunks = append(chunks, stream[prev:c])
			prev = c
		}
	}
	chunks = append(chunks, stream[prev:])
	evs, err := frame(t, 1<<20, chunks...)
	if err != nil {
		t.Skip() // only the cap (1 MiB) can fail: fuzz inputs are smaller
	}
	// Byte for byte: the events' bytes are the stream.
	var all []byte
	for _, e := range evs {
		all = append(all, e.Raw...)
	}
	if !bytes.Equal(all, stream) {
		t.Fatalf("events' bytes %q differ from the stream %q", all, stream)
	}
	// Chunking and reuse change nothing, views included.
	whole, _ := frame(t, 1<<20, stream)
	again, _ := frameOn(reused, chunks...)
	*reused = *New(1 << 20)
	others := [][]Event{whole, again}
	if len(stream) <= 512 {
		bytewise := make([][]byte, len(stream))
		for i := range stream {
			bytewise[i] = stream[i : i+1]
		}
		one, _ := frame(t, 1<<20, bytewise...)
		others = append(others, one)
	}
	want := describeAll(evs)
	for _, other := range others {
		if got := describeAll(other); got != want {
			t.Fatalf("chunked:\n%s\nwhole, reused or bytewise:\n%s", want, got)
		}
	}

	// TypeScript: the oracle's events are exactly the dispatched TS views,
	// when the first chunk holds the whole mojibake BOM.
	var ts []oracleEvent
	for _, e := range evs {
		if e.TS.Dispatched {
			ts = append(ts, oracleEvent{e.TS.ID, e.TS.Name, string(e.TS.Data)})
		}
	}
	tsWant := tsOracle(stream, true)
	if fmt.Sprint(ts) != fmt.Sprint(tsWant) {
		t.Fatalf("TS views %q, oracle %q", ts, tsWant)
	}
	mojiMatters := fmt.Sprint(tsWant) != fmt.Sprint(tsOracle(stream, false))

	// Python: each event the oracle dispatches at an event's end is its Py
	// view; one dispatched before an event's end makes the event
	// Ambiguous, and its Py view the first of them.
	py := pyOracle(stream)
	inner := make([]bool, len(evs))
	k, end := 0, 0
	for i := range evs {
		e := &evs[i]
		end += len(e.Raw)
		var in []pyEvent
		for k < len(py) && py[k].End <= end {
			in = append(in, py[k])
			k++
		}
		inner[i] = len(in) > 1 || len(in) == 1 && in[0].End < end
		if e.Py.Dispatched != (len(in) > 0) {
			t.Fatalf("event %d %q: Py dispatched=%v, oracle %v", i, e.Raw, e.Py.Dispatched, in)
		}
		if len(in) == 0 {
			continue
		}
		name := e.Py.Name
		if name == "" {
			name = "message"
		}
		got := pyEvent{oracleEvent{e.Py.ID, name, string(e.Py.Data)}, in[0].End, e.Py.Message()}
		if got != in[0] {
			t.Fatalf("event %d %q: Py %+v, oracle %+v", i, e.Raw, got, in[0])
		}
	}

	// Ambiguous exactly when one of its causes is there.
	for i, e := range evs {
		cause := hasBareCR(e.Raw) || inner[i] || i == 0 && mojiMatters
		if e.Ambiguous != cause {
			t.Fatalf("event %d %q: ambiguous=%v; bare CR %v, Python dispatch inside %v, mojibake BOM matters %v",
				i, e.Raw, e.Ambiguous, hasBareCR(e.Raw), inner[i], i == 0 && mojiMatters)
		}
	}

	// Go: without a bare CR the Go framing is the same; the oracle's events
	// are the dispatched Go views up to the first broken event.
	if hasBareCR(stream) {
		return
	}
	var goEvs []oracleEvent
	broken := false
	for _, e := range evs {
		if e.Go.Broken {
			broken = true
			break
		}
		if e.Go.Dispatched {
			goEvs = append(goEvs, oracleEvent{e.Go.ID, e.Go.Name, string(e.Go.Data)})
		}
	}
	goWant, wantBroken := goOracle(stream)
	if fmt.Sprint(goEvs) != fmt.Sprint(goWant) || broken != wantBroken {
		t.Fatalf("Go views %q broken=%v, oracle %q broken=%v", goEvs, broken, goWant, wantBroken)
	}
}

func hasBareCR(b []byte) bool {
	for i, c := range b {
		if c == '\r' && (i+1 == len(b) || b[i+1] != '\n') {
			return true
		}
	}
	return false
}

func FuzzFramer(f *testing.F) {
	files, _ := filepath.Glob("testdata/streams/*.sse")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		f.Add(b, uint8(3), uint8(7))
	}
	f.Add([]byte("data: 1\r\n\r\ndata: 2\r"), uint8(1), uint8(2))
	reused := New(1 << 20)
	f.Fuzz(func(t *testing.T, stream []byte, c1, c2 uint8) {
		checkOracles(t, stream, []int{int(c1), int(c1) + int(c2)}, reused)
	})
}

// BenchmarkFramer frames a stream of 200 progress notifications, and one
// event carrying a 64 KiB tools/list result whose descriptions hold
// non-ASCII text (bytes C2 and E2 start Python's multi-byte line ends), in
// 16 KiB chunks.
func BenchmarkFramer(b *testing.B) {
	var progress []byte
	for i := 0; i < 200; i++ {
		progress = append(progress, "event: message\nid: "+strconv.Itoa(i)+"\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n"...)
	}
	list := []byte("event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[")
	for i := 0; len(list) < 64<<10; i++ {
		if i > 0 {
			list = append(list, ',')
		}
		list = append(list, `{"name":"tool_`+strconv.Itoa(i)+`","description":"Returns the caf\u00e9\u2019s r\u00e9sum\u00e9 \u00a9 \u2014 a long description of what the tool does.","inputSchema":{"type":"object"}}`...)
	}
	list = append(list, "]}}\n\n"...)
	for _, bm := range []struct {
		name   string
		stream []byte
	}{{"progress", progress}, {"list-64KiB", list}} {
		b.Run(bm.name, func(b *testing.B) {
			stream := bm.stream
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			f := New(0)
			nop := func(*Event) error { return nil }
			for b.Loop() {
				for off := 0; off < len(stream); off += 16 << 10 {
					end := min(off+16<<10, len(stream))
					if err := f.Write(stream[off:end], nop); err != nil {
						b.Fatal(err)
					}
				}
				if err := f.Close(nop); err != nil {
					b.Fatal(err)
				}
				*f = *New(0)
			}
		})
	}
}
