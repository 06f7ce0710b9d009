package extauthz

import (
	"strings"
	"unicode/utf8"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/mcp-extauthz/mcp-extauthz/decision"
	"github.com/mcp-extauthz/mcp-extauthz/internal/byteset"
)

// RequestFromCheck converts Envoy's CheckRequest into a Request. Headers come
// from header_map when Envoy's encode_raw_headers is on (one entry per
// occurrence), else from headers (duplicates already joined with ","). The
// body comes from raw_body (pack_as_bytes: exact bytes) or else body.
func RequestFromCheck(req *authv3.CheckRequest) *decision.Request {
	// The Request and the header values of a usual request: one allocation.
	rb := new(struct {
		r    decision.Request
		vals [16]string
	})
	fillRequest(&rb.r, rb.vals[:0], req)
	return &rb.r
}

// fillRequest sets the zero *r to req as RequestFromCheck describes, the
// header values in vals' room when it has enough, else in an array of
// their number. It keeps no pointer to r (Check's Request stays on its
// stack).
func fillRequest(r *decision.Request, vals []string, req *authv3.CheckRequest) {
	attrs := req.GetAttributes()
	ext := attrs.GetContextExtensions()
	h := attrs.GetRequest().GetHttp()
	// Field by field: rb is zero, and a composite literal would also write
	// (through the write barrier, while the collector marks) every field
	// it leaves zero.
	r.ID, r.Method, r.Scheme, r.Host, r.Path = h.GetId(), h.GetMethod(), h.GetScheme(), h.GetHost(), h.GetPath()
	r.RouteServer, r.RouteAudience = ext[ContextExtensionServer], ext[ContextExtensionAudience]
	r.DestinationPrincipal = attrs.GetDestination().GetPrincipal()
	// Each name gets a one-value slice of one shared backing array (cap 1:
	// a second value for a name appends into a new array, never over the
	// next name's value).
	if hm := h.GetHeaderMap(); len(hm.GetHeaders()) > 0 {
		r.Headers = make(decision.Headers, len(hm.GetHeaders()))
		if n := len(hm.GetHeaders()); n > cap(vals) {
			vals = make([]string, n)
		} else {
			vals = vals[:n]
		}
		for i, hv := range hm.GetHeaders() {
			v := hv.GetValue()
			if len(hv.GetRawValue()) > 0 {
				v = string(hv.GetRawValue())
			}
			k, _ := lowerName(hv.GetKey())
			if old, ok := r.Headers[k]; ok {
				r.Headers[k] = append(old, v)
				continue
			}
			vals[i] = v
			r.Headers[k] = vals[i : i+1 : i+1]
		}
	} else {
		r.Headers = make(decision.Headers, len(h.GetHeaders()))
		if n := len(h.GetHeaders()); n > cap(vals) {
			vals = make([]string, 0, n)
		} else {
			vals = vals[:0]
		}
		// The map's names are distinct, so two can meet only when one of
		// them is lowered: until one is, no name needs looking up.
		lowered := false
		for k, v := range h.GetHeaders() {
			k, changed := lowerName(k)
			lowered = lowered || changed
			if lowered {
				if old, ok := r.Headers[k]; ok {
					r.Headers[k] = append(old, v)
					continue
				}
			}
			i := len(vals)
			vals = append(vals, v)
			r.Headers[k] = vals[i : i+1 : i+1]
		}
	}
	if raw := h.GetRawBody(); len(raw) > 0 {
		r.Body = raw
	} else if b := h.GetBody(); b != "" {
		r.Body = []byte(b)
	}
}

// lowerName returns name in lower case (strings.ToLower) and whether that
// changed it; a name already lower-case ASCII, as Envoy sends them, is
// returned as it is without the call.
func lowerName(name string) (string, bool) {
	if lowerASCII.All(name) {
		return name, false
	}
	l := strings.ToLower(name)
	return l, l != name
}

// lowerASCII holds the ASCII bytes strings.ToLower leaves as they are: all
// but 'A'..'Z'.
var lowerASCII = byteset.Of(func(c byte) bool { return c < utf8.RuneSelf && !(c >= 'A' && c <= 'Z') })
