package listfilter

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
	"github.com/mcp-extauthz/mcp-extauthz/policy"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func reference(t testing.TB) *policy.Policy {
	t.Helper()
	src, err := os.ReadFile("../../examples/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Compile("examples/policy.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// keepFor decides items with the policy for server "payments"; tasks are
// kept when listed in own.
func keepFor(p *policy.Policy, own ...string) func(Kind, string, []byte) (bool, error) {
	return func(k Kind, key string, _ []byte) (bool, error) {
		in := &policy.Input{Op: policy.OpRequest, Server: "payments"}
		switch k {
		case Tools:
			in.Method, in.Tool = "tools/call", key
		case Prompts:
			in.Method, in.Prompt = "prompts/get", key
		case Resources:
			in.Method, in.URI = "resources/read", key
		case ResourceTemplates:
			uri, ok := policy.ExpandTemplate(key)
			if !ok {
				return false, nil
			}
			in.Method, in.URI = "resources/read", uri
		case Tasks:
			for _, o := range own {
				if o == key {
					return true, nil
				}
			}
			return false, nil
		}
		return p.Visible(in).Visible, nil
	}
}

const toolsList = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search","inputSchema":{"type":"object"}}, {"name":"delete_repo","inputSchema":{"type":"object"}},
  {"name":"issue_refund","inputSchema":{"type":"object"}}],"nextCursor":"abc"}}`

func TestFilter(t *testing.T) {
	p := reference(t)
	tests := []struct {
		name     string
		give     string
		method   string
		want     string
		wantKind Kind
		removed  int
	}{
		{name: "tools", give: toolsList, method: "tools/list",
			want:     `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search","inputSchema":{"type":"object"}},{"name":"issue_refund","inputSchema":{"type":"object"}}],"nextCursor":"abc"}}`,
			wantKind: Tools, removed: 1},
		{name: "nothing removed: byte for byte", give: `{"jsonrpc":"2.0","id":1,"result":{"tools":[ {"name":"search"} ,{"name":"issue_refund"} ]}}`, method: "tools/list",
			want: `{"jsonrpc":"2.0","id":1,"result":{"tools":[ {"name":"search"} ,{"name":"issue_refund"} ]}}`, wantKind: Tools},
		{name: "page filtered to empty keeps nextCursor", give: `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"delete_repo"}],"nextCursor":"p2"}}`, method: "tools/list",
			want: `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"nextCursor":"p2"}}`, wantKind: Tools, removed: 1},
		{name: "prompts", give: `{"jsonrpc":"2.0","id":"a","result":{"prompts":[{"name":"summarize"},{"name":"draft_email"}]}}`, method: "prompts/list",
			want: `{"jsonrpc":"2.0","id":"a","result":{"prompts":[{"name":"summarize"}]}}`, wantKind: Prompts, removed: 1},
		{name: "resources", give: `{"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":"file:///reports/q1","name":"q1"},{"uri":"file:///secret/x","name":"x"}]}}`, method: "resources/list",
			want: `{"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":"file:///reports/q1","name":"q1"}]}}`, wantKind: Resources, removed: 1},
		{name: "templates", give: `{"jsonrpc":"2.0","id":1,"result":{"resourceTemplates":[{"uriTemplate":"file:///reports/{name}","name":"r"},{"uriTemplate":"file:///secret/{name}","name":"s"}]}}`, method: "resources/templates/list",
			want: `{"jsonrpc":"2.0","id":1,"result":{"resourceTemplates":[{"uriTemplate":"file:///reports/{name}","name":"r"}]}}`, wantKind: ResourceTemplates, removed: 1},
		{name: "BOM dropped", give: "\xef\xbb\xbf" + `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search"}]}}`, method: "tools/list",
			want: `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search"}]}}`, wantKind: Tools},
		{name: "foreign id filtered by shape", give: `{"jsonrpc":"2.0","id":99,"result":{"tools":[{"name":"delete_repo"},{"name":"search"}]}}`, method: "tools/list",
			want: `{"jsonrpc":"2.0","id":99,"result":{"tools":[{"name":"search"}]}}`, wantKind: Tools, removed: 1},
		{name: "list on a tools/call answer, by shape", give: `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"delete_repo"}]}}`, method: "tools/call",
			want: `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`, wantKind: Tools, removed: 1},
		{name: "batch element-wise", give: `[{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"delete_repo"}]}},{"jsonrpc":"2.0","id":2,"result":{"prompts":[{"name":"draft_email"},{"name":"summarize"}]}}]`,
			want: `[{"jsonrpc":"2.0","id":1,"result":{"tools":[]}},{"jsonrpc":"2.0","id":2,"result":{"prompts":[{"name":"summarize"}]}}]`, wantKind: Prompts, removed: 2},
		{name: "case variant member as the Go decoder binds it", give: `{"jsonrpc":"2.0","id":1,"result":{"Tools":[{"NAME":"delete_repo"}]}}`, method: "tools/list",
			want: `{"jsonrpc":"2.0","id":1,"result":{"Tools":[]}}`, wantKind: Tools, removed: 1},
		{name: "escaped names are decoded", give: `{"jsonrpc":"2.0","id":1,"result":{"t\u006fols":[{"name":"delete\u005frepo"}]}}`, method: "tools/list",
			want: `{"jsonrpc":"2.0","id":1,"result":{"t\u006fols":[]}}`, wantKind: Tools, removed: 1},
		{name: "error response passes", give: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad cursor"}}`, method: "tools/list",
			want: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad cursor"}}`},
		{name: "a notification passes", give: `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`, method: "tools/list",
			want: `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`},
		{name: "a call result passes", give: `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}`, method: "tools/call",
			want: `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}`},
		{name: "tasks of the caller", give: `{"jsonrpc":"2.0","id":1,"result":{"tasks":[{"taskId":"t1","status":"working"},{"taskId":"t2","status":"working"}]}}`, method: "tasks/list",
			want: `{"jsonrpc":"2.0","id":1,"result":{"tasks":[{"taskId":"t1","status":"working"}]}}`, wantKind: Tasks, removed: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Filter([]byte(tt.give), Options{ID: []byte(idOf(tt.give)), Method: tt.method, Keep: keepFor(p, "t1")})
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Body) != tt.want {
				t.Errorf("body\n%s\nwant\n%s", res.Body, tt.want)
			}
			if res.Kind != tt.wantKind || res.Removed != tt.removed {
				t.Errorf("kind %v removed %d, want %v %d", res.Kind, res.Removed, tt.wantKind, tt.removed)
			}
			if res.Changed != (tt.want != tt.give) {
				t.Errorf("Changed %v", res.Changed)
			}
		})
	}
}

func idOf(body string) string {
	var m struct{ ID json.RawMessage }
	_ = json.Unmarshal([]byte(body), &m)
	return string(m.ID)
}

func TestFilterRefuses(t *testing.T) {
	p := reference(t)
	tests := []struct {
		name, give, method, kind string
	}{
		{"both result and error", `{"jsonrpc":"2.0","id":1,"result":{"tools":[]},"error":{"code":1,"message":"x"}}`, "tools/list", "parse"},
		{"duplicate names", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search"},{"name":"search"}]}}`, "tools/list", "duplicate"},
		{"duplicate keys", `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"tools":[{"name":"delete_repo"}]}}`, "tools/list", "parse"},
		{"case-variant keys", `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"Tools":[{"name":"delete_repo"}]}}`, "tools/list", "parse"},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"\xff\"}]}}", "tools/list", "parse"},
		{"trailing data", `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}} {}`, "tools/list", "parse"},
		{"truncated", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search"}`, "tools/list", "parse"},
		{"own answer without its list", `{"jsonrpc":"2.0","id":1,"result":{"tool":[]}}`, "tools/list", "shape"},
		{"own answer with another list", `{"jsonrpc":"2.0","id":1,"result":{"prompts":[]}}`, "tools/list", "shape"},
		{"tools not an array", `{"jsonrpc":"2.0","id":1,"result":{"tools":{"name":"x"}}}`, "tools/list", "shape"},
		{"two lists", `{"jsonrpc":"2.0","id":7,"result":{"tools":[],"prompts":[]}}`, "", "shape"},
		{"item not an object", `{"jsonrpc":"2.0","id":1,"result":{"tools":["delete_repo"]}}`, "tools/list", "shape"},
		{"item without name", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"title":"x"}]}}`, "tools/list", "shape"},
		{"name not a string", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":1}]}}`, "tools/list", "shape"},
		{"result not an object", `{"jsonrpc":"2.0","id":1,"result":[]}`, "tools/list", "shape"},
		{"not JSON", `data: {}`, "tools/list", "parse"},
	}
	for _, tt := range tests {
		_, err := Filter([]byte(tt.give), Options{ID: []byte("1"), Method: tt.method, Keep: keepFor(p)})
		var fe *Error
		if !errors.As(err, &fe) || fe.Kind != tt.kind {
			t.Errorf("%s: err %v, want kind %q", tt.name, err, tt.kind)
		}
	}
	// Keep's and Cursor's errors fail the filter.
	boom := errors.New("store down")
	_, err := Filter([]byte(toolsList), Options{Keep: func(Kind, string, []byte) (bool, error) { return false, boom }})
	if !errors.Is(err, boom) {
		t.Errorf("keep error: %v", err)
	}
	_, err = Filter([]byte(toolsList), Options{Keep: keepFor(p), Cursor: func(Kind, string) (string, error) { return "", boom }})
	if !errors.Is(err, boom) {
		t.Errorf("cursor error: %v", err)
	}
}

func TestCursorAndCache(t *testing.T) {
	p := reference(t)
	seal := func(_ Kind, up string) (string, error) { return "sealed(" + up + ")", nil }
	tests := []struct {
		name, give, want string
		cache            *CacheHint
	}{
		{"cursor sealed", `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"nextCursor":"p\"2"}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[],"nextCursor":"sealed(p\"2)"}}`, nil},
		{"cache members added", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search"}]}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search"}],"cacheScope":"private","ttlMs":0}}`, &CacheHint{}},
		{"cache members replaced, ttl the smaller", `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"cacheScope":"public","ttlMs":60000}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[],"cacheScope":"private","ttlMs":5000}}`, &CacheHint{TTLms: 5000}},
		{"upstream ttl smaller", `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"ttlMs":10 }}`,
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[],"ttlMs":10 ,"cacheScope":"private"}}`, &CacheHint{TTLms: 5000}},
	}
	for _, tt := range tests {
		res, err := Filter([]byte(tt.give), Options{ID: []byte("1"), Method: "tools/list", Keep: keepFor(p), Cursor: seal, Cache: tt.cache})
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Body) != tt.want {
			t.Errorf("%s:\n%s\nwant\n%s", tt.name, res.Body, tt.want)
		}
	}
}

func TestTasksFound(t *testing.T) {
	res, err := Filter([]byte(`{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t-9","status":"working","ttl":60000,"createdAt":"x"}}}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 1 || res.Tasks[0] != (Task{"t-9", 60000}) || res.Changed {
		t.Fatalf("%+v", res)
	}
}

// TestGolden filters testdata/*.json (captured lists) with the reference
// policy and compares with testdata/*.golden.
func TestGolden(t *testing.T) {
	p := reference(t)
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) == 0 {
		t.Fatal("no inputs")
	}
	for _, file := range files {
		in, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Filter(in, Options{Limits: mcpparse.Limits{MaxBytes: 8 << 20}, Keep: keepFor(p)})
		got := fmt.Sprintf("err=%v lists=%d kind=%v kept=%d removed=%d\n%s\n", err, res.Lists, res.Kind, res.Kept, res.Removed, res.Body)
		golden := strings.TrimSuffix(file, ".json") + ".golden"
		if *update {
			_ = os.WriteFile(golden, []byte(got), 0o644)
			continue
		}
		want, _ := os.ReadFile(golden)
		if got != string(want) {
			t.Errorf("%s:\n%s\nwant\n%s", file, got, want)
		}
	}
}

// listSpans finds, with encoding/json's decoder (independently of the
// filter's walkers), the span of each list array in a body, results of
// batch elements included.
func listSpans(t *testing.T, body []byte) (spans [][2]int, keys []string) {
	var visitMsg func(raw json.RawMessage, base int)
	visitMsg = func(raw json.RawMessage, base int) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		tok, err := dec.Token()
		if err != nil || tok != json.Delim('{') {
			return
		}
		for dec.More() {
			k, _ := dec.Token()
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return
			}
			end := int(dec.InputOffset())
			if k != "result" || len(v) == 0 || v[0] != '{' {
				continue
			}
			rstart := base + end - len(v)
			rd := json.NewDecoder(bytes.NewReader(v))
			rd.Token()
			for rd.More() {
				name, _ := rd.Token()
				var lv json.RawMessage
				if err := rd.Decode(&lv); err != nil {
					return
				}
				lend := int(rd.InputOffset())
				for m, key := range map[string]string{"tools": "name", "prompts": "name", "resources": "uri", "resourceTemplates": "uritemplate", "tasks": "taskid"} {
					if s, ok := name.(string); ok && strings.EqualFold(s, m) && len(lv) > 0 && lv[0] == '[' {
						spans = append(spans, [2]int{rstart + lend - len(lv), rstart + lend})
						keys = append(keys, key)
					}
				}
			}
		}
	}
	trim := bytes.TrimLeft(body, " \t\r\n")
	base := len(body) - len(trim)
	if len(trim) > 0 && trim[0] == '[' {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.Token()
		for dec.More() {
			var el json.RawMessage
			if dec.Decode(&el) != nil {
				break
			}
			end := int(dec.InputOffset())
			visitMsg(el, end-len(el))
		}
		return spans, keys
	}
	visitMsg(body[base:], base)
	return spans, keys
}

// blank replaces each span's content by "[]".
func blank(b []byte, spans [][2]int) []byte {
	var out []byte
	at := 0
	for _, s := range spans {
		out = append(out, b[at:s[0]]...)
		out = append(out, "[]"...)
		at = s[1]
	}
	return append(out, b[at:]...)
}

func FuzzFilter(f *testing.F) {
	p := reference(f)
	keep := keepFor(p, "t1")
	files, _ := filepath.Glob("testdata/*.json")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		if len(b) < 4096 {
			f.Add(b)
		}
	}
	f.Add([]byte(toolsList))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"result":{"Tools":[{"name":"delete_repo"},{"name":"search"}]}},{"jsonrpc":"2.0","id":2,"result":{"tasks":[{"taskId":"t2"}]}}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
		res, err := Filter(body, Options{Keep: keep})
		if err != nil {
			return
		}
		// Never a changed byte outside the lists.
		inSpans, keys := listSpans(t, body)
		outSpans, _ := listSpans(t, res.Body)
		if len(inSpans) != len(outSpans) {
			t.Fatalf("%d lists in, %d out:\n%s\n%s", len(inSpans), len(outSpans), body, res.Body)
		}
		if !bytes.Equal(blank(body, inSpans), blank(res.Body, outSpans)) {
			t.Fatalf("bytes outside the lists changed:\n%s\n%s", body, res.Body)
		}
		// Inside: exactly the kept items, byte for byte, in order.
		for i := range inSpans {
			var in, out []json.RawMessage
			if json.Unmarshal(body[inSpans[i][0]:inSpans[i][1]], &in) != nil || json.Unmarshal(res.Body[outSpans[i][0]:outSpans[i][1]], &out) != nil {
				t.Fatalf("list %d does not decode", i)
			}
			var want []json.RawMessage
			for _, it := range in {
				var item map[string]any
				if json.Unmarshal(it, &item) != nil {
					t.Fatalf("item %s kept without being an object", it)
				}
				key := ""
				for k, v := range item {
					if s, ok := v.(string); ok && strings.EqualFold(k, keys[i]) {
						key = s
					}
				}
				ok := false
				for kind := Tools; kind <= Tasks; kind++ {
					if k, _ := keep(kind, key, it); k {
						ok = true
					}
				}
				if ok {
					want = append(want, it)
				}
			}
			if len(out) > len(want) {
				t.Fatalf("list %d: %d items out, at most %d may stay", i, len(out), len(want))
			}
			for j := range out {
				found := false
				for _, w := range want {
					if bytes.Equal(w, out[j]) {
						found = true
					}
				}
				if !found {
					t.Fatalf("item %s is not a kept input item", out[j])
				}
			}
		}
	})
}

// BenchmarkFilter500 filters a 500-tool list (> 64 KiB) with the
// reference policy.
func BenchmarkFilter500(b *testing.B) {
	p := reference(b)
	body := bigList(500)
	opt := Options{Limits: mcpparse.Limits{MaxBytes: 8 << 20}, ID: []byte("1"), Method: "tools/list", Keep: keepFor(p)}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Filter(body, opt); err != nil {
			b.Fatal(err)
		}
	}
}

func bigList(n int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"tools":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		name := fmt.Sprintf("tool_%d", i)
		switch i % 10 {
		case 0:
			name = fmt.Sprintf("delete_%d", i)
		case 1:
			name = "search"
			if i > 1 {
				name = fmt.Sprintf("search_%d", i)
			}
		}
		fmt.Fprintf(&sb, `{"name":%q,"description":"Tool number %d does something useful with its inputs and returns a result.","inputSchema":{"type":"object","properties":{"q":{"type":"string","description":"the query"},"limit":{"type":"integer","minimum":1,"maximum":100}},"required":["q"]}}`, name, i)
	}
	sb.WriteString(`],"nextCursor":"next"}}`)
	return []byte(sb.String())
}

// TestObserveList: ObserveList sees each list array's bytes before its
// items; seen skips Observe for that list only (the other lists of a batch
// are still observed item by item), and the answer is the same either way;
// its error fails the filter.
func TestObserveList(t *testing.T) {
	p := reference(t)
	a := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search"}, {"name":"delete_repo"}]}}`
	b := `{"jsonrpc":"2.0","id":2,"result":{"tools":[ {"name":"issue_refund"} ]}}`
	body := []byte("[" + a + "," + b + "]")
	var lists []string
	var observed []string
	opt := Options{Keep: keepFor(p),
		Observe: func(_ Kind, key string, item []byte) error {
			observed = append(observed, key+"="+string(item))
			return nil
		},
		ObserveList: func(k Kind, list []byte) (bool, error) {
			lists = append(lists, k.String()+" "+string(list))
			return bytes.Contains(list, []byte("delete_repo")), nil
		}}
	res, err := Filter(body, opt)
	if err != nil {
		t.Fatal(err)
	}
	wantLists := []string{`tools [{"name":"search"}, {"name":"delete_repo"}]`, `tools [ {"name":"issue_refund"} ]`}
	if fmt.Sprint(lists) != fmt.Sprint(wantLists) || fmt.Sprint(observed) != fmt.Sprint([]string{`issue_refund={"name":"issue_refund"}`}) {
		t.Errorf("lists %q, observed %q", lists, observed)
	}
	plain, err := Filter(body, Options{Keep: keepFor(p)})
	if err != nil || !bytes.Equal(plain.Body, res.Body) || plain.Kept != res.Kept || plain.Removed != res.Removed {
		t.Errorf("with ObserveList %s, without %s %v", res.Body, plain.Body, err)
	}
	opt.ObserveList = func(Kind, []byte) (bool, error) { return false, errors.New("store down") }
	if _, err := Filter(body, opt); err == nil {
		t.Error("an ObserveList error passed the list")
	}
}

// TestPrepare: per list, Observe sees every item, then Prepare the list's
// keys in order, then Keep each item in that order; the lists of a batch
// in turn. The answer is the one without Prepare; its error fails the
// filter.
func TestPrepare(t *testing.T) {
	p := reference(t)
	a := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search"}, {"name":"delete_repo"}, {"name":"s\u0065arch_2"}]}}`
	b := `{"jsonrpc":"2.0","id":2,"result":{"prompts":[{"name":"summarize"}]}}`
	body := []byte("[" + a + "," + b + "]")
	var calls []string
	keep := keepFor(p)
	opt := Options{
		Observe: func(k Kind, key string, _ []byte) error {
			calls = append(calls, "observe "+key)
			return nil
		},
		Prepare: func(k Kind, keys []string) error {
			calls = append(calls, "prepare "+k.String()+" "+strings.Join(keys, ","))
			return nil
		},
		Keep: func(k Kind, key string, item []byte) (bool, error) {
			calls = append(calls, "keep "+key)
			return keep(k, key, item)
		},
	}
	res, err := Filter(body, opt)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"observe search", "observe delete_repo", "observe search_2", "prepare tools search,delete_repo,search_2",
		"keep search", "keep delete_repo", "keep search_2",
		"observe summarize", "prepare prompts summarize", "keep summarize"}
	if !slices.Equal(calls, want) {
		t.Errorf("calls\n%q, want\n%q", calls, want)
	}
	plain, err := Filter(body, Options{Keep: keep})
	if err != nil || !bytes.Equal(plain.Body, res.Body) || plain.Kept != res.Kept || plain.Removed != res.Removed {
		t.Errorf("with Prepare %s, without %s %v", res.Body, plain.Body, err)
	}
	opt.Prepare = func(Kind, []string) error { return errors.New("store down") }
	calls = calls[:0]
	if _, err := Filter(body, opt); err == nil {
		t.Error("a Prepare error passed the list")
	} else if e := (*Error)(nil); !errors.As(err, &e) || e.Kind != "keep" {
		t.Errorf("Prepare error: %v, want Kind keep", err)
	}
	for _, c := range calls {
		if strings.HasPrefix(c, "keep ") {
			t.Errorf("Keep ran after Prepare failed: %q", calls)
		}
	}
}
