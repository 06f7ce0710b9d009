package envoy

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/mcp-extauthz/mcp-extauthz/internal/mcpmethod"
)

// The response seam (Envoy's external processing filter) as the shipped
// configs set it up.
const (
	// ExtProcFilter is the external processing filter's name.
	ExtProcFilter = "envoy.filters.http.ext_proc"
	// ExtProcCluster is the cluster of the processor's side streams: the
	// service's gRPC port (envoy.service.ext_proc.v3.ExternalProcessor next
	// to Authorization/Check), in a cluster of its own so that long-lived
	// SSE side streams do not use up the Checks' circuit breakers.
	ExtProcCluster = "extauthz_proc"
	// ExtAuthzNamespace is the dynamic-metadata namespace ext_authz writes
	// Check's metadata under (ext_authz.cc Filter::onComplete); the
	// processor reads the decision from it.
	ExtAuthzNamespace = "envoy.filters.http.ext_authz"
	// ReceiptNamespace is where the processor writes its receipt
	// (metadata_options.receiving_namespaces), for the access log.
	ReceiptNamespace = "mcp.receipt"
	// MethodHeader is the request header Check sets on every allowed
	// request to the JSON-RPC method it decided ("batch", "GET", "DELETE",
	// "response" for the pseudo-methods), removing a client's own copy;
	// the response seam's routes match on it after ext_authz re-picks the
	// route (clear_route_cache).
	MethodHeader = "x-mcp-method"
	// CursorHeader is set by Check to "sealed" on an allowed list request
	// (or batch) whose params.cursor it opened, removing a client's own
	// copy: the one route that sends the request body to the processor
	// (which swaps the cursor for the upstream's own) matches on it.
	CursorHeader = "x-mcp-cursor"
	// AcceptEncoding is removed from the upstream request on every route
	// with a side stream: the processor reads bodies only uncompressed.
	AcceptEncoding = "accept-encoding"

	// MinEnvoyVersion is the oldest Envoy release that loads the shipped
	// configs and behaves as the response seam needs:
	//   - 1.36.0 adds ext_proc's status_on_error (changelogs/1.36.0.yaml,
	//     new_features; envoyproxy/envoy#41124), which the configs set; an
	//     older Envoy rejects the field as unknown;
	//   - 1.34.0 stops sending local replies (ext_authz denials, router
	//     503/504) to the processor and compares allowed_override_modes on
	//     the effective mode (changelogs/1.34.0.yaml).
	// The images the repository pins (compose.yaml, the chart, kustomize
	// and the gateway manifests) are v1.38.3.
	MinEnvoyVersion = "1.36.0"
)

// ListMethods are the methods whose response carries a list the processor
// filters for the caller ("batch": a JSON-RPC batch, which may hold one);
// Check's metadata carries the caller's claims for them. With a sealed
// cursor (CursorHeader) their route sends the request body to the
// processor (BUFFERED: the cursor is swapped for the upstream's own); no
// other route may.
var ListMethods = []string{mcpmethod.ToolsList, mcpmethod.PromptsList, mcpmethod.ResourcesList, mcpmethod.ResourcesTemplatesList, mcpmethod.TasksList, mcpmethod.Batch}

// StreamMethod is Check's pseudo-method for a bodiless GET: the 2025
// standalone SSE stream and Last-Event-ID replays, which may carry any
// response and are processed STREAMED.
const StreamMethod = mcpmethod.HTTPGet

// pseudoMethods are the values of MethodHeader that are not JSON-RPC
// methods.
var pseudoMethods = []string{mcpmethod.Batch, mcpmethod.HTTPGet, mcpmethod.HTTPDelete, mcpmethod.Response}

// Every route that reaches an MCP server opens a side stream that sends the
// processor the response headers and fails closed, whatever the method
// (issue 26): a server may answer a pending tools/list on the stream of a
// ping, or inside the JSON array answering an initialize, and the SDK
// clients route a response by its id to whatever request is pending, so a
// route that passes answers unread passes unfiltered lists. At the response
// headers the processor picks the body mode (BUFFERED or STREAMED) and holds
// the stream to the transport rule: a stream carries JSON-RPC responses to
// its own request's ids only. tools/call is no exception: when its answer
// arrives the upstream has run the call, and a processor outage fails the
// answer all the same (503 before the response headers went downstream, a
// reset after).

// ExtProc returns h's ext_proc filter config and its index in the filter
// chain, or index -1 if there is none.
func ExtProc(h *hcmv3.HttpConnectionManager) (*extprocv3.ExternalProcessor, int, error) {
	for i, f := range h.GetHttpFilters() {
		if f.GetName() != ExtProcFilter {
			continue
		}
		ep := &extprocv3.ExternalProcessor{}
		if err := f.GetTypedConfig().UnmarshalTo(ep); err != nil {
			return nil, i, fmt.Errorf("%s: %w", ExtProcFilter, err)
		}
		return ep, i, nil
	}
	return nil, -1, nil
}

// ExtProcRoute is the ext_proc configuration in effect on one route: the
// filter's, merged with the ExtProcPerRoute of the route configuration, the
// virtual host and the route, the more specific winning (ext_proc.cc
// FilterConfigPerRoute merge: disabled, processing mode, gRPC service,
// forwarding namespaces, failure_mode_allow), so a route's overrides turn
// on a filter a virtual host's ExtProcPerRoute disabled.
type ExtProcRoute struct {
	Disabled         bool
	Mode             *extprocv3.ProcessingMode
	Cluster          string
	ForwardNS        []string // forwarding_namespaces.untyped
	FailureModeAllow bool
	// FailOpenLevels are the indices of the levels whose per-route config
	// sets failure_mode_allow true, even where a more specific one sets it
	// false again.
	FailOpenLevels []int
}

// ExtProcFor merges ep with the per-route configs of rc, vh and r (nil for
// a level without one), from the least specific to the most. A generic
// FilterConfig is the filter manager's switch, not ext_proc's: the most
// specific level that has one decides whether the filter runs at all
// (RouteEntryImplBase::filterDisabled), and an ExtProcPerRoute cannot turn
// a filter it switched off back on; its config, if any, merges as an
// ExtProcPerRoute. A per-route config that fails to decode is an error.
func ExtProcFor(ep *extprocv3.ExternalProcessor, levels ...map[string]*anypb.Any) (ExtProcRoute, error) {
	out := ExtProcRoute{Mode: ep.GetProcessingMode(), Cluster: ep.GetGrpcService().GetEnvoyGrpc().GetClusterName(),
		ForwardNS: ep.GetMetadataOptions().GetForwardingNamespaces().GetUntyped(), FailureModeAllow: ep.GetFailureModeAllow()}
	switchedOff := false
	for i, m := range levels {
		a, ok := m[ExtProcFilter]
		if !ok {
			continue
		}
		if a.MessageIs(&routev3.FilterConfig{}) {
			fc := &routev3.FilterConfig{}
			if err := a.UnmarshalTo(fc); err != nil {
				return out, err
			}
			switchedOff = fc.GetDisabled()
			if a = fc.GetConfig(); a == nil || switchedOff {
				continue
			}
		}
		pr := &extprocv3.ExtProcPerRoute{}
		if err := a.UnmarshalTo(pr); err != nil {
			return out, fmt.Errorf("%s per-route config: %w", ExtProcFilter, err)
		}
		if pr.GetDisabled() {
			out.Disabled = true
			continue
		}
		o := pr.GetOverrides()
		if o == nil {
			continue
		}
		out.Disabled = false
		if o.GetProcessingMode() != nil {
			out.Mode = o.GetProcessingMode()
		}
		if c := o.GetGrpcService().GetEnvoyGrpc().GetClusterName(); c != "" {
			out.Cluster = c
		}
		if fn := o.GetMetadataOptions().GetForwardingNamespaces(); fn != nil {
			out.ForwardNS = fn.GetUntyped()
		}
		if b := o.GetFailureModeAllow(); b != nil {
			out.FailureModeAllow = b.GetValue()
			if b.GetValue() {
				out.FailOpenLevels = append(out.FailOpenLevels, i)
			}
		}
	}
	out.Disabled = out.Disabled || switchedOff
	return out, nil
}

// checkMode reports a processing mode that breaks the seam's rules:
// BUFFERED_PARTIAL in either direction (the remainder after the first
// buffer passes unprocessed: Filter::handleDataBufferedPartialMode), and a
// request body sent to the processor other than BUFFERED, or at all where
// requestBody is false. BUFFERED is the one request body mode whose whole
// body reaches the processor before the upstream sees a byte (STREAMED and
// FULL_DUPLEX_STREAMED pass chunks on as they are answered); only the list
// routes send one, for the processor to swap a sealed params.cursor for the
// upstream's own (extproc requestBody), and which routes those are is
// checked by checkRouteGroup.
func checkMode(m *extprocv3.ProcessingMode, where string, requestBody bool, fail func(string, ...any)) {
	if m == nil {
		return
	}
	switch rb := m.GetRequestBodyMode(); {
	case rb == extprocv3.ProcessingMode_NONE:
	case rb == extprocv3.ProcessingMode_BUFFERED && requestBody:
	case requestBody:
		fail("%s: request_body_mode %v, want NONE or BUFFERED", where, rb)
	default:
		fail("%s: request_body_mode %v, want NONE", where, rb)
	}
	if m.GetRequestBodyMode() == extprocv3.ProcessingMode_BUFFERED_PARTIAL || m.GetResponseBodyMode() == extprocv3.ProcessingMode_BUFFERED_PARTIAL {
		fail("%s: BUFFERED_PARTIAL (the rest of the body would pass unprocessed)", where)
	}
}

// ProcessorOverride is the mode_override the processor (extproc) sends
// with its answer to the response headers: response body BUFFERED (JSON)
// or STREAMED (SSE), the request body mode the route had (BUFFERED when the
// processor saw a request body, else NONE), headers SEND, trailers SKIP.
// Envoy honours it only if it equals an allowed_override_modes entry on
// every field but request_header_mode (ext_proc.cc Filter::onReceiveMessage,
// effectiveModeOverride); otherwise it ignores it silently and the response
// body is sent as the route's mode says: NONE on every seam route but GET,
// so unfiltered. extproc's tests keep its override equal to this.
func ProcessorOverride(requestBody, responseBody extprocv3.ProcessingMode_BodySendMode) *extprocv3.ProcessingMode {
	return &extprocv3.ProcessingMode{
		RequestHeaderMode: extprocv3.ProcessingMode_SEND, ResponseHeaderMode: extprocv3.ProcessingMode_SEND,
		RequestBodyMode: requestBody, ResponseBodyMode: responseBody,
		RequestTrailerMode: extprocv3.ProcessingMode_SKIP, ResponseTrailerMode: extprocv3.ProcessingMode_SKIP,
	}
}

// overrideAllowed reports whether Envoy would honour mode_override o under
// ep (ext_proc.cc Filter::onReceiveMessage): allow_mode_override on, and
// an allowed_override_modes entry equal to o's effective mode on every
// field but request_header_mode (an empty list allows any).
func overrideAllowed(ep *extprocv3.ExternalProcessor, o *extprocv3.ProcessingMode) bool {
	if !ep.GetAllowModeOverride() {
		return false
	}
	// effectiveModeOverride: DEFAULT header and trailer modes keep the
	// filter's; body modes are always the override's.
	eff := proto.Clone(ep.GetProcessingMode()).(*extprocv3.ProcessingMode)
	if eff == nil {
		eff = &extprocv3.ProcessingMode{}
	}
	if o.GetResponseHeaderMode() != extprocv3.ProcessingMode_DEFAULT {
		eff.ResponseHeaderMode = o.GetResponseHeaderMode()
	}
	if o.GetRequestTrailerMode() != extprocv3.ProcessingMode_DEFAULT {
		eff.RequestTrailerMode = o.GetRequestTrailerMode()
	}
	if o.GetResponseTrailerMode() != extprocv3.ProcessingMode_DEFAULT {
		eff.ResponseTrailerMode = o.GetResponseTrailerMode()
	}
	eff.RequestBodyMode, eff.ResponseBodyMode = o.GetRequestBodyMode(), o.GetResponseBodyMode()
	if len(ep.GetAllowedOverrideModes()) == 0 {
		return true
	}
	for _, a := range ep.GetAllowedOverrideModes() {
		if eff.GetResponseHeaderMode() == a.GetResponseHeaderMode() && eff.GetRequestBodyMode() == a.GetRequestBodyMode() &&
			eff.GetResponseBodyMode() == a.GetResponseBodyMode() && eff.GetRequestTrailerMode() == a.GetRequestTrailerMode() &&
			eff.GetResponseTrailerMode() == a.GetResponseTrailerMode() {
			return true
		}
	}
	return false
}

// checkOverrides reports a side-stream route on which Envoy would ignore an
// override the processor sends (ProcessorOverride, for each request body
// mode it can have seen there and both response body modes).
func checkOverrides(ep *extprocv3.ExternalProcessor, eff ExtProcRoute, where string, fail func(string, ...any)) {
	reqModes := []extprocv3.ProcessingMode_BodySendMode{extprocv3.ProcessingMode_NONE}
	if eff.Mode.GetRequestBodyMode() == extprocv3.ProcessingMode_BUFFERED {
		reqModes = append(reqModes, extprocv3.ProcessingMode_BUFFERED) // NONE too: a request without a body
	}
	for _, rb := range reqModes {
		for _, resp := range []extprocv3.ProcessingMode_BodySendMode{extprocv3.ProcessingMode_BUFFERED, extprocv3.ProcessingMode_STREAMED} {
			if !overrideAllowed(ep, ProcessorOverride(rb, resp)) {
				fail("%s: the processor's mode_override (request_body_mode %v, response_body_mode %v) matches no allowed_override_modes entry: Envoy would ignore it and the response body would pass unprocessed", where, rb, resp)
			}
		}
	}
}

// requestMethods is every value of MethodHeader Check can set: the MCP
// methods a client sends and the pseudo-methods.
func requestMethods() []string {
	var out []string
	for _, m := range mcpmethod.Methods {
		if m.From&mcpmethod.Client != 0 {
			out = append(out, m.Name)
		}
	}
	return append(out, pseudoMethods...)
}

// verb is the HTTP method of a request Check decided as method.
func verb(method string) string {
	switch method {
	case "GET", "DELETE":
		return method
	}
	return "POST"
}

// errCannotEvaluate: a header matcher whose outcome CheckInvariants does not
// compute.
var errCannotEvaluate = errors.New("header matcher not evaluated (use exact, prefix, suffix, contains or safe_regex on x-mcp-method or :method)")

// headersMatch evaluates r's header matchers (all must match) on a request
// that carries only MethodHeader = method and :method = verb(method), as
// Envoy's HeaderUtility::matchHeaders does for the matcher kinds listed in
// errCannotEvaluate.
func headersMatch(r *routev3.Route, method string, sealed bool) (bool, error) {
	for _, h := range r.GetMatch().GetHeaders() {
		var v string
		present := true
		switch strings.ToLower(h.GetName()) {
		case MethodHeader:
			v = method
		case ":method":
			v = verb(method)
		case CursorHeader:
			v, present = "sealed", sealed
		default:
			present = false
		}
		var m bool
		switch s := h.GetHeaderMatchSpecifier().(type) {
		case *routev3.HeaderMatcher_PresentMatch:
			if h.GetInvertMatch() {
				return false, errCannotEvaluate
			}
			if present != s.PresentMatch {
				return false, nil
			}
			continue
		case *routev3.HeaderMatcher_StringMatch:
			if !present && !h.GetTreatMissingHeaderAsEmpty() {
				return false, nil
			}
			var err error
			if m, err = stringMatch(s.StringMatch, v); err != nil {
				return false, err
			}
		case *routev3.HeaderMatcher_ExactMatch:
			if !present && !h.GetTreatMissingHeaderAsEmpty() {
				return false, nil
			}
			m = v == s.ExactMatch
		default:
			return false, errCannotEvaluate
		}
		if m == h.GetInvertMatch() {
			return false, nil
		}
	}
	return true, nil
}

func stringMatch(sm *matcherv3.StringMatcher, v string) (bool, error) {
	fold := func(s string) string {
		if sm.GetIgnoreCase() {
			return strings.ToLower(s)
		}
		return s
	}
	switch p := sm.GetMatchPattern().(type) {
	case *matcherv3.StringMatcher_Exact:
		return fold(v) == fold(p.Exact), nil
	case *matcherv3.StringMatcher_Prefix:
		return strings.HasPrefix(fold(v), fold(p.Prefix)), nil
	case *matcherv3.StringMatcher_Suffix:
		return strings.HasSuffix(fold(v), fold(p.Suffix)), nil
	case *matcherv3.StringMatcher_Contains:
		return strings.Contains(fold(v), fold(p.Contains)), nil
	case *matcherv3.StringMatcher_SafeRegex:
		// Envoy's safe_regex matches the whole value (RE2 FullMatch).
		re, err := regexp.Compile(`^(?:` + p.SafeRegex.GetRegex() + `)$`)
		if err != nil {
			return false, err
		}
		return re.MatchString(v), nil
	}
	return false, errCannotEvaluate
}

// pathKey is r's match without its header matchers: routes with equal keys
// differ only in the headers they match.
func pathKey(r *routev3.Route) string {
	m := proto.Clone(r.GetMatch()).(*routev3.RouteMatch)
	m.Headers = nil
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	return string(b)
}

func removesHeader(name string, lists ...[]string) bool {
	for _, l := range lists {
		for _, h := range l {
			if strings.EqualFold(h, name) {
				return true
			}
		}
	}
	return false
}

// checkExtProc reports how listener h breaks the response seam's
// invariants (see CheckInvariants); ea is at index at in the chain, the
// router at router.
func checkExtProc(b *bootstrapv3.Bootstrap, h HTTPConnectionManager, at, router int, clearRouteCache bool, fail func(string, ...any)) error {
	ep, pi, err := ExtProc(h.HCM)
	if err != nil {
		return err
	}
	l := "listener " + h.Listener
	switch {
	case ep == nil:
		fail("%s: no %s (the response seam)", l, ExtProcFilter)
		return nil
	case pi < at:
		fail("%s: %s before %s (it would see no decision, and merge its per-route config before the re-route)", l, ExtProcFilter, ExtAuthzFilter)
	case router >= 0 && pi > router:
		fail("%s: %s after %s", l, ExtProcFilter, RouterFilter)
	}
	if h.HCM.GetHttpFilters()[pi].GetDisabled() {
		fail("%s: %s disabled in the filter chain (routes could enable it only on the route picked before Check)", l, ExtProcFilter)
	}
	if !clearRouteCache {
		fail("%s: ext_authz clear_route_cache is false: the seam's routes would be picked on the client's headers, not Check's", l)
	}
	if ep.GetFailureModeAllow() {
		fail("%s: %s failure_mode_allow is true", l, ExtProcFilter)
	}
	if ep.GetObservabilityMode() {
		fail("%s: %s observability_mode is true (no mutation: lists would pass unfiltered)", l, ExtProcFilter)
	}
	if ep.GetGrpcService().GetEnvoyGrpc().GetClusterName() == "" {
		fail("%s: %s is not an envoy_grpc service", l, ExtProcFilter)
	}
	checkMode(ep.GetProcessingMode(), l+": "+ExtProcFilter+" processing_mode", false, fail)
	if ep.GetAllowModeOverride() && len(ep.GetAllowedOverrideModes()) == 0 {
		fail("%s: allow_mode_override without allowed_override_modes (the processor could pick any mode, BUFFERED_PARTIAL included)", l)
	}
	for i, m := range ep.GetAllowedOverrideModes() {
		where := fmt.Sprintf("%s: allowed_override_modes[%d]", l, i)
		checkMode(m, where, true, fail)
		// envoyproxy/envoy#40340: with an override to FULL_DUPLEX_STREAMED
		// the first buffered chunk passes unprocessed.
		if m.GetResponseBodyMode() == extprocv3.ProcessingMode_FULL_DUPLEX_STREAMED || m.GetRequestBodyMode() == extprocv3.ProcessingMode_FULL_DUPLEX_STREAMED {
			fail("%s: FULL_DUPLEX_STREAMED by override (its first chunk may pass unprocessed)", where)
		}
	}
	rc := h.HCM.GetRouteConfig()
	methods := requestMethods()
	for _, vh := range rc.GetVirtualHosts() {
		// Routes to an upstream, grouped by their match without headers.
		groups := map[string][]*routev3.Route{}
		var order []string
		for _, r := range vh.GetRoutes() {
			levels := []map[string]*anypb.Any{rc.GetTypedPerFilterConfig(), vh.GetTypedPerFilterConfig(), r.GetTypedPerFilterConfig()}
			where := fmt.Sprintf("%s: route %v", l, r.GetMatch())
			eff, err := ExtProcFor(ep, levels...)
			if err != nil {
				fail("%s: %v", where, err)
				continue
			}
			for _, lv := range eff.FailOpenLevels {
				fail("%s: %s failure_mode_allow is true in the %s's per-route config (no route may fail open)", where, ExtProcFilter, levelNames[lv])
			}
			if !eff.Disabled {
				checkMode(eff.Mode, where, true, fail)
				checkOverrides(ep, eff, where, fail)
				if !slices.Contains(eff.ForwardNS, ExtAuthzNamespace) {
					fail("%s: forwarding_namespaces %v lack %s", where, eff.ForwardNS, ExtAuthzNamespace)
				}
				if c := Cluster(b, eff.Cluster); c == nil || !HTTP2(c) {
					fail("cluster %s: ext_proc gRPC cluster missing or without HTTP/2", eff.Cluster)
				}
			}
			ra := r.GetRoute()
			if ra == nil || ra.GetCluster() == AdminCluster || MetadataRoute(r) {
				if !eff.Disabled && eff.Mode.GetRequestBodyMode() != extprocv3.ProcessingMode_NONE {
					fail("%s sends the request body to the processor, and it is no list route", where)
				}
				if MetadataRoute(r) && !eff.Disabled {
					fail("%s: %s on the protected resource metadata route (no Check runs there)", l, ExtProcFilter)
				}
				continue
			}
			// A route to an MCP server: every answer passes the processor.
			switch {
			case eff.Disabled:
				fail("%s reaches the MCP server without a side stream: its answers reach the client unread", where)
			case !sendsResponseHeaders(eff.Mode):
				fail("%s: response_header_mode %v: the processor never sees the answer's headers, so never picks its body mode", where, eff.Mode.GetResponseHeaderMode())
			case !removesHeader(AcceptEncoding, r.GetRequestHeadersToRemove(), vh.GetRequestHeadersToRemove(), rc.GetRequestHeadersToRemove()):
				fail("%s sends accept-encoding upstream: its response could reach the processor compressed", where)
			}
			k := pathKey(r)
			if groups[k] == nil {
				order = append(order, k)
			}
			groups[k] = append(groups[k], r)
		}
		for _, k := range order {
			checkRouteGroup(ep, rc, vh, groups[k], methods, l, fail)
		}
	}
	return nil
}

// levelNames name the per-route config levels ExtProcFor merges, in order.
var levelNames = []string{"route configuration", "virtual host", "route"}

// sendsResponseHeaders reports whether Envoy sends the response headers to
// the processor in mode m (DEFAULT is SEND for headers; a nil mode is all
// DEFAULT).
func sendsResponseHeaders(m *extprocv3.ProcessingMode) bool {
	h := m.GetResponseHeaderMode()
	return h == extprocv3.ProcessingMode_SEND || h == extprocv3.ProcessingMode_DEFAULT
}

// sendsRequestHeaders is sendsResponseHeaders for the request headers.
func sendsRequestHeaders(m *extprocv3.ProcessingMode) bool {
	h := m.GetRequestHeaderMode()
	return h == extprocv3.ProcessingMode_SEND || h == extprocv3.ProcessingMode_DEFAULT
}

// checkRouteGroup checks routes that share a path match: a route chosen by
// headers checks and forwards as the header-less fallback does, so a
// client's own x-mcp-method (read before Check removes it, when ext_authz
// picks its per-route config) changes nothing; no route sends the
// processor the request headers (Check's metadata carries all it reads,
// the caller's claims included: a round trip for nothing); the route a
// list method with a sealed cursor picks sends it the request body, and
// only routes that such lists alone pick do.
func checkRouteGroup(ep *extprocv3.ExternalProcessor, rc *routev3.RouteConfiguration, vh *routev3.VirtualHost, rs []*routev3.Route, methods []string, l string, fail func(string, ...any)) {
	var fallback *routev3.Route
	for _, r := range rs {
		if len(r.GetMatch().GetHeaders()) == 0 {
			fallback = r
		}
	}
	for _, r := range rs {
		if len(r.GetMatch().GetHeaders()) == 0 {
			continue
		}
		switch {
		case fallback == nil:
			fail("%s: route %v matches on headers and has no header-less route of the same path", l, r.GetMatch())
		case !proto.Equal(r.GetRoute(), fallback.GetRoute()):
			fail("%s: route %v forwards unlike its header-less route %v", l, r.GetMatch(), fallback.GetMatch())
		case !proto.Equal(r.GetTypedPerFilterConfig()[ExtAuthzFilter], fallback.GetTypedPerFilterConfig()[ExtAuthzFilter]):
			fail("%s: route %v: its %s per-route config differs from its header-less route's (a client-sent %s would choose the check)", l, r.GetMatch(), ExtAuthzFilter, MethodHeader)
		}
	}
	for _, r := range rs {
		eff, err := ExtProcFor(ep, rc.GetTypedPerFilterConfig(), vh.GetTypedPerFilterConfig(), r.GetTypedPerFilterConfig())
		if err == nil && !eff.Disabled && sendsRequestHeaders(eff.Mode) {
			fail("%s: route %v sends the request headers to the processor: a round trip before the upstream for nothing (Check's metadata carries what it reads)", l, r.GetMatch())
		}
	}
	// Each request Check admits, as the route match sees it: its method,
	// and for a list method whether Check marked a sealed cursor.
	type pick struct {
		method string
		sealed bool
	}
	var picks []pick
	for _, m := range methods {
		picks = append(picks, pick{m, false})
		if slices.Contains(ListMethods, m) {
			picks = append(picks, pick{m, true})
		}
	}
	chosenBy := map[*routev3.Route][]pick{}
	for _, p := range picks {
		var chosen *routev3.Route
		for _, r := range rs {
			ok, err := headersMatch(r, p.method, p.sealed)
			if err != nil {
				fail("%s: route %v: %v", l, r.GetMatch(), err)
				return
			}
			if ok {
				chosen = r
				break
			}
		}
		if chosen == nil {
			continue // Envoy answers 404 itself: no upstream answer
		}
		chosenBy[chosen] = append(chosenBy[chosen], p)
		if !p.sealed {
			continue
		}
		eff, err := ExtProcFor(ep, rc.GetTypedPerFilterConfig(), vh.GetTypedPerFilterConfig(), chosen.GetTypedPerFilterConfig())
		if err == nil && !eff.Disabled && eff.Mode.GetRequestBodyMode() != extprocv3.ProcessingMode_BUFFERED {
			fail("%s: %s %q with %s picks route %v, which does not send the request body to the processor (its sealed cursor would reach the MCP server unswapped)", l, MethodHeader, p.method, CursorHeader, chosen.GetMatch())
		}
	}
	// The request body goes to the processor only on routes that serve
	// lists with a sealed cursor alone: elsewhere it would cost a buffered
	// round trip for nothing, and the processor could rewrite a body it
	// never needs.
	for _, r := range rs {
		eff, err := ExtProcFor(ep, rc.GetTypedPerFilterConfig(), vh.GetTypedPerFilterConfig(), r.GetTypedPerFilterConfig())
		if err != nil || eff.Disabled || eff.Mode.GetRequestBodyMode() == extprocv3.ProcessingMode_NONE {
			continue
		}
		ps := chosenBy[r]
		var other []string
		for _, p := range ps {
			if !p.sealed {
				other = append(other, p.method)
			}
		}
		switch {
		case len(ps) == 0:
			fail("%s: route %v sends the request body to the processor and serves no list with a sealed cursor", l, r.GetMatch())
		case len(other) > 0:
			fail("%s: route %v sends the request body to the processor and serves %q without a sealed cursor (only the sealed-cursor route may)", l, r.GetMatch(), other)
		}
	}
}
