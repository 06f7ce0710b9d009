package extproc

import (
	"context"
	"errors"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/mcp-extauthz/mcp-extauthz/internal/bearer"
	"github.com/mcp-extauthz/mcp-extauthz/internal/cursor"
	"github.com/mcp-extauthz/mcp-extauthz/internal/listfilter"
	"github.com/mcp-extauthz/mcp-extauthz/internal/toolpin"
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

func (st *stream) requestHeaders(ctx context.Context, h *extprocv3.HttpHeaders) (*extprocv3.ProcessingResponse, error) {
	if !st.haveMeta {
		return st.immediate(ReasonNoMetadata, "no authorization decision for this request"), nil
	}
	st.httpMethod, _ = header(h.GetHeaders(), ":method")
	sid, _ := header(h.GetHeaders(), "mcp-session-id")
	path, _ := header(h.GetHeaders(), ":path") // forwarded on list routes
	rev, _ := header(h.GetHeaders(), "mcp-protocol-version")
	st.session = toolpin.Session(sid, path, rev)
	if st.protocol == "" {
		st.protocol, _ = header(h.GetHeaders(), "mcp-protocol-version")
	}
	if v := st.s.cfg.Verifier; v != nil {
		if auth, ok := header(h.GetHeaders(), "authorization"); ok {
			_, tok, ok := bearer.ParseAuthorization(auth)
			if !ok {
				return st.immediate(ReasonToken, "the bearer token cannot be read"), nil
			}
			p, err := v.Verify(ctx, tok)
			if err != nil {
				return st.immediate(ReasonToken, "the bearer token no longer verifies"), nil
			}
			if p.Subject != st.principal || st.issuer != "" && p.Issuer != st.issuer {
				return st.immediate(ReasonPrincipal, "the bearer token is not the decided principal's"), nil
			}
			st.claims = p.Claims
		} else if st.principal != "" {
			return st.immediate(ReasonPrincipal, "no bearer token for the decided principal"), nil
		}
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{}}}, nil
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
	body, changed, err := listfilter.ReplaceCursor(b.GetBody(), st.limits(), func(method, c string) (string, error) {
		return st.s.cfg.Cursors.Open(st.binding(method), c)
	})
	if err != nil {
		var fe *listfilter.Error
		if errors.As(err, &fe) && fe.Kind == "parse" {
			return pass, nil // Check decided this body; it is not a list request we can read
		}
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

// headerValues returns every value of header k (lower case) in hm, in order.
func headerValues(hm *corev3.HeaderMap, k string) []string {
	var vs []string
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
