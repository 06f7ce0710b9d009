package extproc

import (
	"errors"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/mcp-extauthz/mcp-extauthz/internal/cursor"
	"github.com/mcp-extauthz/mcp-extauthz/internal/listfilter"
	"github.com/mcp-extauthz/mcp-extauthz/mcpparse"
)

// header returns the value of header k (lower case) in hm.
func header(hm *corev3.HeaderMap, k string) (string, bool) {
	for _, h := range hm.GetHeaders() {
		if strings.EqualFold(h.GetKey(), k) {
			if rv := h.GetRawValue(); len(rv) > 0 {
				return string(rv), true
			}
			return h.GetValue(), true
		}
	}
	return "", false
}

// requestHeaders answers the request headers of a route that still sends
// them (a config older than the one round trip: the shipped routes open
// their side streams at the response headers, or at the request body of a
// list with a sealed cursor). Everything the processor knows of the
// request comes from Check's metadata, the caller's claims included
// (decision.Metadata.Claims); the headers are not read.
func (st *stream) requestHeaders() *extprocv3.ProcessingResponse {
	if !st.haveMeta {
		return st.immediate(ReasonNoMetadata, "no authorization decision for this request")
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{}}}
}

func (st *stream) requestBody(b *extprocv3.HttpBody) (*extprocv3.ProcessingResponse, error) {
	st.sawRequestBody = true
	if !b.GetEndOfStream() {
		return nil, errors.New("request body not BUFFERED (a chunk without end_of_stream)")
	}
	pass := &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{}}}
	if st.s.cfg.Cursors == nil || !st.haveMeta {
		return pass, nil
	}
	body, changed, err := listfilter.ReplaceCursor(b.GetBody(), st.s.cfg.RequestLimits, func(method, c string) (string, error) {
		return st.s.cfg.Cursors.Open(st.binding(method), c)
	})
	if err != nil {
		// A body Check admitted reads with Check's limits; one that does
		// not (other limits, a config that sends every list's body) may
		// carry a sealed cursor the upstream must not get: refused.
		return st.immediate(ReasonInvalidCursor, "Invalid cursor"), nil
	}
	if !changed {
		return pass, nil
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{
		Response: &extprocv3.CommonResponse{
			HeaderMutation: &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{setHeader("content-length", strconv.Itoa(len(body)))}},
			BodyMutation:   &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: body}},
		},
	}}}, nil
}

func (st *stream) binding(method string) cursor.Binding {
	return cursor.Binding{Method: method, Server: st.server, Principal: st.owner, PolicyVersion: st.policyVersion}
}

func (st *stream) limits() mcpparse.Limits {
	return mcpparse.Limits{MaxBytes: st.s.cfg.MaxBody, MaxKeys: 1 << 20, MaxElements: 1 << 22, MaxStringLen: st.s.cfg.MaxBody}
}

// headerValues returns every value of header k (lower case) in hm, in
// order, appended to vs[:0] (room the caller holds, so one value costs no
// slice).
func headerValues(hm *corev3.HeaderMap, k string, vs []string) []string {
	vs = vs[:0]
	for _, h := range hm.GetHeaders() {
		if strings.EqualFold(h.GetKey(), k) {
			if rv := h.GetRawValue(); len(rv) > 0 {
				vs = append(vs, string(rv))
			} else {
				vs = append(vs, h.GetValue())
			}
		}
	}
	return vs
}
